"""The StreamApp loop's pure parts: its schedule, lateness and the OnSchedule condition, and the lanes' bulkhead."""
import asyncio
import threading
import time

from controllers.lanes import Lanes, LaneSizes
from controllers.schedule import Lateness, Schedule
from controllers.status import schedule_status
from elastream.api.status import StreamAppStatus


def test_the_first_evaluation_is_due_at_once_and_not_judged():
    s = Schedule()
    assert s.is_due(0.0)
    assert s.start(0.0) is None


def test_an_evaluation_is_due_one_interval_after_the_previous_ended():
    s = Schedule()
    s.done(100.0, 30.0)
    assert not s.is_due(129.9) and s.is_due(130.0)
    assert s.start(135.0) == Lateness(5.0, 30.0)
    assert not s.start(160.0).late and s.start(160.1).late  # late: more than one interval after it was due


def test_the_loop_sleeps_until_the_next_check_or_evaluation():
    s = Schedule()
    assert s.wait_s(0.0, resync_s=10.0) == 0.5  # due now: the shortest pause
    s.done(0.0, 30.0)
    assert s.wait_s(0.0, resync_s=10.0) == 10.0
    assert s.wait_s(25.0, resync_s=10.0) == 5.0


def test_on_schedule_condition_says_late_then_on_time():
    late = schedule_status({}, Lateness(75.0, 30.0), generation=3)
    (cond,) = late["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("OnSchedule", "False", "EvaluationLate")
    assert "75s after it was due" in cond["message"] and "30s" in cond["message"]
    on_time = schedule_status(late, Lateness(1.0, 30.0), generation=3)
    assert [(c["status"], c["reason"]) for c in on_time["conditions"]] == [("True", "OnTime")]
    assert schedule_status(late, None, generation=3) == late  # a first evaluation says nothing
    for status in (late, on_time):  # the CRD's status schema accepts them (else the API server answers 422)
        StreamAppStatus.model_validate(status)


def test_a_slow_app_moves_to_the_slow_lane_and_leaves_the_fast_lane_free():
    lanes = Lanes(LaneSizes(fast=1, slow=1, slow_after_s=0.05))
    release = threading.Event()

    async def scenario():
        await lanes.run("slow", time.sleep, 0.1)  # took longer than slow_after_s
        assert lanes.slow_keys == {"slow"}
        hanging = asyncio.ensure_future(lanes.run("slow", release.wait, 5))
        await asyncio.sleep(0.05)
        # the only fast worker is free: the quick app is not delayed by the hanging one
        started = time.monotonic()
        await asyncio.wait_for(lanes.run("quick", lambda: None), timeout=1.0)
        assert time.monotonic() - started < 0.5
        release.set()
        await hanging
        await lanes.run("slow", lambda: None)

    try:
        asyncio.run(scenario())
    finally:
        lanes.shutdown()
    assert lanes.slow_keys == set()  # its last step was quick: back in the fast lane


def test_a_step_that_overruns_gives_up_its_fast_slot_at_once():
    """A new app whose endpoint hangs holds its fast slot for slow_after_s, not for its timeouts."""
    lanes = Lanes(LaneSizes(fast=1, slow=1, slow_after_s=0.1))
    release = threading.Event()

    async def scenario():
        hanging = asyncio.ensure_future(lanes.run("hangs", release.wait, 5))
        await asyncio.sleep(0.01)
        started = time.monotonic()
        await asyncio.wait_for(lanes.run("quick", lambda: None), timeout=3.0)
        waited = time.monotonic() - started
        # it waited for the overrun (0.1 s), not for the hanging step (5 s); the margin is for a loaded machine
        # (0.5 s was missed at a load average of 6 on 2 cores)
        assert 0.05 < waited < 2.5, waited
        # (the quick app may land in the slow lane too: on a loaded machine its no-op can wait 0.1 s for a thread)
        assert not hanging.done() and "hangs" in lanes.slow_keys
        release.set()
        assert await hanging is True  # the overrun step's own result still comes back

    try:
        asyncio.run(scenario())
    finally:
        lanes.shutdown()


def test_a_step_that_raises_still_routes_its_app():
    lanes = Lanes(LaneSizes(fast=1, slow=1, slow_after_s=0.01))

    def fails_slowly():
        time.sleep(0.05)
        raise RuntimeError("boom")

    async def scenario():
        try:
            await lanes.run("a", fails_slowly)
        except RuntimeError:
            pass

    asyncio.run(scenario())
    lanes.shutdown()
    assert lanes.slow_keys == {"a"}


def test_steps_see_the_context_of_their_loop():
    """kopf keeps its settings in context variables: kopf.event() in a worker thread needs them."""
    import contextvars
    var = contextvars.ContextVar("var")
    lanes = Lanes(LaneSizes(fast=1, slow=1))

    async def scenario():
        var.set("the loop's")
        return await lanes.run("a", var.get)

    try:
        assert asyncio.run(scenario()) == "the loop's"
    finally:
        lanes.shutdown()


def test_an_operator_with_a_shard_serves_only_the_apps_labelled_with_it(monkeypatch):
    from controllers.sharding import SHARD_LABEL, in_shard

    assert in_shard({}) and in_shard({SHARD_LABEL: "a"})  # no shard: every app
    monkeypatch.setenv("ELASTREAM_SHARD", "a")
    assert in_shard({SHARD_LABEL: "a"})
    assert not in_shard({SHARD_LABEL: "b"}) and not in_shard({})


def test_every_streamapp_handler_is_filtered_by_the_shard():
    import kopf
    import controllers.streamapp as streamapp
    from controllers.sharding import in_shard

    registry = kopf.get_default_registry()
    handlers = [h for sub in (registry._changing, registry._spawning) for h in sub.get_all_handlers()
                if getattr(h.fn, "__module__", "") == streamapp.__name__]
    assert {h.fn.__name__ for h in handlers} == {"reconcile_app", "supervise"}
    assert all(h.when is in_shard for h in handlers)
