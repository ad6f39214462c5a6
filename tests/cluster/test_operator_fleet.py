"""One operator process, 200 StreamApps on the real API server: every one is evaluated, and again every interval,
while a tenth of them sit behind endpoints that hang (the loop that `elastream bench operator` measures)."""
import pytest

from elastream.bench_operator.run import api_client, one_run

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.mark.extended
def test_two_hundred_streamapps_are_all_evaluated_and_kept_on_schedule(crds_installed, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", crds_installed.kubeconfig)
    result = one_run(api_client(), apps=200, slow_fraction=0.1, interval_s=10.0, window_s=40.0,
                     first_round_limit_s=180.0, log_dir=tmp_path)
    log = f"operator log in {tmp_path}; {result}"
    assert result.first_round_s is not None and result.evaluated == 200, log
    assert result.failed_steps == 0, log
    # every app with a responsive endpoint was evaluated in the last two intervals, and found on time
    assert result.stale_fast_apps == 0, log
    assert result.on_schedule_apps >= 180, log
    assert result.late_evaluations == 0, log
    assert result.evaluations_per_s > 0.8 * 180 / 10.0, log  # the fast apps alone make 18/s
