"""The `ctxlab` command: one subcommand per module in `ctxlab._cli.commands`, mirroring the API.

Exit codes: 0 success, 2 bad input (a file that is not a trace, a bad flag value, a store file
that cannot be used or is busy, a refused query), with one clear line per problem on stderr;
3 when some input files failed to load and the rest were processed (`output.load_status`).
Every command raises these errors (`ctxlab._cli.output.USER_ERRORS`) and `main` prints them in one
place, so each has the same line and exit code whichever command meets it.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import pkgutil
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn

import ctxlab
import ctxlab._cli.commands
from ctxlab._cli.output import USER_ERRORS, fail, warn
from ctxlab._cli.tables import fit


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error: `ctxlab replay: error: argument --window: ...` and a
    pointer to `--help`, instead of the usage block above the line."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, fit(f"{self.prog}: error: {message} (see '{self.prog} --help')") + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="ctxlab",
        description="Replay recorded LLM-agent traces through context-compaction policies.",
    )
    parser.add_argument("--version", action="version", version=f"ctxlab {ctxlab.__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(ctxlab._cli.commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"ctxlab._cli.commands.{info.name}")
        module.register(subparsers)
    return parser


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The parser `main` uses, built once per process. Building it imports and registers every
    command (about 3 ms of CPU), which a process calling `main` many times paid on every call
    (tests/test_flag_fuzz.py alone calls it 1,184 times). Parsing leaves the parser as it was:
    argparse makes a fresh namespace per call and copies `append` defaults before adding to
    them, and no command edits a parsed list in place."""
    return build_parser()


def _show_warning(message: Warning | str, *_: object, **__: object) -> None:
    """Python warnings (a trace skipped while loading, a setting ignored) as `ctxlab: warning:`
    lines wrapped to the terminal, not `file:line: Category: text` and the warning's source."""
    warn(str(message))


def main(argv: Sequence[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # a bad flag (2, its line already printed), --help, --version
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    try:
        return int(args.run(args) or 0)
    except BrokenPipeError:
        return 0
    except USER_ERRORS as exc:
        return fail(exc)


if __name__ == "__main__":
    sys.exit(main())
