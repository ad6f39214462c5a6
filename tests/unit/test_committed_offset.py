"""verify.committed_offset reads the generator offset of the last committed batch from a checkpoint."""
import json

from spark_apps.verify import accounted_offset, committed_offset


def write_batch(checkpoint, batch: int, seq: int, committed: bool) -> None:
    (checkpoint / "offsets").mkdir(exist_ok=True)
    (checkpoint / "commits").mkdir(exist_ok=True)
    (checkpoint / "offsets" / str(batch)).write_text("v1\n" + json.dumps({"batchWatermarkMs": 0}) + "\n"
                                                     + json.dumps({"seq": seq}) + "\n")
    if committed:
        (checkpoint / "commits" / str(batch)).write_text("v1\n{}\n")


def test_last_committed_batch_counts_not_the_planned_one(tmp_path):
    write_batch(tmp_path, 0, 100, committed=True)
    write_batch(tmp_path, 1, 250, committed=True)
    write_batch(tmp_path, 2, 400, committed=False)  # planned, not committed: a restart replays it
    assert committed_offset(str(tmp_path)) == 250


def test_no_commit_yet_is_zero(tmp_path):
    write_batch(tmp_path, 0, 100, committed=False)
    assert committed_offset(str(tmp_path)) == 0


def whole_batch(sink, batch: int, seqs) -> None:
    d = sink / f"batch-{batch:09d}"
    d.mkdir(parents=True)
    (d / "part-00000.json").write_text("".join(json.dumps({"seq": s}) + "\n" for s in seqs))
    (d / "_SUCCESS").write_text("")


def test_a_run_stopped_mid_batch_is_checked_up_to_what_its_sink_accounts_for(tmp_path):
    # batches 0 and 1 written whole, only 0 committed (the stop came before 1's commit), 2 planned and never written:
    # the sink must hold every record below 250; 250..399 were unfinished, not lost
    ck, sink = tmp_path / "ck", tmp_path / "sink"
    ck.mkdir()
    write_batch(ck, 0, 100, committed=True)
    write_batch(ck, 1, 250, committed=False)
    write_batch(ck, 2, 400, committed=False)
    whole_batch(sink, 0, range(0, 100))
    whole_batch(sink, 1, range(100, 250))
    assert accounted_offset(str(ck), str(sink)) == 250


def test_a_committed_batch_missing_from_the_sink_is_still_accounted_for(tmp_path):
    # batch 1 committed but its sink output gone: its records are missing (a loss), not unfinished
    ck, sink = tmp_path / "ck", tmp_path / "sink"
    ck.mkdir()
    write_batch(ck, 0, 100, committed=True)
    write_batch(ck, 1, 250, committed=True)
    whole_batch(sink, 0, range(0, 100))
    assert accounted_offset(str(ck), str(sink)) == 250
    assert accounted_offset(str(ck), str(tmp_path / "no-sink-yet")) == 250


def test_the_local_report_of_a_run_stopped_before_it_drained_says_unfinished_not_missing(tmp_path):
    # 50 records/s for 10 s, stopped at its end: 500 offered; the job had read 250 when it stopped (batch 1 written
    # whole, its commit cut short) and the rest was queued
    from elastream.api.policy import ElasticityPolicySpec
    from elastream.api.streamapp import StreamAppSpec
    from elastream.engines.spark.local import SparkLocalJob
    from elastream.local.manifest import LocalApp

    spec = StreamAppSpec.model_validate({"engine": "spark", "policyRef": {"name": "p"}, "spark": {
        "application": {"builtin": "identity"}, "source": {"generator": {"profile": "constant", "rate": 50}}}})
    job = SparkLocalJob(LocalApp("wc", spec, ElasticityPolicySpec(), "default"), tmp_path, 10.0)
    job.checkpoint.mkdir(parents=True)
    run = {"app": "identity", "start_us": 1_700_000_000_000_000, "window": 2.0,
           "source": {"type": "generator", "generator": {"profile": "constant", "rate": 50, "peak_rate": None,
                      "period": None, "trace": None, "duration": "10s"},
                      "kafka": None, "partitions": 2, "max_records_per_batch": None}}
    (job.checkpoint / "elastream-run.json").write_text(json.dumps(run))
    write_batch(job.checkpoint, 0, 100, committed=True)
    write_batch(job.checkpoint, 1, 250, committed=False)
    whole_batch(job.sink, 0, range(0, 100))
    whole_batch(job.sink, 1, range(100, 250))
    report = job.verify(1_700_000_010.0)
    assert report["records_produced"] == 500 and report["records_processed"] == 250
    assert report["unfinished"] == 250 and report["missing"] == 0
    assert report["exactly_once"] and not report["verified"]  # what it read is exact; the run is not whole
    whole_batch(job.sink, 2, range(250, 495))  # drained but 5 records lost: missing, and still not verified
    write_batch(job.checkpoint, 2, 500, committed=True)
    report = job.verify(1_700_000_010.0)
    assert (report["unfinished"], report["missing"], report["verified"]) == (0, 5, False)
    # stopped at 4.5 s (225 offered) while a batch that read up to 250 finished: those records were offered too
    report = job.verify(1_700_000_004.5)
    assert report["records_produced"] == 500 and report["unexpected"] == 0


def test_a_malformed_offsets_file_falls_back_instead_of_losing_the_report(tmp_path):
    ck, sink = tmp_path / "ck", tmp_path / "sink"
    ck.mkdir()
    write_batch(ck, 0, 100, committed=True)
    (ck / "offsets" / "1").write_text("v1\n{}\n")  # cut short: no source offset line
    whole_batch(sink, 0, range(0, 100))
    whole_batch(sink, 1, range(100, 150))
    assert accounted_offset(str(ck), str(sink)) == 100
