"""`elastream bench rescale`, the pure parts (elastream.bench_rescale.timeline) and the command's checks, with fakes
only: CRI log lines and their timestamps, pod watch events → phases, statistics, tables; the cluster side's
errors for a missing StreamApp, driver pod or Secret."""
import base64
import time
import types

import pytest

from elastream.bench_rescale import cluster as cl
from elastream.bench_rescale import timeline as tl
from elastream.cli import build_parser, main
from elastream.errors import UserError

T0 = 1_795_394_200.0  # 2026-11-23T00:36:40Z

EXECUTOR_LOG = """\
2026-11-23T00:36:45.756784305Z WARNING: Using incubator modules: jdk.incubator.vector
2026-11-23T00:36:46.566361904Z 26/11/23 00:36:46 INFO TransportClientFactory: Successfully created connection
2026-11-23T00:36:47.333385131Z 26/11/23 00:36:47 INFO CoarseGrainedExecutorBackend: Successfully registered with driver
2026-11-23T00:36:47.400000000Z 26/11/23 00:36:47 INFO Executor: Starting executor ID 2 on host 10.88.1.33

2026-11-23T00:36:50.207439230Z 26/11/23 00:36:50 INFO CoarseGrainedExecutorBackend: Got assigned task 7
2026-11-23T00:36:50.939757292Z 26/11/23 00:36:50 INFO CoarseGrainedExecutorBackend: Got assigned task 8
"""

DRIVER_LOG = """\
2026-11-23T00:36:30.100000000Z 2026-11-23 00:36:30,100 INFO spark_apps.executors: executors: target 2 (live 1)
2026-11-23T00:36:44.820826616Z 2026-11-23 00:36:44,820 INFO spark_apps.control: control 10.88.2.11 - "GET /executors"
2026-11-23T00:36:44.900000000Z 2026-11-23 00:36:44,900 INFO spark_apps.executors: executors: target 2 (live 1)
2026-11-23T00:36:45.000000000Z 2026-11-23 00:36:45,000 INFO spark_apps.executors: executors: target 12 (live 1)
"""


def test_rfc3339_nano_timestamps_parse_to_epoch_seconds():
    assert tl.parse_rfc3339("2026-11-23T00:36:40Z") == T0
    assert tl.parse_rfc3339("2026-11-23T00:36:47.333385131Z") == pytest.approx(T0 + 7.333385131, abs=1e-6)
    assert tl.parse_rfc3339("2026-11-23T01:36:40.5+01:00") == pytest.approx(T0 + 0.5)
    assert tl.parse_rfc3339("2026-11-22T23:36:40-01:00") == T0
    for bad in ("26/11/23 00:36:47", "2026-11-23 00:36:40", "", "2026-11-23T00:36:40"):
        with pytest.raises(ValueError):
            tl.parse_rfc3339(bad)


def test_log_lines_split_into_timestamp_and_text():
    assert tl.split_log_line("2026-11-23T00:36:40.25Z hello world") == (pytest.approx(T0 + 0.25), "hello world")
    assert tl.split_log_line("\tat org.apache.spark.Foo(Foo.scala:1)") is None
    assert tl.split_log_line("") is None


def test_executor_marks_are_the_first_registration_and_the_first_task():
    marks = tl.executor_marks(EXECUTOR_LOG)
    assert marks["registered"] == pytest.approx(T0 + 7.333385131, abs=1e-6)
    assert marks["first_task"] == pytest.approx(T0 + 10.20743923, abs=1e-6)
    assert tl.executor_marks(EXECUTOR_LOG.split("2026-11-23T00:36:50.2")[0]) == {
        "registered": pytest.approx(T0 + 7.333385131, abs=1e-6), "first_task": None}
    assert tl.executor_marks("") == {"registered": None, "first_task": None}


def test_realized_is_the_drivers_first_target_line_for_this_count_after_the_decision():
    assert tl.realized_mark(DRIVER_LOG, 2, T0 - 1) == pytest.approx(T0 + 4.9)  # not the earlier rescale to 2
    assert tl.realized_mark(DRIVER_LOG, 12, T0 - 1) == pytest.approx(T0 + 5.0)  # "target 1" is not "target 12"
    assert tl.realized_mark(DRIVER_LOG, 1, T0 - 1) is None


