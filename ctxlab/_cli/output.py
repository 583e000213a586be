"""Shared printing for subcommands: error and warning lines (tables are `ctxlab._cli.tables`).

Every line is wrapped to the terminal's width (`$COLUMNS`, else the terminal's, else 100) with
continuation lines indented, like the tables' prose: a 1,500-character error on one line is
unreadable in a notebook's terminal and in CI logs alike. Paths are never broken, so they can
be copied."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ctxlab._cli.tables import fit
from ctxlab._errors import FlagError, StoreError, SweepError, TraceFormatError


def report_errors(errors: Sequence[TraceFormatError]) -> None:
    """Each error of a load as its own wrapped `ctxlab: error:` line(s) on stderr."""
    for error in errors:
        print(fit(f"ctxlab: error: {error}", paths=True), file=sys.stderr)


def warn(text: str) -> None:
    """`ctxlab: warning: text` on stderr, wrapped to the terminal."""
    print(fit(f"ctxlab: warning: {text}", paths=True), file=sys.stderr)


USER_ERRORS = (TraceFormatError, StoreError, SweepError, FlagError, OSError)
"""What bad input raises: printed as one `ctxlab: error:` line with exit code 2, never as a
traceback (`OSError`: a file that cannot be read or written, named by the error)."""


def fail(error: BaseException) -> int:
    """Print `error` as one line on stderr; the exit code for bad input (2)."""
    text = " ".join(str(error).split()) or type(error).__name__
    print(fit(f"ctxlab: error: {text}", paths=True), file=sys.stderr)
    return 2
