"""elastream's item 21 (issue 14): a scale-in waits while the load, within the trend window, has come back over what
the smaller job carries after a low spell longer than the current one will be when the scale-in is realized — on/off
bursts then cost no pair of rescales per gap — and spells longer than `elastream_low_spell_max_s` do not count."""
from elasticity.config import PolicyConfig
from elasticity.policies.forecast import low_spells
from tests.unit.elasticity.helpers import elastream_proposals

PER_INSTANCE = 400.0
P = 10
HIGH, LOW = 3400.0, 1200.0  # 10 instances carry the high phase; 4 the low one


def _proposals(cfg, rates):
    return elastream_proposals(cfg, rates, P, PER_INSTANCE)


def _first_scale_in(props, after: int):
    return next(i for i, p in enumerate(props) if i >= after and p.targets["src"] < P)


def test_low_spells_are_measured_from_the_last_high_scrape():
    t = [0, 30, 60, 90, 120, 150, 180, 210]
    assert low_spells(t, [False, True, False, False, True, False, False, False]) == ([90.0], 90.0)
    assert low_spells(t, [False] * 8) == ([], None)  # cut by the history's start: not known
    assert low_spells(t, [True, False, True, False, False, False, False, True]) == ([60.0, 150.0], None)


# on/off: 8 scrapes high, 11 low (the gap: 12 scrapes = 360 s from high to high), 8 high, then low for good
ON_OFF = [HIGH] * 8 + [LOW] * 11 + [HIGH] * 8 + [LOW] * 20
SECOND_GAP = 8 + 11 + 8  # the index of the second low phase's first scrape


def test_a_scale_in_waits_out_the_gaps_the_load_came_back_after():
    cfg = PolicyConfig(elastream_low_spell_max_s=900.0)
    props = _proposals(cfg, ON_OFF)
    eager = _first_scale_in(_proposals(PolicyConfig(elastream_low_spell_max_s=0.0), ON_OFF), SECOND_GAP)
    waited = props[eager]
    assert waited.targets["src"] == P and "came back over what the smaller job carries" in waited.reason, waited.reason
    at = _first_scale_in(props, SECOND_GAP)
    # proposed once the spell (from the last high scrape) and the scale-down delay outlast the 360-s gap
    since_high = 30.0 * (at - SECOND_GAP + 1)
    assert at > eager and since_high + props[at].scale_down_delay_s >= 360.0, props[at].reason
    assert since_high - 30.0 + props[at].scale_down_delay_s < 360.0  # and not one evaluation later


def test_gaps_longer_than_the_limit_do_not_hold_a_scale_in():
    cfg = PolicyConfig(elastream_low_spell_max_s=300.0)  # the 360-s gap is worth its pair of rescales
    eager = _first_scale_in(_proposals(PolicyConfig(elastream_low_spell_max_s=0.0), ON_OFF), SECOND_GAP)
    assert _first_scale_in(_proposals(cfg, ON_OFF), SECOND_GAP) == eager


def test_a_first_fall_does_not_wait():
    once = [HIGH] * 12 + [LOW] * 20  # no low spell ended in a return yet
    cfg = PolicyConfig(elastream_low_spell_max_s=900.0)
    assert _first_scale_in(_proposals(cfg, once), 12) == _first_scale_in(
        _proposals(PolicyConfig(elastream_low_spell_max_s=0.0), once), 12)


def test_a_scale_down_delay_the_user_set_is_not_outwaited():
    # a user's 90-s delay says a low load of 90 s is worth a scale-in (with lows of 150 s, as a step load has)
    cfg = PolicyConfig(elastream_low_spell_max_s=900.0, scale_down_delay_s=90.0)
    off = PolicyConfig(elastream_low_spell_max_s=0.0, scale_down_delay_s=90.0)
    assert _first_scale_in(_proposals(cfg, ON_OFF), SECOND_GAP) == _first_scale_in(_proposals(off, ON_OFF), SECOND_GAP)