def pod(name, *, node=None, phase="Pending", state=None, deleting=False, container="spark-kubernetes-executor"):
    status = {"phase": phase}
    if state:
        status["containerStatuses"] = [{"name": container, "state": {state: {}}}]
    meta = {"name": name, **({"deletionTimestamp": "2026-11-23T00:37:00Z"} if deleting else {})}
    return {"metadata": meta, "spec": {"containers": [{"name": container}], **({"nodeName": node} if node else {})},
            "status": status}


def test_a_watch_events_raw_object_becomes_a_pod_event():
    e = tl.event_from_pod("MODIFIED", pod("x-exec-2", node="n1", phase="Running", state="running"), T0 + 1, 101.0)
    assert (e.kind, e.pod, e.node, e.phase, e.running, e.terminated, e.deleting, e.container) == \
        ("MODIFIED", "x-exec-2", "n1", "Running", True, False, False, "spark-kubernetes-executor")
    gone = tl.event_from_pod("MODIFIED", pod("x-exec-1", phase="Succeeded", state="terminated", deleting=True), 0, 0)
    assert gone.terminated and gone.deleting and not gone.running and gone.node is None
    assert tl.event_from_pod("ADDED", {"metadata": {"name": "bare"}}, 0, 0).container is None


MONO0 = 1000.0  # the bench's monotonic clock at t0


def ev(kind, name, after, **kw):
    return tl.event_from_pod(kind, pod(name, **kw), T0 + after, MONO0 + after)


SCALE_OUT_EVENTS = [
    ev("LISTED", "x-exec-1", -30, node="n1", phase="Running", state="running"),
    ev("ADDED", "x-exec-2", 5.2),
    ev("MODIFIED", "x-exec-2", 5.3, node="n2"),
    ev("MODIFIED", "x-exec-2", 5.4, node="n2", state="waiting"),
    ev("MODIFIED", "x-exec-2", 6.1, node="n2", phase="Running", state="running"),
]


def test_scale_out_phases_from_watch_events_and_log_marks():
    existing = tl.pods_at({"x-exec-1"}, SCALE_OUT_EVENTS, MONO0)
    assert existing == {"x-exec-1"}
    assert tl.new_pods(SCALE_OUT_EVENTS, existing, MONO0) == ["x-exec-2"]
    seconds = tl.scale_out_timeline(SCALE_OUT_EVENTS, "x-exec-2", T0, MONO0, tl.executor_marks(EXECUTOR_LOG),
                                    realized=T0 + 4.9)
    assert seconds == {"realized": 4.9, "created": 5.2, "scheduled": 5.3, "started": 6.1,
                       "registered": 7.333, "first_task": 10.207}


def test_a_phase_not_seen_is_none_and_events_before_the_decision_do_not_count():
    events = [ev("ADDED", "x-exec-2", -2.0), ev("MODIFIED", "x-exec-2", 1.0)]  # already there before t0
    assert tl.new_pods(events, tl.pods_at(set(), events, MONO0), MONO0) == []
    seconds = tl.scale_out_timeline(events, "x-exec-2", T0, MONO0, {}, None)
    assert seconds["created"] == 1.0 and seconds["scheduled"] is None and seconds["realized"] is None
    assert seconds["first_task"] is None


def test_pods_at_follows_adds_and_deletes_before_the_instant():
    events = [ev("ADDED", "b", -5), ev("DELETED", "a", -4), ev("ADDED", "c", 1)]
    assert tl.pods_at({"a"}, events, MONO0) == {"b"}


