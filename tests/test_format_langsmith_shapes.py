"""More LangSmith shapes: runs copied from the UI, bulk-export Parquet, dotted-order-only trees.

Every shape is written from the same recorded deepagents session (traces/, ingestion ops) or
from the shared real exports, and must load to what the JSON run dicts load to.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats import langsmith_copied
from ctxlab._store.sweep import policy_named
from tests.langsmith_shapes import as_parquet, as_sdk_dicts, merged_runs, write_json
from tests.test_load_shapes import fingerprint

SAMPLE = Path(__file__).resolve().parents[1] / "traces" / "deepagents_short_session.jsonl.xz"
ROOT_ID = "1712e46a-6a0b-5869-a924-7af1833f2d56"
DATED_MODEL = "claude-sonnet-4-5-20250929"  # response_metadata.model_name of every AI message


@pytest.fixture(scope="module")
def runs() -> list[dict[str, Any]]:
    with lzma.open(SAMPLE, "rt", encoding="utf-8") as fh:
        return merged_runs([json.loads(line) for line in fh if line.strip()])


@pytest.fixture(scope="module")
def json_trace(runs: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory):
    (trace,) = ctxlab.load(write_json(tmp_path_factory.mktemp("json") / "runs.json", runs))
    return trace


def copy_of(run: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """What the LangSmith UI's copy gives for a run: its payload, no run record around it."""
    metadata = (run.get("extra") or {}).get("metadata") or {}
    return {
        "inputs": run["inputs"],
        "outputs": run["outputs"],
        "metadata": metadata,
        "langsmith": {},
        **extra,
    }


def named(runs: list[dict[str, Any]], name: str, run_type: str) -> list[dict[str, Any]]:
    return [r for r in runs if r["name"] == name and r["run_type"] == run_type]


def texts(messages: list[Any]) -> list[tuple[str, str, str | None]]:
    return [(m.type, m.text, getattr(m, "tool_call_id", None)) for m in messages]


# ----------------------------------------------------------------------------- copied runs


def test_copied_graph_run_is_the_state_conversation(runs, json_trace, tmp_path: Path) -> None:
    root = runs[0]
    assert root["name"] == "LangGraph" and len(root["inputs"]["messages"]) == 1
    (trace,) = ctxlab.load(write_json(tmp_path / "copied.json", copy_of(root)))
    assert trace.format == "langsmith-copied-run"
    assert trace.trace_id.startswith("copied-") and trace.trace_id != ROOT_ID
    # The graph's output state repeats its input: 12 messages, the system prompt is not in it.
    assert len(trace.messages) == 12 == len(json_trace.messages) - 1
    assert texts(trace.messages) == texts(json_trace.messages[1:])
    assert len(trace.turns) == 6 == len(json_trace.turns)
    assert [t.position for t in trace.turns] == [t.position - 1 for t in json_trace.turns]
    for turn in trace.turns:
        assert trace.messages[turn.position] is turn.output
        assert list(turn.inputs) == trace.messages[: turn.position]
    # Usage rides on the AI messages of the state, the same numbers the llm runs recorded.
    assert [t.input_tokens for t in trace.turns] == [t.input_tokens for t in json_trace.turns]
    assert trace.recorded_input_tokens == json_trace.recorded_input_tokens == 24_476
    assert {t.model for t in trace.turns} == {DATED_MODEL} and trace.provider == "anthropic"
    assert trace.notes[0] == langsmith_copied.COPIED_NOTE
    assert any("per-call model input is not recorded" in n for n in trace.notes)
    assert any("holds no system prompt" in n for n in trace.notes)
    assert any("No tool schemas" in n for n in trace.notes)
    assert trace.summary()["notes"] == trace.notes


def test_copied_long_graph_state_keeps_history_but_not_compactions(tmp_path: Path) -> None:
    """deepagents keeps the whole history in its state: a copy of the long session's root run
    has every message, but the compactions its model calls recorded are not in it."""
    long_sample = SAMPLE.with_name("deepagents_long_session.jsonl.xz")
    with lzma.open(long_sample, "rt", encoding="utf-8") as fh:
        long_runs = merged_runs([json.loads(line) for line in fh if line.strip()])
    (recorded,) = ctxlab.load(write_json(tmp_path / "runs.json", long_runs))
    assert (len(recorded.messages), len(recorded.turns)) == (319, 159)
    assert recorded.recorded_compactions == [104, 124, 125] and len(recorded.subagents) == 1
    (trace,) = ctxlab.load(write_json(tmp_path / "copied.json", copy_of(long_runs[0])))
    assert len(trace.messages) == 318
    differ = [
        i
        for i, (mine, theirs) in enumerate(zip(trace.messages, recorded.messages[1:], strict=True))
        if texts([mine]) != texts([theirs])
    ]
    # The state keeps the harness's offload stubs; the run export restored the originals.
    assert len(differ) == recorded.metadata["restored_tool_results"] == 4
    assert all(trace.messages[i].text.startswith("Tool result too large") for i in differ)
    assert any(n.startswith("4 tool results in the copied state") for n in trace.notes)
    assert (len(trace.turns), trace.recorded_compactions, trace.subagents) == (159, [], [])
    assert [t.input_tokens for t in trace.turns] == [t.input_tokens for t in recorded.turns]


