"""The replayable spout (storm_apps.source) on Storm's multilang protocol (storm.py, shipped in the topology jar).

Run by Storm's ShellSpout: elastream_spout.py STATE_DIR PROFILE_JSON. One task only: the source's offsets live in
STATE_DIR/source.json.
"""
import json
import sys
import time

import storm
from spark_apps.profile import make_profile
from storm_apps.source import ReplayableSource, sentence

BATCH = 50  # records per nextTuple: Storm waits a little between calls that emit nothing
SAVE_EVERY_S = 0.5


class ElastreamSpout(storm.Spout):
    def initialize(self, conf, context):
        state_dir, generator = sys.argv[1], json.loads(sys.argv[2])
        self.hot_word_share = float(generator.pop("hot_word_share", 0.0))
        self.source = ReplayableSource(make_profile(**generator), state_dir, time.time())
        self.saved_at = 0.0

    def nextTuple(self):
        now = time.time()
        for seq in self.source.next_batch(now, BATCH):
            # need_task_ids false: storm.py's emit() would wait for a round trip per tuple
            tup = [seq, 0, 1, sentence(seq, self.hot_word_share)]
            storm.sendMsgToParent({"command": "emit", "id": seq, "tuple": tup, "need_task_ids": False})
        if now - self.saved_at >= SAVE_EVERY_S:
            self.source.save(now)
            self.saved_at = now

    def ack(self, id):
        self.source.ack(int(id))

    def fail(self, id):
        self.source.fail(int(id))


if __name__ == "__main__":
    ElastreamSpout().run()
