"""The `ctxlab` command: one subcommand per module in `ctxlab.commands`, mirroring the API.

Exit codes: 0 success, 2 bad input (a file that is not a trace, a bad flag), with one clear
line per problem on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

import ctxlab
import ctxlab.commands
from ctxlab.errors import TraceFormatError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxlab",
        description="Replay recorded LLM-agent traces through context-compaction policies.",
    )
    parser.add_argument("--version", action="version", version=f"ctxlab {ctxlab.__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(ctxlab.commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"ctxlab.commands.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except TraceFormatError as exc:
        print(f"ctxlab: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
