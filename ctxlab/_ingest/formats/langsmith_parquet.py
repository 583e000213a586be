"""LangSmith bulk-export Parquet files as LangSmith run records.

The bulk data export (Plus/Enterprise, to an S3-compatible bucket) writes one row per run with
"the fields of the Run data format": `id`, `trace_id`, `parent_run_id`, `dotted_order`,
`is_root`, `name`, `run_type`, `status`, `error`, timestamp columns `start_time` / `end_time`,
token and cost columns, and `inputs`, `outputs`, `extra`, `events`, `tags`, `parent_run_ids`
as JSON-encoded strings. Rows become the same run dicts a `list_runs` dump holds, so they join
the LangSmith record path and merge with runs from other files of the load.

Only the columns the LangSmith reader uses are read and decoded (a bulk export also carries
feedback, cost and tenant columns), which keeps loading near the cost of the JSON itself.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

import orjson

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.ceiling import max_trace_bytes, too_large

MAGIC = b"PAR1"

REQUIRED = ("id", "run_type", "inputs", "outputs")
"""Columns without which the rows cannot be LangSmith model calls."""

LINKS = ("trace_id", "dotted_order", "parent_run_id", "parent_run_ids")
"""At least one of these places a run in its trace."""

JSON_COLUMNS = (
    "inputs",
    "outputs",
    "extra",
    "parent_run_ids",
    "prompt_token_details",
    "completion_token_details",
)
"""Columns the export writes as JSON text and the reader needs as objects."""

TEXT_COLUMNS = (
    "id",
    "trace_id",
    "parent_run_id",
    "dotted_order",
    "name",
    "run_type",
    "error",
    "start_time",
    "end_time",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
)
"""Scalar columns copied as they are (timestamps as ISO text)."""


def _iso(value: Any) -> Any:
    """A timestamp cell as the ISO text JSON exports carry (UTC when the column has a zone)."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value.isoformat()
    return value


def _decode(value: Any, row: int, column: str, source: str) -> Any:
    """One JSON-text cell decoded; cells already nested (a re-written file) pass through."""
    if not isinstance(value, str | bytes):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise TraceFormatError(
            f"row {row}: column {column!r}: malformed JSON ({exc}); expected the JSON text "
            "LangSmith's bulk export writes",
            source=source,
        ) from exc


def _check_columns(columns: list[str], source: str) -> None:
    missing = [c for c in REQUIRED if c not in columns]
    if not any(c in columns for c in LINKS):
        missing.append(" or ".join(LINKS))
    if missing:
        shown = ", ".join(columns[:12]) + (", ..." if len(columns) > 12 else "")
        raise TraceFormatError(
            f"Parquet file is not a LangSmith bulk export: missing columns {', '.join(missing)} "
            f"(expected one row per run with {', '.join(REQUIRED)} and {LINKS[0]}); "
            f"got columns {shown or '(none)'}",
            source=source,
        )


def _check_size(data: bytes, source: str) -> None:
    """Refuse a file whose row groups say they decompress past the ceiling every trace file
    has (`ctxlab._ingest.ceiling`), before any column is read."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(io.BytesIO(data)).metadata
    except (OSError, ValueError) as exc:
        raise TraceFormatError(
            f"unreadable Parquet file ({exc}); expected a complete Parquet file", source=source
        ) from exc
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    limit = max_trace_bytes()
    if size > limit:
        raise too_large(source, limit, "the Parquet data, uncompressed,")


def open_parquet(data: bytes, source: str) -> list[tuple[Any, int | None]]:
    """The rows of a bulk-export Parquet file as one list of run dicts."""
    import polars as pl  # imported here: most loads never meet a Parquet file

    try:
        schema = pl.read_parquet_schema(io.BytesIO(data))
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise TraceFormatError(
            f"unreadable Parquet file ({exc}); expected a complete Parquet file",
            source=source,
        ) from exc
    _check_size(data, source)
    columns = list(schema)
    _check_columns(columns, source)
    wanted = [c for c in (*TEXT_COLUMNS, *JSON_COLUMNS) if c in schema]
    try:
        frame = pl.read_parquet(io.BytesIO(data), columns=wanted)
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise TraceFormatError(
            f"unreadable Parquet data ({exc}); expected a complete Parquet file",
            source=source,
        ) from exc
    if frame.height == 0:
        raise TraceFormatError("LangSmith bulk export has no rows; expected runs", source=source)
    cells = {name: frame.get_column(name).to_list() for name in wanted}
    rows: list[dict[str, Any]] = [{} for _ in range(frame.height)]
    for name, values in cells.items():
        decode = name in JSON_COLUMNS
        for index, (row, value) in enumerate(zip(rows, values, strict=True)):
            if value is None:
                continue
            if decode:
                value = _decode(value, index, name, source)
            elif name in ("start_time", "end_time"):
                value = _iso(value)
            row[name] = value
    for index, row in enumerate(rows):
        if not isinstance(row.get("id"), str) or not row["id"]:
            raise TraceFormatError(
                f"row {index}: column 'id': expected the run's id as text; got {row.get('id')!r}",
                source=source,
            )
        for name in ("inputs", "outputs", "extra"):
            if name in row and not isinstance(row[name], dict):
                raise TraceFormatError(
                    f"row {index}: column {name!r}: expected a JSON object; got "
                    f"{type(row[name]).__name__}",
                    source=source,
                    run_id=row["id"],
                )
    return [(rows, None)]