def test_copied_state_with_a_summary(tmp_path: Path) -> None:
    state = [
        {"role": "user", "content": "Here is a summary of the conversation to date: fixed x."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "assistant", "content": "done"},
    ]
    copied = {"inputs": {"messages": state[:3]}, "outputs": {"messages": state}, "metadata": {}}
    (trace,) = ctxlab.load(write_json(tmp_path / "summary.json", copied))
    assert [m.type for m in trace.messages] == ["ai", "tool", "ai"]
    assert [m.text for m in trace.inserted] == [state[0]["content"]]
    assert [(t.position, t.compacted) for t in trace.turns] == [(0, True), (2, False)]
    assert trace.recorded_compactions == [0] and trace.model is None
    assert any("holds a summary" in n for n in trace.notes)
    assert any("No model name" in n for n in trace.notes)
    assert any("No recorded token usage" in n for n in trace.notes)


def test_copied_id_is_a_stable_hash_of_the_content(runs, tmp_path: Path) -> None:
    copied = copy_of(runs[0])
    reordered = dict(reversed(list(copied.items())))
    first = ctxlab.load(write_json(tmp_path / "a.json", copied))[0].trace_id
    again = ctxlab.load(write_json(tmp_path / "b.json.gz", reordered, gz=True))[0].trace_id
    assert first == again
    changed = copy_of(runs[0], name="LangGraph")
    assert ctxlab.load(write_json(tmp_path / "c.json", changed))[0].trace_id != first


def test_copied_node_run_adds_the_update_to_the_state(runs, json_trace, tmp_path: Path) -> None:
    """A `model` node: the state in, a Command's update (or a plain update) out."""
    node = named(runs, "model", "chain")[1]
    assert len(node["inputs"]["messages"]) == 3
    update = node["outputs"]["output"][0]["update"]
    for outputs in (node["outputs"], update):
        copied = {**copy_of(node), "outputs": outputs}
        (trace,) = ctxlab.load(write_json(tmp_path / "node.json", copied))
        kinds = [type(m) for m in trace.messages]
        assert kinds == [HumanMessage, AIMessage, ToolMessage, AIMessage]
        assert [t.position for t in trace.turns] == [1, 3]
        recorded = [t.input_tokens for t in json_trace.turns[:2]]
        assert [t.input_tokens for t in trace.turns] == recorded == [3664, 3725]


def test_copied_model_call_keeps_its_exact_input(runs, json_trace, tmp_path: Path) -> None:
    call = named(runs, "ScriptedChatModel", "llm")[2]
    assert isinstance(call["inputs"]["messages"][0], list)  # LangChain's batched [[...]]
    (trace,) = ctxlab.load(write_json(tmp_path / "llm.json", copy_of(call)))
    (turn,) = trace.turns
    recorded = json_trace.turns[2]
    assert texts(list(turn.inputs)) == texts(list(recorded.inputs))
    assert isinstance(trace.messages[0], SystemMessage) and len(trace.messages) == 7
    assert turn.output is trace.messages[-1]
    assert (turn.model, turn.provider) == ("claude-sonnet-4-5", "anthropic")  # ls_model_name
    assert (turn.input_tokens, turn.cache_read_tokens, turn.cache_write_tokens) == (
        recorded.input_tokens,
        recorded.cache_read_tokens,
        recorded.cache_write_tokens,
    )
    assert trace.metadata["root_run_id"] == trace.trace_id
    assert any("one model call" in n for n in trace.notes)
    assert not any("system prompt" in n for n in trace.notes)
    # Without ls_model_name the output's response_metadata names the model.
    bare = copy_of(call)
    bare["metadata"] = {k: v for k, v in bare["metadata"].items() if k != "ls_model_name"}
    (trace,) = ctxlab.load(write_json(tmp_path / "bare.json", bare))
    assert trace.model == DATED_MODEL


def test_list_and_jsonl_of_copies(runs, tmp_path: Path) -> None:
    graph = copy_of(runs[0])
    call = copy_of(named(runs, "ScriptedChatModel", "llm")[0])
    listed = ctxlab.load(write_json(tmp_path / "copies.json", [graph, call, graph]))
    assert [len(t.turns) for t in listed] == [6, 1]  # an identical copy twice is one run
    assert len({t.trace_id for t in listed}) == 2
    lines = ctxlab.load(write_json(tmp_path / "copies.jsonl", [graph, call], lines=True))
    assert [t.trace_id for t in lines] == [t.trace_id for t in listed]


