"""Shared printing for subcommands: aligned plain-text tables and error lines."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ctxlab.errors import FlagError, StoreError, SweepError, TraceFormatError


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain aligned table; numbers right-aligned, missing values as '-'."""
    cells = [[("-" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [
        all(isinstance(r[i], int | float) or r[i] is None for r in rows)
        for i in range(len(columns))
    ]

    def fmt(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    lines = [fmt(list(columns)), fmt(["-" * w for w in widths])]
    lines.extend(fmt(r) for r in cells)
    return "\n".join(lines)


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