def test_scale_in_phases():
    events = [
        ev("LISTED", "x-exec-1", -30, node="n1", phase="Running", state="running"),
        ev("LISTED", "x-exec-2", -30, node="n2", phase="Running", state="running"),
        ev("MODIFIED", "x-exec-2", 9.5, node="n2", phase="Running", state="terminated"),
        ev("MODIFIED", "x-exec-2", 9.7, node="n2", phase="Succeeded", state="terminated", deleting=True),
        ev("DELETED", "x-exec-2", 9.9, node="n2", phase="Succeeded", state="terminated", deleting=True),
    ]
    existing = tl.pods_at({"x-exec-1", "x-exec-2"}, events, MONO0)
    assert tl.deleted_pods(events, existing, MONO0) == ["x-exec-2"]
    assert tl.scale_in_timeline(events, "x-exec-2", T0, MONO0, realized=T0 + 3.0, counted_mono=MONO0 + 9.3) == \
        {"realized": 3.0, "counted": 9.3, "exiting": 9.5, "deleted": 9.9}
    assert tl.scale_in_timeline(events, None, T0, MONO0, None, None) == \
        {"realized": None, "counted": None, "exiting": None, "deleted": None}


METRICS = """\
# HELP elastream_latency_p99_seconds end-to-end latency, event time to sink, 99th pct
# TYPE elastream_latency_p99_seconds gauge
elastream_latency_p99_seconds{app="wordcount",query="wordcount"} 3.972978
elastream_latency_p99_seconds{app="wordcount",query="other"} 4.5
elastream_latency_p99_seconds{app="other",query="x"} 99.0
elastream_latency_p99_seconds_extra{app="wordcount"} 77.0
elastream_latency_p50_seconds{app="wordcount",query="wordcount"} 2.5
"""


def test_p99_is_read_from_the_metrics_text_for_the_app():
    assert tl.parse_p99(METRICS, "wordcount") == 4.5
    assert tl.parse_rate(METRICS, "wordcount") is None
    assert tl.parse_rate('elastream_input_rate{app="wordcount",query="wordcount"} 6012.5\n', "wordcount") == 6012.5
    assert tl.parse_p99(METRICS, "nothere") is None
    assert tl.parse_p99('elastream_latency_p99_seconds{app="wordcount"} NaN\n', "wordcount") is None
    assert tl.parse_p99("", "wordcount") is None


def test_the_offered_rate_at_the_decision_is_the_last_fresh_sample_before_it():
    rates = [(T0 - 9, 6000.0), (T0 - 2, 400.0), (T0 - 1, None), (T0 + 1, 6000.0)]
    assert tl.last_before(rates, T0) == 400.0
    assert tl.last_before(rates[:1], T0) is None  # older than 5 s
    assert tl.last_before([], T0) is None


def test_p99_around_the_decision_is_the_max_before_and_after():
    samples = [(T0 - 40, 50.0), (T0 - 30, 2.0), (T0 - 1, 3.0), (T0, 4.0), (T0 + 10, None), (T0 + 60, 6.0),
               (T0 + 61, 70.0)]
    assert tl.p99_around(samples, T0, 30, 60) == (3.0, 6.0)
    assert tl.p99_around([], T0, 30, 60) == (None, None)


HISTORY = [
    {"time": "2026-11-23T00:36:20Z", "action": "scaleUp", "realized": True, "algorithm": "elastream",
     "reason": "earlier"},
    {"time": "2026-11-23T00:36:41Z", "action": "scaleUp", "realized": True, "algorithm": "manual",
     "reason": "manual override: spec.replicas set to 2 (kubectl scale), 1 running"},
    {"time": "2026-11-23T00:36:50Z", "action": "hold", "realized": False, "algorithm": "elastream"},
    {"time": "2026-11-23T00:36:55Z", "action": "scaleDown", "realized": False, "algorithm": "elastream"},
]
DONE = {"realized": 4.9, "created": 5.2, "first_task": 10.2}


def test_only_the_benchs_own_rescale_leaves_a_run_clean():
    assert tl.foreign_rescales(HISTORY, T0 + 0.4) == []
    assert tl.judge(HISTORY, T0 + 0.4, DONE, 2, 2) == (None, [])


def test_a_rescale_by_the_autoscaler_before_the_last_phase_spoils_the_run():
    during = HISTORY + [{"time": "2026-11-23T00:36:48Z", "action": "scaleDown", "realized": True,
                         "algorithm": "elastream", "reason": "load fell"}]
    spoiled, notes = tl.judge(during, T0, DONE, 1, 2)
    assert spoiled == ("the autoscaler rescaled during the measurement (scaleDown at 2026-11-23T00:36:48Z: "
                       "load fell)") and notes == []


