"""verify.committed_offset reads the generator offset of the last committed batch from a checkpoint."""
import json

from spark_apps.verify import committed_offset


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
