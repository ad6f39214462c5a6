#!/usr/bin/env python3
"""A second independent trace set (numpy only): written on 2026-11-28 by a helper that saw the issue's list of
shapes and nothing of this repository, as a check no one tuned on.

    .venv/bin/python scripts/second-trace-set.py DIR && elastream bench elasticity --traces DIR --jobs 2

Writes DIR/SHAPE-VARIANT.csv (header `time,rate`, time in s from 0, rate in records/s; 8 shapes × 4 variants) plus
DIR/INDEX.md describing every trace. Several variants (bases of 4,000-6,000 records/s) peak past what the default
bounds carry: there every policy queues. Results: docs/elasticity.md, "CSV traces".
"""
import os
import sys

import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else "traces"
MAX_ROWS = 100_000
H = 3600.0
M = 60.0


# ----------------------------------------------------------------- helpers
def grid(duration_s, dt):
    n = int(round(duration_s / dt))
    assert n < MAX_ROWS, (duration_s, dt, n)
    return np.arange(n, dtype=np.int64) * dt


def noise(rng, n, dt, sigma_iid=0.0, sigma_ar=0.0, tau=60.0):
    """Mean-one multiplicative lognormal noise: iid part + AR(1) part."""
    z = np.zeros(n)
    if sigma_iid > 0:
        z += sigma_iid * rng.standard_normal(n) - sigma_iid ** 2 / 2
    if sigma_ar > 0:
        phi = np.exp(-dt / tau)
        e = rng.standard_normal(n) * np.sqrt(1 - phi ** 2)
        a = np.empty(n)
        a[0] = rng.standard_normal()
        for i in range(1, n):
            a[i] = phi * a[i - 1] + e[i]
        z += sigma_ar * a - sigma_ar ** 2 / 2
    return np.exp(z)


def noise_desc(si, sa, tau):
    if si == 0 and sa == 0:
        return "no noise (smooth)"
    parts = []
    if si:
        parts.append(f"{si*100:.0f}% iid lognormal")
    if sa:
        parts.append(f"{sa*100:.0f}% AR(1) tau={tau:.0f}s")
    return " + ".join(parts) + " multiplicative noise"


def gauss(x, mu, sd):
    return np.exp(-0.5 * ((x - mu) / sd) ** 2)


def fmt_dur(s):
    return f"{s/H:g} h" if s >= H else f"{s/M:g} min"


# ----------------------------------------------------------------- shapes
def flash_crowd(v, rng):
    p = {
        "a": dict(base=1200, F=4.0, dur=6*H, dt=1, start=60*M, up=60, hold=10*M, down=5*M, n=(0.03, 0, 60)),
        "b": dict(base=300, F=6.0, dur=12*H, dt=5, start=30*M, up=120, hold=3*M, down=2*M, n=(0, 0, 60)),
        "c": dict(base=5000, F=3.0, dur=24*H, dt=60, start=120*M, up=120, hold=40*M, down=10*M, n=(0.08, 0.08, 600)),
        "d": dict(base=2500, F=5.0, dur=3*H, dt=10, start=20*M, up=90, hold=20*M, down=15*M, n=(0.05, 0, 60)),
    }[v]
    t = grid(p["dur"], p["dt"]).astype(float)
    s0, s1 = p["start"], p["start"] + p["up"]
    s2 = s1 + p["hold"]
    s3 = s2 + p["down"]
    e = np.zeros_like(t)
    m = (t >= s0) & (t < s1); e[m] = (t[m] - s0) / p["up"]
    m = (t >= s1) & (t < s2); e[m] = 1.0 - 0.15 * (t[m] - s1) / p["hold"]  # slight sag while crowd lasts
    m = (t >= s2) & (t < s3); e[m] = 0.85 * (1 - (t[m] - s2) / p["down"])
    r = p["base"] * (1 + (p["F"] - 1) * e) * noise(rng, len(t), p["dt"], *p["n"])
    d = (f"base {p['base']}/s, one flash crowd x{p['F']:g} at {fmt_dur(s0)} (ramp {p['up']}s, hold {fmt_dur(p['hold'])} "
         f"sagging to x{1+0.85*(p['F']-1):.2f}, ramp down {fmt_dur(p['down'])}); {fmt_dur(p['dur'])}, dt {p['dt']}s; {noise_desc(*p['n'])}")
    return t, r, d