def test_copied_trace_replays(runs, tmp_path: Path) -> None:
    (trace,) = ctxlab.load(write_json(tmp_path / "copied.json", copy_of(runs[0])))
    result = ctxlab.replay(trace, policy_named("deepagents"))
    assert len(result.calls) == len(trace.turns) == 6


def _load_error(path: Path) -> str:
    with pytest.raises(TraceFormatError) as info:
        ctxlab.load(path)
    return str(info.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"inputs": {"messages": "hi"}, "outputs": {}, "metadata": {}},
            "field inputs.messages: expected a list of messages; got str",
        ),
        (
            {
                "inputs": {"messages": [{"role": "user", "content": 3}]},
                "outputs": {},
                "metadata": {},
            },
            "inputs.messages:",
        ),
        (
            {"inputs": {"messages": []}, "outputs": [1], "metadata": {}},
            "field 'outputs': expected a JSON object; got list",
        ),
        (
            {"inputs": {"messages": []}, "outputs": {}, "metadata": "x"},
            "field 'metadata': expected a JSON object; got str",
        ),
        ({"inputs": {"q": 1}, "outputs": {"a": 2}, "langsmith": {}}, "no messages: expected"),
        (
            [
                {
                    "inputs": {"messages": [{"role": "user", "content": "hi"}]},
                    "outputs": {},
                    "metadata": {},
                },
                {"inputs": 5},
            ],
            "item 1: expected a run copied from the LangSmith UI",
        ),
        (
            {
                "inputs": {"messages": [{"role": "tool", "tool_call_id": "t9", "content": "x"}]},
                "outputs": {},
                "metadata": {},
            },
            "tool result for call 't9' has no matching tool call",
        ),
        (
            {
                "inputs": {"messages": [[{"role": "user", "content": "hi"}]]},
                "outputs": {"generations": [[{"message": 7}]]},
                "metadata": {},
            },
            "output message",
        ),
    ],
)
def test_bad_copies_are_located(value: Any, expected: str, tmp_path: Path) -> None:
    path = write_json(tmp_path / "bad.json", value)
    message = _load_error(path)
    assert message.startswith(str(path)) and expected in message


def test_bad_copy_in_jsonl_names_the_line(runs, tmp_path: Path) -> None:
    bad = {"inputs": {"messages": "x"}, "outputs": {}, "metadata": {}}
    path = write_json(tmp_path / "bad.jsonl", [copy_of(runs[0]), bad], lines=True)
    assert f"{path}, line 2: field inputs.messages" in _load_error(path)


# ----------------------------------------------------------------------------- Parquet


def test_parquet_export_loads_to_the_json_trace(runs, json_trace, tmp_path: Path) -> None:
    (trace,) = ctxlab.load(as_parquet(runs, tmp_path / "runs.parquet"))
    assert fingerprint(trace) == fingerprint(json_trace)
    assert trace.format == json_trace.format == "langsmith-runs"
    for mine, theirs in zip(trace.turns, json_trace.turns, strict=True):
        assert mine.started_at == theirs.started_at
        assert (mine.input_tokens, mine.cache_write_tokens, mine.model) == (
            theirs.input_tokens,
            theirs.cache_write_tokens,
            theirs.model,
        )
    # the bulk export has no `serialized` column, so the model's own profile is not in it
    assert "model_profile" in json_trace.metadata and "model_profile" not in trace.metadata
    json_metadata = {k: v for k, v in json_trace.metadata.items() if k != "model_profile"}
    assert trace.metadata == json_metadata
    assert trace.notes == json_trace.notes == []  # exact inputs, tools, usage and model
    assert trace.recorded_input_tokens == 24_476


def test_parquet_files_merge_with_each_other_and_json(runs, json_trace, tmp_path: Path) -> None:
    """A bulk export writes one file per partition: one trace can span several."""
    folder = tmp_path / "export"
    folder.mkdir()
    third = len(runs) // 3
    as_parquet(runs[:third], folder / "part-0.parquet")
    as_parquet(runs[third : 2 * third], folder / "part-1.parquet")
    write_json(folder / "rest.json", runs[2 * third :])
    (trace,) = ctxlab.load(folder)
    assert fingerprint(trace) == fingerprint(json_trace)


