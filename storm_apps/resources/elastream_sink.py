"""The sink: appends (seq, part, parts) of every tuple to its own file in STATE_DIR, then acks it, so a tuple is
acked only once it is written (at-least-once). storm_apps.verify reads these files.

Run by Storm's ShellBolt: elastream_sink.py STATE_DIR.
"""
import os
import sys

import storm


class ElastreamSink(storm.Bolt):
    def initialize(self, conf, context):
        os.makedirs(sys.argv[1], exist_ok=True)
        path = os.path.join(sys.argv[1], f"sink-{context.get('taskid', 0)}-{os.getpid()}.txt")
        self.out = open(path, "a", buffering=1 << 16)

    def process(self, tup):
        seq, part, parts = tup.values[0], tup.values[1], tup.values[2]
        self.out.write(f"{seq} {part} {parts}\n")
        self.out.flush()  # in the kernel before the ack: a worker that dies next loses nothing
        storm.ack(tup)


if __name__ == "__main__":
    ElastreamSink().run()
