"""The `elastream` command line: one sub-command per module in elastream.commands."""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from elastream.errors import UserError
from elasticity.errors import InputError

# sub-command name -> module in elastream.commands exposing register(subparsers) and run(args) -> int
COMMANDS = ["run", "tune", "crds", "validate", "simulate", "calibrate", "bench", "train-rl", "storm-exporter"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="elastream",
        description="Run streaming jobs and keep them elastic: CRDs, simulator, benchmarks.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"elastream.commands.{name.replace('-', '_')}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`elastream simulate ... | head`): stop quietly, as a killed-by-SIGPIPE command does;
        # stdout goes to /dev/null so the interpreter's final flush does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (UserError, InputError) as err:
        print(f"elastream: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a file the run writes at its end (a full disk, a path gone meanwhile): one line
        print(f"elastream: error: {err.filename or ''}: {err.strerror or err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
