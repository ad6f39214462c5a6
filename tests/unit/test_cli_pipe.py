"""A reader that goes away (`elastream simulate ... | head`) ends the command quietly, not with a traceback."""
import os
import subprocess
import sys


def test_a_closed_stdout_ends_the_command_quietly():
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes anything: every write meets EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-c", "import sys; from elastream.cli import main; sys.exit(main())",
             "simulate", "--scenario", "stationary"],
            stdout=write_end, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write_end)
    assert b"Traceback" not in proc.stderr and b"BrokenPipe" not in proc.stderr, proc.stderr.decode()
    assert proc.returncode == 141
