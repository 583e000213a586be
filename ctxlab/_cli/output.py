"""Shared printing for subcommands: error lines (tables are `ctxlab._cli.tables`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ctxlab._errors import FlagError, StoreError, SweepError, TraceFormatError


def report_errors(errors: Sequence[TraceFormatError]) -> None:
    for error in errors:
        print(f"ctxlab: error: {error}", file=sys.stderr)


USER_ERRORS = (TraceFormatError, StoreError, SweepError, FlagError, OSError)
"""What bad input raises: printed as one `ctxlab: error:` line with exit code 2, never as a
traceback (`OSError`: a file that cannot be read or written, named by the error)."""


def fail(error: BaseException) -> int:
    """Print `error` as one line on stderr; the exit code for bad input (2)."""
    text = " ".join(str(error).split()) or type(error).__name__
    print(f"ctxlab: error: {text}", file=sys.stderr)
    return 2
