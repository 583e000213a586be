"""LangSmith ingestion ops as the JS SDK writes them: `patch` entries without `id`, naming their
run by `trace_id` and `dotted_order` (whose last segment ends in the run id).

The shared chat-langchain ops (Python SDK, one run record per line) are rewritten by the test
into one `{"post": [...], "patch": [...]}` batch whose patches carry no `id`; ctxlab must read
the same traces from both.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import ctxlab
from tests.conftest import SHARED

OPS = SHARED / "data" / "real-traces" / "langsmith-runops-chat-langchain"


def _js_batch(source: Path, target: Path) -> Path:
    posts, patches = [], []
    started: dict[str, dict] = {}
    with gzip.open(source, "rt", encoding="utf-8") as lines:
        for text in lines:
            record = json.loads(text)
            if "start_time" in record:
                posts.append(record)
                started[record["id"]] = record
            else:
                post = started[record["id"]]
                patch = {k: v for k, v in record.items() if k != "id"}
                patch["trace_id"], patch["dotted_order"] = post["trace_id"], post["dotted_order"]
                patches.append(patch)
    target.write_text(json.dumps({"post": posts, "patch": patches}))
    return target


def _shape(traces: list[ctxlab.Trace]) -> list[tuple]:
    return [
        (t.trace_id, len(t.turns), len(t.messages), [x.input_tokens for x in t.turns])
        for t in traces
    ]


def test_js_patches_join_their_runs_by_dotted_order(tmp_path) -> None:
    if not OPS.is_dir():
        pytest.skip(f"shared data not found at {SHARED}")
    source = next(OPS.glob("*.jsonl.gz"))
    batch = _js_batch(source, tmp_path / "js_ops.json")
    assert all("id" not in p for p in json.loads(batch.read_text())["patch"])
    original, js = ctxlab.load(source), ctxlab.load(batch)
    assert _shape(js) == _shape(original)
    outputs = [t.output.content for t in js[0].turns if t.output is not None]
    assert outputs == [t.output.content for t in original[0].turns if t.output is not None]


def test_a_patch_without_id_or_dotted_order_is_named_as_the_file_names_it(tmp_path) -> None:
    path = tmp_path / "ops.json"
    post = {
        "id": "1efb27a4-5264-6908-9ab5-23fc3c60ae2d",
        "name": "llm",
        "run_type": "llm",
        "trace_id": "1efb27a4-5264-6908-9ab5-23fc3c60ae2d",
        "start_time": "2024-12-04T19:59:29.374537",
        "inputs": {"messages": [{"role": "user", "content": "hi"}]},
    }
    patch = {"trace_id": post["trace_id"], "end_time": "2024-12-04T19:59:30", "outputs": {}}
    path.write_text(json.dumps({"post": [post], "patch": [patch]}))
    with pytest.raises(ctxlab.TraceFormatError) as caught:
        ctxlab.load(path)
    message = str(caught.value)
    assert "patch[0]: no 'id', and no dotted_order to take it from" in message
    assert "end_time, outputs, trace_id" in message
