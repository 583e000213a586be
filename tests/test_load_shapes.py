"""One conversation, every LangSmith export shape: each must load to the same trace."""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any

import pytest

import ctxlab
from tests.langsmith_shapes import (
    as_cli,
    as_sdk_dicts,
    as_tree,
    as_v2,
    as_webhook,
    merged_runs,
    write_json,
)

SAMPLE = Path(__file__).resolve().parents[1] / "traces" / "deepagents_short_session.jsonl.xz"


@pytest.fixture(scope="module")
def ops() -> list[dict[str, Any]]:
    with lzma.open(SAMPLE, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def expected(ops: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> dict:
    path = write_json(tmp_path_factory.mktemp("ops") / "ops.jsonl", ops, lines=True)
    (trace,) = ctxlab.load(path)
    return fingerprint(trace)


def fingerprint(trace: ctxlab.Trace) -> dict:
    """What must not depend on the export shape."""
    return {
        "messages": [(m.type, m.text, getattr(m, "tool_call_id", None)) for m in trace.messages],
        "calls": [c["name"] for m in trace.messages for c in getattr(m, "tool_calls", [])],
        "positions": [t.position for t in trace.turns],
        "subagents": [len(s.messages) for s in trace.subagents],
        "harness": len(trace.harness_calls),
        "model": trace.model,
        "tools": len(trace.tools),
    }


def test_sample_has_the_parts_shapes_must_keep(expected: dict) -> None:
    assert len(expected["positions"]) >= 3
    assert expected["subagents"] == []  # the short session delegates nothing
    assert expected["tools"] > 0


def test_ops_as_json_document(ops: list, expected: dict, tmp_path: Path) -> None:
    (trace,) = ctxlab.load(write_json(tmp_path / "ops.json", ops))
    assert fingerprint(trace) == expected


def test_post_patch_payload(ops: list, expected: dict, tmp_path: Path) -> None:
    body = {
        "post": [{k: v for k, v in o.items() if k != "op"} for o in ops if o["op"] == "post"],
        "patch": [{k: v for k, v in o.items() if k != "op"} for o in ops if o["op"] == "patch"],
    }
    (trace,) = ctxlab.load(write_json(tmp_path / "payload.json", body))
    assert fingerprint(trace) == expected
    assert trace.format == "langsmith-ops"


def test_sdk_run_dicts_json_and_jsonl_gz(ops: list, expected: dict, tmp_path: Path) -> None:
    runs = as_sdk_dicts(merged_runs(ops))
    assert " " in runs[0]["start_time"]  # default=str datetimes, as users dump them
    for path in (
        write_json(tmp_path / "runs.json", runs),
        write_json(tmp_path / "runs.jsonl.gz", runs, lines=True, gz=True),
    ):
        (trace,) = ctxlab.load(path)
        assert fingerprint(trace) == expected
        assert trace.format == "langsmith-runs"


def test_nested_child_runs(ops: list, expected: dict, tmp_path: Path) -> None:
    (trace,) = ctxlab.load(write_json(tmp_path / "tree.json", as_tree(merged_runs(ops))))
    assert fingerprint(trace) == expected
    assert trace.format == "langsmith-run-tree"


def test_webhook_deliveries_split_over_files(ops: list, expected: dict, tmp_path: Path) -> None:
    for i, payload in enumerate(as_webhook(merged_runs(ops), pieces=3)):
        write_json(tmp_path / f"delivery_{i}.json", payload)
    traces = ctxlab.load(tmp_path)
    assert len(traces) == 1 and not traces.errors
    assert fingerprint(traces[0]) == expected
    assert traces[0].format == "langsmith-webhook"


def test_langsmith_cli_export(ops: list, expected: dict, tmp_path: Path) -> None:
    (trace,) = ctxlab.load(write_json(tmp_path / "t.jsonl", as_cli(merged_runs(ops)), lines=True))
    want = dict(expected, tools=0)  # the CLI keeps no invocation_params
    assert fingerprint(trace) == want
    assert trace.format == "langsmith-cli"


def test_v2_api_runs(ops: list, expected: dict, tmp_path: Path) -> None:
    (trace,) = ctxlab.load(write_json(tmp_path / "v2.json", as_v2(merged_runs(ops))))
    assert fingerprint(trace) == expected
    assert trace.format == "langsmith-v2"


def test_cli_export_without_io_names_the_flag(ops: list, tmp_path: Path) -> None:
    runs = as_cli(merged_runs(ops))
    for r in runs:
        r.pop("inputs")
        r.pop("outputs")
    with pytest.raises(ctxlab.TraceFormatError, match="--full"):
        ctxlab.load(write_json(tmp_path / "noio.jsonl", runs, lines=True))
