"""The one ceiling on how many bytes a trace file may decompress to, for every container:
gzip, xz and bzip2 streams, and the members of an Inspect `.eval` zip together.

A small compressed bomb (10 KB of gzip holding 10 MB of `{}` lines, or far more) must be
refused while it expands, not after: readers count what they have decompressed against
`max_trace_bytes()` chunk by chunk and stop as soon as it is passed.
"""

from __future__ import annotations

import os

from ctxlab._errors import TraceFormatError

MAX_TRACE_BYTES = 1024**3
"""Default ceiling on a trace file's size once decompressed; `CTXLAB_MAX_TRACE_BYTES` overrides
it, so a small compressed bomb cannot exhaust memory."""

MAX_BYTES_VARIABLE = "CTXLAB_MAX_TRACE_BYTES"

CHUNK = 1 << 20
"""Bytes decompressed at a time between two checks against the ceiling."""


def max_trace_bytes() -> int:
    """The decompressed-size ceiling: `CTXLAB_MAX_TRACE_BYTES` when set, else the default."""
    raw = os.environ.get(MAX_BYTES_VARIABLE, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return MAX_TRACE_BYTES


def too_large(source: str, limit: int, what: str) -> TraceFormatError:
    """The error for input past the ceiling, naming the file and how to raise it."""
    return TraceFormatError(
        f"{what} exceeds {limit:,} bytes (the ceiling on a trace file's size; "
        f"set {MAX_BYTES_VARIABLE} to raise it)",
        source=source,
    )


__all__ = ["CHUNK", "MAX_BYTES_VARIABLE", "MAX_TRACE_BYTES", "max_trace_bytes", "too_large"]