def test_a_rescale_by_the_autoscaler_after_the_last_phase_is_a_note_about_the_p99():
    after = HISTORY + [{"time": "2026-11-23T00:37:20Z", "action": "scaleDown", "realized": True,
                        "algorithm": "elastream", "reason": "load fell"}]
    spoiled, notes = tl.judge(after, T0, DONE, 1, 2)
    assert spoiled is None and len(notes) == 1
    assert notes[0].startswith("the autoscaler rescaled 40 s after the decision, after this run's last phase")


def test_spec_replicas_changed_by_someone_unknown_spoils_the_run():
    assert tl.judge([], T0, DONE, 1, 2)[0] == "spec.replicas is 1, not 2: someone else rescaled during the " \
                                              "measurement"
    assert tl.judge([], T0, {"first_task": None}, 2, 2) == (None, [])


def test_percentiles_interpolate_between_ranks():
    assert tl.percentile([3.0], 0.9) == 3.0
    assert tl.percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert tl.percentile([4.0, 1.0, 3.0, 2.0, 5.0], 0.9) == pytest.approx(4.6)
    with pytest.raises(ValueError):
        tl.percentile([], 0.5)


def run(direction, repeat, seconds, **kw):
    frm, to = (1, 2) if direction == "out" else (2, 1)
    return tl.Run(direction, repeat, frm, to, T0 + 100 * repeat, seconds, pod=f"x-exec-{repeat + 1}", **kw)


OUTS = [
    run("out", 1, {"realized": 4.0, "created": 4.2, "scheduled": 4.3, "started": 6.0, "registered": 8.0,
                   "first_task": 11.0}, p99_before=3.0, p99_after=4.25, rate=400.2),
    run("out", 2, {"realized": 9.0, "created": 9.1, "scheduled": 9.2, "started": 11.0, "registered": 13.0,
                   "first_task": 21.5}),
    run("out", 3, {"realized": 1.0, "created": 1.1, "scheduled": 1.2, "started": 3.0, "registered": 5.0,
                   "first_task": None}, notes=["executor pod x ended before its first task (Failed)"]),
    run("out", 4, {"realized": 0.5, "created": 0.6, "scheduled": 0.7, "started": 2.0, "registered": 3.0,
                   "first_task": 4.0}, disturbed="the autoscaler rescaled during the measurement"),
]


def test_summary_leaves_out_disturbed_runs_and_unseen_phases():
    st = tl.summarize(OUTS, ["realized", "first_task"])
    assert st["realized"]["runs"] == [4.0, 9.0, 1.0] and st["realized"]["median"] == 4.0
    assert st["realized"]["p90"] == pytest.approx(8.0) and st["realized"]["max"] == 9.0
    assert st["first_task"]["runs"] == [11.0, 21.5, None] and st["first_task"]["n"] == 2
    assert st["first_task"]["median"] == pytest.approx(16.25) and st["first_task"]["max"] == 21.5
    assert tl.summarize([], ["realized"])["realized"] == {"median": None, "p90": None, "max": None, "runs": [],
                                                          "n": 0}


def test_tables_and_goal_line():
    table = tl.phase_table(OUTS, tl.SCALE_OUT)
    lines = table.splitlines()
    assert len(lines) == 2 + len(tl.SCALE_OUT)
    assert "| executor got its first task (log) | 16.2 | 20.5 | 21.5 | 11.0, 21.5, – |" in lines
    assert lines[2].startswith("| operator realized it") and "| 4.0 | 8.0 | 9.0 | 4.0, 9.0, 1.0 |" in lines[2]
    p99 = tl.p99_table(OUTS, 30, 60)
    assert "| 1 | out 1 → 2 | x-exec-2 | 400 | 3.00 | 4.25 |  |" in p99
    assert "left out: the autoscaler rescaled" in p99 and "ended before its first task" in p99
    assert tl.goal_line(OUTS).startswith("Goal (a new executor processes its first task within 20 s of the "
                                         "decision): **not met** — 1 of 3 scale-outs within 20 s")
    assert "**met**" in tl.goal_line(OUTS[:1])
    assert "no scale-out measured" in tl.goal_line([])


