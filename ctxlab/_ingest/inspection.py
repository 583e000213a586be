"""`ctxlab.inspect`: what each trace holds, before any replay, one row per trace.

The Python twin of `ctxlab inspect`: the command prints this frame (or its rows as the JSON's
`traces`). The columns are `Trace.summary()`'s plus `source`, the file the trace came from;
subagents are counted in their parent's row, not listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxlab._ingest.load import Source, top_traces

if TYPE_CHECKING:
    import polars as pl


def _schema() -> dict[str, pl.DataType]:
    """Fixed column types, so a frame of no traces, or of traces without recorded usage, has
    the same columns and types as any other."""
    import polars as pl

    return {
        "trace_id": pl.String(),
        "format": pl.String(),
        "model": pl.String(),
        "messages": pl.Int64(),
        "turns": pl.Int64(),
        "subagents": pl.Int64(),
        "recorded_compactions": pl.Int64(),
        "recorded_input_tokens": pl.Int64(),
        "notes": pl.List(pl.String()),
        "source": pl.String(),
    }


def inspect(source: Source) -> pl.DataFrame:
    """One row per trace in `source` (a file, `.gz` file or directory, loaded as
    `ctxlab.load` loads it; a `Trace`; or a list of them): id, format, model, messages, calls
    (`turns`), subagents, recorded compactions, the input tokens the provider reported summed
    over the calls (null when none were), the format's notes on what it does not record, and
    the source file."""
    import polars as pl

    rows = [{**t.summary(), "source": t.source} for t in top_traces(source)]
    return pl.DataFrame(rows, schema=_schema())