def test_parquet_of_sdk_dumps_and_shared_real_export(runs, shared: Path, tmp_path: Path) -> None:
    """`Run.dict()` spellings (space-separated times) and the real chat-langchain export."""
    sdk = as_sdk_dicts(runs)
    (from_json,) = ctxlab.load(write_json(tmp_path / "sdk.json", sdk))
    (from_parquet,) = ctxlab.load(as_parquet(sdk, tmp_path / "sdk.parquet"))
    assert fingerprint(from_parquet) == fingerprint(from_json)
    real = shared / "data/real-traces/langsmith-runops-chat-langchain"
    (source,) = real.glob("*.jsonl.gz")
    with __import__("gzip").open(source, "rt", encoding="utf-8") as fh:
        real_runs = merged_runs([json.loads(line) for line in fh if line.strip()])
    (expected,) = ctxlab.load(real)
    (trace,) = ctxlab.load(as_parquet(real_runs, tmp_path / "chat.parquet"))
    assert fingerprint(trace) == fingerprint(expected)
    # Exact counts of the real export (tests/test_load_shared.py): 8 messages, 2 agent
    # turns, 6 harness calls, no usage recorded.
    assert (len(trace.messages), len(trace.turns), len(trace.harness_calls)) == (8, 2, 6)
    assert trace.recorded_input_tokens is None and trace.model == "gpt-4o-mini"
    assert (
        trace.notes
        == expected.notes
        == [
            "No tool schemas are recorded: counted as zero tokens.",
            "No recorded token usage: input tokens are counted, not read.",
        ]
    )


def test_parquet_that_is_not_a_langsmith_export(tmp_path: Path) -> None:
    path = tmp_path / "other.parquet"
    pl.DataFrame({"span_id": ["a"], "attributes": ["{}"]}).write_parquet(path)
    message = _load_error(path)
    assert message.startswith(f"{path}: Parquet file is not a LangSmith bulk export")
    assert "missing columns id, run_type, inputs, outputs, trace_id or dotted_order" in message
    assert "got columns span_id, attributes" in message


def test_bad_parquet_cells_are_located(runs, tmp_path: Path) -> None:
    good = as_parquet(runs[:4], tmp_path / "good.parquet")
    frame = pl.read_parquet(good)
    broken = frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 2)
        .then(pl.lit('{"messages": [1,'))
        .otherwise(pl.col("inputs"))
        .alias("inputs")
    )
    path = tmp_path / "broken.parquet"
    broken.write_parquet(path)
    assert "row 2: column 'inputs': malformed JSON" in _load_error(path)
    listed = frame.with_columns(pl.lit("[1, 2]").alias("outputs"))
    listed.write_parquet(path)
    assert "row 0: column 'outputs': expected a JSON object; got list" in _load_error(path)
    frame.head(0).write_parquet(path)
    assert "LangSmith bulk export has no rows" in _load_error(path)
    path.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])
    assert "unreadable Parquet" in _load_error(path)


# ----------------------------------------------------------------------------- root run


def test_dotted_order_only_tree_records_the_real_root(runs, tmp_path: Path) -> None:
    unlinked = [{**r, "parent_run_id": None} for r in runs]
    assert all(r.get("dotted_order") for r in unlinked)
    (trace,) = ctxlab.load(write_json(tmp_path / "unlinked.json", unlinked))
    assert trace.metadata["root_run_id"] == ROOT_ID
    llm_ids = {r["id"] for r in runs if r["run_type"] == "llm"}
    assert trace.metadata["root_run_id"] not in llm_ids
    # Nor trace_id to fall back on: the dotted orders alone link the tree.
    bare = [{k: v for k, v in r.items() if k != "trace_id"} for r in unlinked]
    (trace,) = ctxlab.load(write_json(tmp_path / "bare.json", bare))
    assert trace.trace_id == trace.metadata["root_run_id"] == ROOT_ID
    # The root run itself left out of the export: its id is the dotted orders' first segment.
    (trace,) = ctxlab.load(write_json(tmp_path / "rootless.json", bare[1:]))
    assert trace.metadata["root_run_id"] == ROOT_ID


def test_linked_tree_and_subagent_roots(runs, shared: Path, tmp_path: Path) -> None:
    (trace,) = ctxlab.load(write_json(tmp_path / "runs.json", runs))
    assert trace.metadata["root_run_id"] == ROOT_ID
    path = shared / "data/samples/langchain-tracer-ops_deepagents_subagent.json"
    (trace,) = ctxlab.load(path)
    (sub,) = trace.subagents
    records = orjson.loads(path.read_bytes())
    ops = records if isinstance(records, list) else [*records["post"], *records["patch"]]
    by_id = {o["id"]: o for o in ops if o.get("run_type")}
    root = by_id[trace.metadata["root_run_id"]]
    assert not root.get("parent_run_id") and root["run_type"] == "chain"
    # A subagent's root is the outermost run inside the `task` tool run that spawned it.
    sub_root = by_id[sub.metadata["root_run_id"]]
    spawner = by_id[sub_root["parent_run_id"]]
    assert spawner["run_type"] == "tool" and spawner["name"] == "task"