def test_markdown_section_names_the_command_and_both_tables():
    ins = [run("in", 1, {"realized": 2.0, "exiting": 8.0, "deleted": 9.0, "counted": 8.5})]
    md = tl.markdown(OUTS[:2] + ins, {"command": "elastream bench rescale --app wordcount --repeats 2",
                                      "date": "2026-11-23 01:00 UTC", "elapsed_s": 400, "namespace": "default",
                                      "app": "wordcount", "evaluation_interval": "10s", "count_source": "the driver",
                                      "metrics_source": "the driver's /metrics", "before": 30, "after": 60})
    assert md.startswith("## Rescaling executor pods on Kubernetes\n")
    assert "`elastream bench rescale --app wordcount --repeats 2`" in md and "(`evaluationInterval` 10s)" in md
    assert "### Scale-out (2 runs)" in md and "### Scale-in (1 runs)" in md
    assert "| driver reports the new count | 8.5 | 8.5 | 8.5 | 8.5 |" in md


# --- the command's checks, with fake clients ---------------------------------------------------------------

class ApiException(Exception):
    def __init__(self, status, reason="", body=None):
        super().__init__(reason)
        self.status, self.reason, self.body = status, reason, body


@pytest.fixture
def fake_k8s(monkeypatch):
    """A stand-in for the kubernetes package (only ApiException is used by the checks under test)."""
    import urllib3  # noqa: F401 - api_errors imports it

    k8s = types.SimpleNamespace(client=types.SimpleNamespace(rest=types.SimpleNamespace(ApiException=ApiException)))
    monkeypatch.setattr(cl, "_kubernetes", lambda: k8s)
    return k8s


def missing(*_, **__):
    raise ApiException(404, "Not Found", '{"message": "not found"}')


def fake_cluster(**overrides):
    custom = types.SimpleNamespace(get_namespaced_custom_object=missing,
                                   list_namespaced_custom_object=lambda *a, **k: {"items": []})
    core = types.SimpleNamespace(read_namespaced_pod=missing, read_namespaced_secret=missing,
                                 api_client=types.SimpleNamespace(sanitize_for_serialization=lambda o: o))
    for k, v in overrides.items():
        setattr(custom if "custom" in k else core, k, v)
    return cl.Cluster(core, custom)


def test_a_missing_streamapp_driver_or_secret_is_a_clear_error(fake_k8s):
    c = fake_cluster()
    with pytest.raises(UserError, match=r"StreamApp default/wordcount not found \(kubectl get streamapps -A\)"):
        cl.read_app(c, "default", "wordcount")
    with pytest.raises(UserError, match="--app is needed: StreamApps in namespace default: none"):
        cl.read_app(c, "default", None)
    with pytest.raises(UserError, match="driver pod default/wordcount-driver not found: is the operator running"):
        cl.driver_pod(c, "default", "wordcount")
    with pytest.raises(UserError, match=r"Secret default/wordcount-control \(the driver's control token"):
        cl.control_token(c, "default", "wordcount")
    c = fake_cluster(read_namespaced_secret=lambda *a: types.SimpleNamespace(data={"other": "eA=="}))
    with pytest.raises(UserError, match="has no key 'token'"):
        cl.control_token(c, "default", "wordcount")
    token = base64.b64encode(b"s3cret\n").decode()
    c = fake_cluster(read_namespaced_secret=lambda *a: types.SimpleNamespace(data={"token": token}))
    assert cl.control_token(c, "default", "wordcount") == "s3cret"


def test_a_driver_not_running_yet_is_a_clear_error(fake_k8s):
    c = fake_cluster(read_namespaced_pod=lambda *a: {"status": {"phase": "Pending"}})
    with pytest.raises(UserError, match=r"driver pod default/wordcount-driver is not running yet \(phase Pending\)"):
        cl.driver_pod(c, "default", "wordcount")


