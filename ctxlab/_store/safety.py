"""What keeps a store file whole: a check that the file still holds every block it uses, and
the read-only sandbox `Store.query` runs SQL in.

Why a block check: DuckDB reads a block only when a query needs it, so a truncated file (a
copy cut short, a full disk) opens cleanly and answers `SELECT count(*)` from its metadata
while the rows are gone. The file's blocks in use (table segments and metadata) are listed by
DuckDB's own pragmas; a file shorter than its header plus its last used block is damaged.
Free blocks past the end are fine: DuckDB truncates them away at a checkpoint.

Why a sandbox: a read-only connection refuses writes to the store itself, but SQL can still
reach other files (`ATTACH 'other.duckdb' (READ_WRITE)`, the same through a hard link to the
store, `COPY ... TO`, `EXPORT DATABASE`, `read_csv` of any file) and load extensions. Two
layers stop that: only statement types that read are run (checked with DuckDB's own parser),
and the connection has external access off, extension autoloading off and its configuration
locked, so `SET` cannot undo any of it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ctxlab._errors import QueryRefusedError, StoreError

HEADER_BYTES = 3 * 4096
"""DuckDB's file header (one main header, two database headers) before the first block."""

SANDBOX: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "lock_configuration": True,
}
"""Connection settings for user SQL; `lock_configuration` last, so the others are set first."""

READING = ("SELECT", "EXPLAIN", "PRAGMA", "CALL")
"""Statement types user SQL may have. SELECT covers WITH, FROM-first, DESCRIBE, SHOW and
SUMMARIZE; PRAGMA and CALL are DuckDB's table-function forms (`PRAGMA table_info('turns')`),
harmless under the sandbox's locked configuration."""


def sandbox(memory_limit: str | None = None) -> dict[str, Any]:
    """The connection settings for user SQL, with DuckDB's `memory_limit` when given (set
    before `lock_configuration`, so the query cannot raise it)."""
    if memory_limit is None:
        return SANDBOX
    return {"memory_limit": memory_limit, **SANDBOX}


def run_limited(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[Any], timeout: float | None
) -> pa.Table:
    """`sql`'s result as an Arrow table, interrupted after `timeout` seconds (DuckDB has no
    statement timeout of its own: a timer calls `interrupt`, which ends the query with an
    `InterruptException` at its next check)."""
    if timeout is None:
        return con.sql(sql, params=params).to_arrow_table()
    timer = threading.Timer(timeout, con.interrupt)
    timer.daemon = True
    timer.start()
    try:
        return con.sql(sql, params=params).to_arrow_table()
    finally:
        timer.cancel()


def check_statements(sql: str, path: Path) -> None:
    """Refuse SQL that is empty, does not parse, or has a statement that is not a read."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise StoreError(f"{path}: {first_line(exc)}") from exc
    if not statements:
        raise QueryRefusedError(
            f"{path}: no SQL statement given; e.g. SELECT * FROM replay_summary"
        )
    for statement in statements:
        kind = statement.type.name
        if kind not in READING:
            raise QueryRefusedError(
                f"{path}: {kind} refused: queries only read the store (SELECT, WITH, DESCRIBE, "
                "SHOW, SUMMARIZE, EXPLAIN, PRAGMA, CALL); nothing is attached, copied, "
                "exported, loaded or written through them"
            )


def check_blocks(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Raise `StoreError` if the file is shorter than the blocks it uses (truncated)."""
    size = os.path.getsize(path)
    row = con.execute(
        "SELECT block_size FROM pragma_database_size() WHERE database_name = current_database()"
    ).fetchone()
    if row is None:
        return
    block_size = int(row[0])
    tables = con.execute(
        "SELECT table_name FROM duckdb_tables() "
        "WHERE database_name = current_database() AND schema_name = 'main' AND NOT temporary"
    ).fetchall()
    # One query over the metadata blocks and every table's blocks: a store is opened (and so
    # checked) by every command and on every `Store(...)`, and each query costs a round trip.
    parts = ["SELECT max(block_id) AS top FROM pragma_metadata_info()"]
    for (table,) in tables:
        quoted = '"' + table.replace('"', '""') + '"'
        parts.append(
            "SELECT max(greatest(block_id, list_max(coalesce(additional_block_ids, [])))) "
            f"FROM pragma_storage_info({_literal(quoted)}) WHERE persistent"
        )
    top = _aggregate(con, f"SELECT max(top) FROM ({' UNION ALL '.join(parts)})")
    used = [] if top is None else [int(top)]
    if not used:
        return
    need = HEADER_BYTES + (max(used) + 1) * block_size
    if size < need:
        raise StoreError(
            f"{path}: the store file is damaged (truncated: {size} bytes, its blocks need "
            f"{need}); it was left as it is: restore it from a copy or use another store file"
        )


def _literal(text: str) -> str:
    """`text` as an SQL string literal (table functions take constants, not parameters)."""
    return "'" + text.replace("'", "''") + "'"


def _aggregate(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    """The value of an aggregate query without GROUP BY, which returns exactly one row (a NULL
    over no rows), so its `fetchone()` is never None."""
    row = con.execute(sql).fetchone()
    assert row is not None, "an aggregate without GROUP BY returns one row"
    return row[0]


def first_line(exc: BaseException) -> str:
    """An error's first line (DuckDB adds context lines and a caret under the SQL)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
