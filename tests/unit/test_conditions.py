from controllers.conditions import get_condition, set_condition


def test_transition_time_changes_only_with_status():
    c = set_condition([], "Ready", True, "Running", "ok", now="2026-01-01T00:00:00Z")
    c = set_condition(c, "Ready", True, "Running", "still ok", now="2026-01-01T00:05:00Z")
    assert get_condition(c, "Ready")["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert get_condition(c, "Ready")["message"] == "still ok"
    c = set_condition(c, "Ready", False, "MetricsUnavailable", "down", now="2026-01-01T00:09:00Z")
    assert get_condition(c, "Ready")["lastTransitionTime"] == "2026-01-01T00:09:00Z"
    assert get_condition(c, "Ready")["status"] == "False"


def test_other_conditions_are_kept_in_order():
    c = set_condition([], "Ready", True, "A", "")
    c = set_condition(c, "Scaling", False, "B", "", generation=3)
    c = set_condition(c, "Ready", False, "C", "")
    assert [x["type"] for x in c] == ["Ready", "Scaling"] and c[1]["observedGeneration"] == 3
