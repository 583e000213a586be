"""Shared printing for subcommands: error and warning lines (tables are `ctxlab._cli.tables`).

Every line is wrapped to the terminal's width (`$COLUMNS`, else the terminal's, else 100) with
continuation lines indented, like the tables' prose: a 1,500-character error on one line is
unreadable in a notebook's terminal and in CI logs alike. Paths are never broken, so they can
be copied."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ctxlab._cli.tables import fit
from ctxlab._errors import (
    FlagError,
    StoreError,
    SweepError,
    TraceFormatError,
    TuneError,
    UnsupportedSettingError,
)

if TYPE_CHECKING:
    from ctxlab._ingest.load import TraceList


SOME_FAILED = 3
"""Exit code when some inputs failed to load and the rest were processed (their output
printed, stored): distinct from 2, bad input with nothing done."""


def report_errors(
    errors: Sequence[TraceFormatError], skipped: Sequence[TraceFormatError] = ()
) -> None:
    """One wrapped line per file that failed (`ctxlab: error:`) or was skipped
    (`ctxlab: warning:`), on stderr."""
    for error in errors:
        print(fit(f"ctxlab: error: {error}", paths=True), file=sys.stderr)
    for entry in skipped:
        warn(str(entry))


def warn(text: str) -> None:
    """`ctxlab: warning: text` on stderr, wrapped to the terminal."""
    print(fit(f"ctxlab: warning: {text}", paths=True), file=sys.stderr)


def load_status(loaded: TraceList) -> int:
    """The exit code after a load: 0 when every file loaded, `SOME_FAILED` when some did and
    some did not, 2 when nothing loaded."""
    if not loaded.errors:
        return 0
    return SOME_FAILED if len(loaded) else 2


USER_ERRORS = (
    TraceFormatError,
    StoreError,
    SweepError,
    TuneError,
    FlagError,
    UnsupportedSettingError,
    OSError,
)
"""What bad input raises: printed as one `ctxlab: error:` line with exit code 2, never as a
traceback (`OSError`: a file that cannot be read or written, named by the error)."""


def fail(error: BaseException) -> int:
    """Print `error` as one line on stderr; the exit code for bad input (2)."""
    text = " ".join(str(error).split()) or type(error).__name__
    print(fit(f"ctxlab: error: {text}", paths=True), file=sys.stderr)
    return 2
