"""Rewrite one set of LangSmith runs into every export shape users have.

The shapes follow shared/research/trace-formats.md §1.3: `Run.dict()` dumps with
`default=str`, JSONL, nested `child_runs` trees, webhook deliveries split over files (no
`parent_run_id`), the `langsmith` CLI flattened export, the v2 API shape and post/patch
ingestion ops. Tests load every shape and expect the same conversation.
"""

from __future__ import annotations

import copy
import gzip
import json
import warnings
from pathlib import Path
from typing import Any


def merged_runs(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs from ingestion ops, merged by id in first-seen order (what list_runs returns)."""
    runs: dict[str, dict[str, Any]] = {}
    for op in ops:
        body = {k: v for k, v in op.items() if k != "op"}
        runs.setdefault(body["id"], {}).update({k: v for k, v in body.items() if v is not None})
    return list(runs.values())


def as_sdk_dicts(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What `[r.dict() for r in client.list_runs(...)]` dumped with `default=str` looks like."""
    from langsmith.schemas import Run

    out = []
    for run in runs:
        fields = {k: v for k, v in run.items() if k in Run.model_fields}
        fields.setdefault("start_time", "2026-01-01T00:00:00+00:00")
        fields.setdefault("inputs", {})
        model = Run(**fields)
        with warnings.catch_warnings():  # users still call the deprecated .dict(); so do we
            warnings.simplefilter("ignore", DeprecationWarning)
            dumped = model.dict()
        out.append(json.loads(json.dumps(dumped, default=str)))
    return out


def as_tree(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """`read_run(root, load_child_runs=True)`: one nested run."""
    nodes = {r["id"]: {**copy.deepcopy(r), "child_runs": []} for r in runs}
    root = None
    for node in nodes.values():
        parent = node.get("parent_run_id")
        if parent:
            nodes[parent]["child_runs"].append(node)
        else:
            root = node
    for node in nodes.values():
        node.pop("parent_run_id", None)
        node.pop("trace_id", None) if node is not root else None
    assert root is not None
    return root


def as_webhook(runs: list[dict[str, Any]], pieces: int = 2) -> list[dict[str, Any]]:
    """Automation-webhook deliveries: runs split over payloads, root last, no parent_run_id."""
    body = [{k: v for k, v in r.items() if k != "parent_run_id"} for r in runs]
    root, rest = body[0], body[1:]
    size = max(1, len(rest) // pieces)
    chunks = [rest[i : i + size] for i in range(0, len(rest), size)]
    chunks[-1].append(root)
    return [{"rule_id": "r1", "start_time": "x", "end_time": "y", "runs": c} for c in chunks]


def as_cli(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`langsmith trace export --full`: flattened, `run_id`, `custom_metadata`, no dotted_order."""
    out = []
    for r in runs:
        usage = (r.get("extra") or {}).get("metadata", {}).get("usage_metadata") or {}
        out.append(
            {
                "run_id": r["id"],
                "trace_id": r["trace_id"],
                "name": r["name"],
                "run_type": r["run_type"],
                "parent_run_id": r.get("parent_run_id"),
                "start_time": r.get("start_time"),
                "end_time": r.get("end_time"),
                "status": "success",
                "custom_metadata": (r.get("extra") or {}).get("metadata", {}),
                "token_usage": {
                    "prompt_tokens": usage.get("input_tokens"),
                    "completion_tokens": usage.get("output_tokens"),
                },
                "inputs": r.get("inputs"),
                "outputs": r.get("outputs"),
                "error": None,
            }
        )
    return out


def as_v2(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """v2 API runs: upper-case enums, `parent_run_ids` only, top-level metadata."""
    by_id = {r["id"]: r for r in runs}
    out = []
    for r in runs:
        ancestors = []
        parent = r.get("parent_run_id")
        while parent:
            ancestors.insert(0, parent)
            parent = by_id[parent].get("parent_run_id")
        extra = dict(r.get("extra") or {})
        metadata = extra.pop("metadata", {})
        out.append(
            {
                "id": r["id"],
                "trace_id": r["trace_id"],
                "project_id": "p",
                "name": r["name"],
                "run_type": r["run_type"].upper(),
                "status": "SUCCESS",
                "parent_run_ids": ancestors,
                "is_root": not ancestors,
                "start_time": r.get("start_time"),
                "metadata": metadata,
                "extra": extra,
                "inputs": r.get("inputs"),
                "outputs": r.get("outputs"),
            }
        )
    return out


def write_json(path: Path, value: Any, *, lines: bool = False, gz: bool = False) -> Path:
    text = "\n".join(json.dumps(v) for v in value) + "\n" if lines else json.dumps(value)
    data = text.encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


BULK_EXPORT_JSON = ("inputs", "outputs", "extra", "events", "tags", "parent_run_ids")
"""Columns LangSmith's bulk export writes as JSON text."""


def as_parquet(runs: list[dict[str, Any]], path: Path) -> Path:
    """A bulk-export Parquet file: one row per run, timestamps typed, blobs as JSON text,
    plus the bookkeeping columns the export adds (status, is_root, tenant_id, ...)."""
    from datetime import datetime

    import polars as pl

    def when(value: Any) -> datetime | None:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None

    rows = []
    for r in runs:
        row: dict[str, Any] = {
            "id": r["id"],
            "trace_id": r.get("trace_id"),
            "parent_run_id": r.get("parent_run_id"),
            "dotted_order": r.get("dotted_order"),
            "is_root": not r.get("parent_run_id"),
            "name": r.get("name"),
            "run_type": r.get("run_type"),
            "status": "success",
            "error": r.get("error"),
            "start_time": when(r.get("start_time")),
            "end_time": when(r.get("end_time")),
            "prompt_tokens": r.get("prompt_tokens"),
            "completion_tokens": r.get("completion_tokens"),
            "total_tokens": r.get("total_tokens"),
            "total_cost": 0.0,
            "session_id": "b6fc0000-0000-0000-0000-000000000000",
            "tenant_id": "7a3e0000-0000-0000-0000-000000000000",
        }
        for name in BULK_EXPORT_JSON:
            value = r.get(name)
            row[name] = None if value is None else json.dumps(value)
        rows.append(row)
    schema = {"start_time": pl.Datetime("us", "UTC"), "end_time": pl.Datetime("us", "UTC")}
    pl.DataFrame(rows, schema_overrides=schema, infer_schema_length=None).write_parquet(path)
    return path