def sawtooth(v, rng):
    p = {
        "a": dict(base=800, F=2.0, L=30*M, gap=0, jit=0.0, dur=6*H, dt=1, n=(0.02, 0, 60)),
        "b": dict(base=4000, F=3.0, L=60*M, gap=0, jit=0.0, dur=12*H, dt=10, n=(0, 0, 60)),
        "c": dict(base=350, F=1.8, L=15*M, gap=0, jit=0.0, dur=3*H, dt=5, n=(0.10, 0.05, 30)),
        "d": dict(base=6000, F=2.5, L=45*M, gap=10*M, jit=0.2, dur=24*H, dt=60, n=(0.04, 0, 60)),
    }[v]
    t = grid(p["dur"], p["dt"]).astype(float)
    e = np.zeros_like(t)
    c = 0.0
    while c < p["dur"]:
        L = p["L"] * (1 + p["jit"] * rng.uniform(-1, 1))
        m = (t >= c) & (t < c + L)
        e[m] = (t[m] - c) / L
        c += L + p["gap"]
    r = p["base"] * (1 + (p["F"] - 1) * e) * noise(rng, len(t), p["dt"], *p["n"])
    jit = f" +-{p['jit']*100:.0f}% jitter" if p["jit"] else ""
    gap = f", {fmt_dur(p['gap'])} at base between ramps" if p["gap"] else ""
    d = (f"base {p['base']}/s, linear ramps to x{p['F']:g} over {fmt_dur(p['L'])}{jit} then instant drop{gap}; "
         f"{fmt_dur(p['dur'])}, dt {p['dt']}s; {noise_desc(*p['n'])}")
    return t, r, d


def week(v, rng):
    p = {
        "a": dict(base=1000, F=2.5, D=2*H, peaks=2, first=0, dt=5, n=(0.03, 0, 60)),
        "b": dict(base=300, F=3.0, D=1*H, peaks=1, first=0, dt=1, n=(0, 0, 60)),
        "c": dict(base=5000, F=2.0, D=3*H, peaks=2, first=0, dt=60, n=(0.05, 0.08, 900)),
        "d": dict(base=2000, F=2.8, D=1.5*H, peaks=1, first=5, dt=10, n=(0.05, 0, 60)),
    }[v]
    t = grid(7 * p["D"], p["dt"]).astype(float)
    day = np.floor(t / p["D"]).astype(int)
    x = (t % p["D"]) / p["D"]
    if p["peaks"] == 2:
        wk = np.maximum.reduce([gauss(x, 0.40, 0.06), 0.9 * gauss(x, 0.78, 0.07), 0.6 * gauss(x, 0.60, 0.12)])
    else:
        wk = gauss(x, 0.55, 0.14)
    we = 0.35 * gauss(x, 0.60, 0.18)
    dow = (day + p["first"]) % 7  # 0..4 weekdays, 5..6 weekend
    amp = 1 + 0.08 * rng.uniform(-1, 1, 7)
    s = np.where(dow < 5, wk, we) * amp[day]
    r = p["base"] * (1 + (p["F"] - 1) * s) * noise(rng, len(t), p["dt"], *p["n"])
    order = "Mon-Sun" if p["first"] == 0 else "Sat,Sun,Mon-Fri"
    pk = "two peaks (x0.40,x0.78 of day) + midday shoulder" if p["peaks"] == 2 else "one broad midday peak"
    d = (f"night base {p['base']}/s, weekdays {pk} up to x{p['F']:g}, weekend peak ~x{1+0.35*(p['F']-1):.2f}; "
         f"day={fmt_dur(p['D'])}, 7 days {order} ({fmt_dur(7*p['D'])}), dt {p['dt']}s; {noise_desc(*p['n'])}, +-8% per-day amplitude")
    return t, r, d