def test_other_api_errors_say_what_was_being_done(fake_k8s):
    def forbidden(*_):
        raise ApiException(403, "Forbidden", '{"message": "secrets is forbidden: User x cannot get"}')

    with pytest.raises(UserError, match="reading Secret default/wordcount-control: the API server answered 403: "
                                        "secrets is forbidden"):
        cl.control_token(fake_cluster(read_namespaced_secret=forbidden), "default", "wordcount")


def app(**spec):
    spark = {"executors": {"initial": 1, "min": 1, "max": 2}, **spec.pop("spark", {})}
    return {"metadata": {"name": "wordcount", "namespace": "default"}, "spec": {"engine": "spark", "spark": spark,
                                                                                 **spec}}


def test_the_app_must_be_a_managed_running_spark_app_that_can_scale_out_by_one():
    assert cl.check_app(app(), None) == (1, 1, 2)
    assert cl.check_app(app(spark={"executors": {"min": 1, "max": 4}}), 2) == (2, 1, 4)
    with pytest.raises(UserError, match=r"cannot scale out by one from 2 within spec.spark.executors 1..2"):
        cl.check_app(app(), 2)
    with pytest.raises(UserError, match="cannot scale out by one from 3 within"):
        cl.check_app(app(spark={"executors": {"min": 3, "max": 3}}), None)
    with pytest.raises(UserError, match="is attached"):
        cl.check_app(app(spark={"attach": {"controlURL": "http://x"}}), None)
    with pytest.raises(UserError, match="is suspended"):
        cl.check_app(app(suspend=True), None)
    with pytest.raises(UserError, match="only Spark executors"):
        cl.check_app(app(engine="storm"), None)


def test_the_command_line(monkeypatch, capsys):
    args = build_parser().parse_args(["bench", "rescale", "--namespace", "ns", "--app", "wc", "--repeats", "5",
                                      "--json", "r.json", "--markdown", "r.md"])
    assert (args.namespace, args.app, args.repeats, args.json, args.markdown, args.docs) == \
        ("ns", "wc", 5, "r.json", "r.md", False)
    assert (args.base, args.timeout, args.before, args.after, args.metrics_url) == (None, 180.0, 30.0, 60.0, None)

    def no_cluster():
        raise UserError("cannot load the kubeconfig (/nowhere): no such file")

    monkeypatch.setattr(cl, "connect", no_cluster)
    assert main(["bench", "rescale"]) == 2
    assert "elastream: error: cannot load the kubeconfig (/nowhere)" in capsys.readouterr().err
    assert main(["bench", "rescale", "--repeats", "0"]) == 2
    assert "--repeats must be at least 1" in capsys.readouterr().err


def test_the_json_record_keeps_the_events_relative_to_the_decision():
    rel = tl.relative_events(SCALE_OUT_EVENTS, MONO0, since=10)
    assert [(e["kind"], e["pod"], e["t"]) for e in rel] == [
        ("ADDED", "x-exec-2", 5.2), ("MODIFIED", "x-exec-2", 5.3), ("MODIFIED", "x-exec-2", 5.4),
        ("MODIFIED", "x-exec-2", 6.1)]
    assert rel[-1]["running"] and rel[-1]["wall"] == T0 + 6.1 and "mono" not in rel[-1]


# --- the waits, with a fake watcher, counter and StreamApp ---------------------------------------------------

class FakeWatcher:
    def __init__(self, events):
        self._events, self.problem = events, None

    def events(self):
        return list(self._events)


class FakeCounter:
    def __init__(self, *counts):
        self.counts = list(counts)

    def read(self):
        return self.counts.pop(0) if len(self.counts) > 1 else self.counts[0]


def bench(fake_k8s, monkeypatch, replicas, counter=None, logs=None, timeout=0.3):
    monkeypatch.setattr(cl, "POLL_S", 0.01)
    monkeypatch.setattr(cl, "LOG_POLL_S", 0.0)
    body = app(replicas=replicas)
    body["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "reason": "Steady",
                                                          "message": "ok"}]}
    c = fake_cluster(get_namespaced_custom_object=lambda *a: body)
    b = cl.Bench(c, "default", "wordcount", 1, timeout, 30, 60, counter or FakeCounter((1, 0)), None,
                 say=lambda m: None, selector="s", driver="wordcount-driver")
    monkeypatch.setattr(b, "pod_log", lambda pod, container, since=None: (logs or {}).get(pod))
    return b


def test_a_scale_in_is_done_when_the_pod_is_deleted_and_the_driver_counts_the_new_number(fake_k8s, monkeypatch):
    events = [ev("LISTED", "x-exec-1", -30), ev("LISTED", "x-exec-2", -30), ev("DELETED", "x-exec-2", 0.0)]
    b = bench(fake_k8s, monkeypatch, replicas=1, counter=FakeCounter(None, (2, 1), (1, 0)))
    pod, counted = b._wait_removed(FakeWatcher(events), {"x-exec-1", "x-exec-2"}, MONO0 - 1, 1, time.monotonic() + 5)
    assert pod == "x-exec-2" and counted is not None


def test_a_scale_in_that_never_ends_says_what_was_not_seen(fake_k8s, monkeypatch):
    b = bench(fake_k8s, monkeypatch, replicas=1, counter=FakeCounter((2, 1)))
    with pytest.raises(UserError, match=r"scale-in to 1 not done within 0.3 s of the decision: no executor pod was "
                                        r"deleted and the driver never counted 1 executors. StreamApp "
                                        r"default/wordcount: phase Running, Ready=True"):
        b._wait_removed(FakeWatcher([]), {"x-exec-1", "x-exec-2"}, MONO0, 1, time.monotonic() + 0.3)


def test_someone_else_rescaling_meanwhile_is_a_disturbed_run_not_an_error(fake_k8s, monkeypatch):
    b = bench(fake_k8s, monkeypatch, replicas=2, counter=FakeCounter((2, 0)))
    with pytest.raises(cl.Disturbed, match="spec.replicas became 2 before the rescale to 1 was done"):
        b._wait_removed(FakeWatcher([]), {"x-exec-1", "x-exec-2"}, MONO0, 1, time.monotonic() + 5)


def test_a_scale_out_ends_at_the_new_executors_first_task(fake_k8s, monkeypatch):
    events = SCALE_OUT_EVENTS
    b = bench(fake_k8s, monkeypatch, replicas=2, logs={"x-exec-2": EXECUTOR_LOG})
    pod, marks = b._wait_first_task(FakeWatcher(events), {"x-exec-1"}, MONO0, 2, time.monotonic() + 5, [])
    assert pod == "x-exec-2" and marks == tl.executor_marks(EXECUTOR_LOG)


def test_a_scale_out_that_never_comes_says_so(fake_k8s, monkeypatch):
    b = bench(fake_k8s, monkeypatch, replicas=2)
    with pytest.raises(UserError, match=r"no new executor pod appeared within 0.3 s of writing spec.replicas=2. "
                                        r"StreamApp default/wordcount: .* Is the operator running\?"):
        b._wait_first_task(FakeWatcher(SCALE_OUT_EVENTS[:1]), {"x-exec-1"}, MONO0, 2, time.monotonic() + 0.3, [])
    stuck = SCALE_OUT_EVENTS[:3]  # created and scheduled, never running: no log to read
    with pytest.raises(UserError, match=r"executor pod x-exec-2 got no task within 0.3 s of the decision \(phase "
                                        r"Pending, node n2, container running: False"):
        b._wait_first_task(FakeWatcher(stuck), {"x-exec-1"}, MONO0, 2, time.monotonic() + 0.3, [])


def test_the_report_says_how_the_policy_was_set_up():
    c = fake_cluster(get_namespaced_custom_object=lambda *a: {"spec": {"mode": "advisor",
                                                                       "evaluationInterval": "10s"}})
    interval, words = cl._policy(c, app(policyRef={"name": "latency-10s"}))
    assert interval == "10s" and "is in advisor mode: only the bench's manual overrides change the job" in words
    assert "kubectl patch elasticitypolicy latency-10s --type=merge" in words
    interval, words = cl._policy(c, app(policy={"mode": "auto"}))
    assert interval == "30s" and "auto mode: the autoscaler may rescale too; a run it disturbs is left out" in words
    assert cl._seconds("1m30s", 10.0) == 90.0 and cl._seconds("?", 10.0) == 10.0