def web_day(v, rng):
    p = {
        "a": dict(base=600, Fm=2.5, Fe=3.0, dur=24*H, dt=1, lam=6, amp="pareto", n=(0.15, 0, 60)),
        "b": dict(base=3000, Fm=2.0, Fe=2.4, dur=8*H, dt=1, lam=10, amp="pareto", n=(0.08, 0.05, 120)),
        "c": dict(base=1500, Fm=2.2, Fe=2.8, dur=12*H, dt=5, lam=4, amp="pareto", n=(0.20, 0.10, 300)),
        "d": dict(base=5500, Fm=1.8, Fe=2.2, dur=16*H, dt=10, lam=8, amp="lognormal", n=(0.12, 0, 60)),
    }[v]
    t = grid(p["dur"], p["dt"]).astype(float)
    h = 24.0 * t / p["dur"]  # compressed hour of day, starting at midnight
    prof = (1 + (p["Fm"] - 1) * gauss(h, 10.0, 2.0) + 0.5 * (p["Fm"] - 1) * gauss(h, 15.0, 2.5)
            + (p["Fe"] - 1) * gauss(h, 20.5, 1.8) + (p["Fe"] - 1) * 0.3 * gauss(h, -3.5, 1.8))
    r = p["base"] * prof * noise(rng, len(t), p["dt"], *p["n"])
    nb = rng.poisson(p["lam"] * p["dur"] / H)
    for _ in range(nb):
        s = rng.uniform(0, p["dur"])
        dd = float(np.clip(rng.lognormal(np.log(60), 0.8), 15, 600))
        if p["amp"] == "pareto":
            A = min(0.3 * (rng.pareto(1.7) + 1), 6.0)
        else:
            A = min(rng.lognormal(np.log(0.5), 0.7), 6.0)
        i0 = int(np.searchsorted(t, s))
        i1 = int(np.searchsorted(t, s + 3 * dd))
        if i0 >= len(t):
            continue
        tt = t[i0:i1] - s
        rise = 0.15 * dd
        env = np.minimum(1.0, (tt + p["dt"]) / rise) * np.exp(-np.maximum(tt - rise, 0) / (0.5 * dd))
        r[i0:i1] += A * p["base"] * prof[i0] * env
    d = (f"night base {p['base']}/s, morning peak ~x{p['Fm']:g}, evening peak ~x{p['Fe']:g} (day compressed to {fmt_dur(p['dur'])}), "
         f"dt {p['dt']}s; {noise_desc(*p['n'])}; ~{p['lam']}/h {p['amp']} bursts (+x0.3..6 of local, 15-600 s, {nb} total)")
    return t, r, d


def slow_growth(v, rng):
    p = {
        "a": dict(base=1000, G=2.0, kind="linear", dur=6*H, dt=1, n=(0.02, 0, 60)),
        "b": dict(base=300, G=4.0, kind="exponential", dur=12*H, dt=10, n=(0.03, 0.02, 600)),
        "c": dict(base=4000, G=1.5, kind="linear", dur=24*H, dt=60, n=(0.01, 0, 60)),
        "d": dict(base=2000, G=3.0, kind="exponential", dur=3*H, dt=5, n=(0.04, 0.02, 300)),
    }[v]
    t = grid(p["dur"], p["dt"]).astype(float)
    u = t / p["dur"]
    g = 1 + (p["G"] - 1) * u if p["kind"] == "linear" else p["G"] ** u
    r = p["base"] * g * noise(rng, len(t), p["dt"], *p["n"])
    d = (f"base {p['base']}/s growing {p['kind']}ly to x{p['G']:g} over {fmt_dur(p['dur'])}, dt {p['dt']}s; {noise_desc(*p['n'])}")
    return t, r, d


def on_off(v, rng):
    p = {
        "a": dict(base=1000, F=3.0, on=5*M, off=10*M, ramp=0, dur=6*H, dt=1, n=(0.03, 0, 60)),
        "b": dict(base=400, F=5.0, on=20*M, off=30*M, ramp=0, dur=24*H, dt=60, n=(0.08, 0, 60)),
        "c": dict(base=2500, F=2.0, on=2*M, off=3*M, ramp=0, dur=3*H, dt=5, n=(0, 0, 60)),
        "d": dict(base=6000, F=4.0, on=10*M, off=25*M, ramp=30, dur=12*H, dt=10, n=(0.08, 0.06, 120)),
    }[v]
    t = grid(p["dur"], p["dt"]).astype(float)
    sq = np.zeros_like(t)
    c, state, n_on = 0.0, 0, 0
    while c < p["dur"]:
        L = max(60.0, rng.exponential(p["on"] if state else p["off"]))
        if state:
            sq[(t >= c) & (t < c + L)] = 1.0
            n_on += 1
        c += L
        state ^= 1
    k = int(round(p["ramp"] / p["dt"]))
    if k > 1:
        sq = np.convolve(np.pad(sq, (k // 2, k - 1 - k // 2), mode="edge"), np.ones(k) / k, mode="valid")
    r = p["base"] * (1 + (p["F"] - 1) * sq) * noise(rng, len(t), p["dt"], *p["n"])
    edge = f"{p['ramp']}s ramps" if k > 1 else "sharp edges"
    d = (f"low {p['base']}/s <-> high x{p['F']:g}, exp on mean {fmt_dur(p['on'])}, off mean {fmt_dur(p['off'])} (min 60 s, {n_on} on-periods), "
         f"{edge}; {fmt_dur(p['dur'])}, dt {p['dt']}s; {noise_desc(*p['n'])}")
    return t, r, d


def rare_spikes(v, rng):
    p = {
        "a": dict(base=1500, k=5, F=(2, 5), D=(20, 180), dur=6*H, dt=1, n=(0.02, 0, 60)),
        "b": dict(base=300, k=4, F=(3, 5), D=(30, 180), dur=12*H, dt=5, n=(0.05, 0, 60)),
        "c": dict(base=5000, k=8, F=(2, 3), D=(30, 180), dur=24*H, dt=10, n=(0.01, 0, 60)),
        "d": dict(base=3000, k=3, F=(4, 5), D=(20, 120), dur=3*H, dt=1, n=(0.10, 0.05, 60)),
    }[v]
    t = grid(p["dur"], p["dt"]).astype(float)
    mult = np.ones_like(t)
    starts = []
    while len(starts) < p["k"]:
        s = rng.uniform(10 * M, p["dur"] - 10 * M)
        if all(abs(s - o) > 20 * M for o in starts):
            starts.append(s)
    spk = []
    for s in sorted(starts):
        f = rng.uniform(*p["F"])
        dd = rng.uniform(*p["D"])
        m = (t >= s) & (t < s + dd)
        mult[m] = f
        spk.append(f"x{f:.1f}/{dd:.0f}s@{s/H:.2f}h")
    r = p["base"] * mult * noise(rng, len(t), p["dt"], *p["n"])
    d = (f"steady {p['base']}/s, {p['k']} rectangular spikes x{p['F'][0]}-{p['F'][1]}, {p['D'][0]}-{p['D'][1]} s "
         f"({', '.join(spk)}); {fmt_dur(p['dur'])}, dt {p['dt']}s; {noise_desc(*p['n'])}")
    return t, r, d


def step_down_up(v, rng):
    p = {
        "a": dict(base=2000, dips=[(1.5*H, 45*M, 0.5)], ramp=0, dur=4*H, dt=1, n=(0.02, 0, 60)),
        "b": dict(base=600, dips=[(1*H, 20*M, 0.3), (5*H, 60*M, 0.6)], ramp=0, dur=8*H, dt=10, n=(0.05, 0, 60)),
        "c": dict(base=5000, dips=[(4*H, 120*M, 0.2)], ramp=0, dur=12*H, dt=60, n=(0, 0, 60)),
        "d": dict(base=3500, dips=[(3*H, 30*M, 0.7), (14*H, 90*M, 0.4)], ramp=60, dur=24*H, dt=5, n=(0.08, 0.05, 300)),
    }[v]
    t = grid(p["dur"], p["dt"]).astype(float)
    lvl = np.ones_like(t)
    for s, L, f in p["dips"]:
        lvl[(t >= s) & (t < s + L)] = f
    k = int(round(p["ramp"] / p["dt"]))
    if k > 1:
        lvl = np.convolve(np.pad(lvl, (k // 2, k - 1 - k // 2), mode="edge"), np.ones(k) / k, mode="valid")
    r = p["base"] * lvl * noise(rng, len(t), p["dt"], *p["n"])
    dips = ", ".join(f"{f*100:.0f}% for {fmt_dur(L)} @{fmt_dur(s)}" for s, L, f in p["dips"])
    edge = f"{p['ramp']}s ramps" if k > 1 else "sharp steps"
    d = (f"base {p['base']}/s, dip(s) to {dips}, {edge}; {fmt_dur(p['dur'])}, dt {p['dt']}s; {noise_desc(*p['n'])}")
    return t, r, d


SHAPES = [
    ("flash-crowd", flash_crowd, 1100),
    ("sawtooth", sawtooth, 2200),
    ("week", week, 3300),
    ("web-day", web_day, 4400),
    ("slow-growth", slow_growth, 5500),
    ("on-off", on_off, 6600),
    ("rare-spikes", rare_spikes, 7700),
    ("step-down-up", step_down_up, 8800),
]


def main():
    os.makedirs(OUT, exist_ok=True)
    lines = ["# Held-out synthetic load traces", "",
             "Generated by scripts/second-trace-set.py (numpy only, fixed seeds). CSV columns: `time` (s from 0), `rate` (records/s).", ""]
    for name, fn, seed0 in SHAPES:
        lines.append(f"## {name}")
        for j, v in enumerate("abcd"):
            rng = np.random.default_rng(seed0 + j)
            t, r, desc = fn(v, rng)
            r = np.clip(r, 0.0, None)
            assert len(t) < MAX_ROWS and np.all(np.diff(t) > 0) and np.all(np.isfinite(r))
            fname = f"{name}-{v}.csv"
            np.savetxt(os.path.join(OUT, fname), np.column_stack([t, r]), fmt=["%d", "%.3f"],
                       delimiter=",", header="time,rate", comments="")
            lines.append(f"- `{fname}` ({len(t)} rows, seed {seed0 + j}): {desc}")
        lines.append("")
    with open(os.path.join(OUT, "INDEX.md"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
