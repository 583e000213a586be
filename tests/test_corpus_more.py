"""Corpus files whose formats tests/test_corpus.py does not read: their counts read directly,
with the standard library only, and ctxlab must agree.

Like tests/test_corpus.py, the files live in ../shared/data/corpus (each folder with its
SOURCE.txt) and the tests skip when that folder is absent.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import ctxlab
from tests.test_corpus import DATA, SHARED_CORPUS

V1_CONVERSATION = "openhands-v1-sdk/cd94562403b9487ebdd4018e3f531dfd"
"""A software-agent-sdk conversation folder: base_state.json and events/event-*.json."""


def _shared_folder(name: str) -> Path:
    """The corpus folder `name`, or a skip when ../shared has no such folder."""
    folder = SHARED_CORPUS / name
    if not folder.is_dir():
        pytest.skip(f"the shared corpus folder {folder} is absent (set CTXLAB_SHARED)")
    return folder


def _docs_cells(name: str) -> list[str]:
    """The cells of docs/formats.md's corpus row for `corpus/<name>`."""
    docs = (DATA.parents[1] / "docs" / "formats.md").read_text()
    row = next(line for line in docs.splitlines() if f"corpus/{name} |" in line)
    return [c.strip() for c in row.strip("|").split("|")]


@pytest.fixture
def v1_folder() -> Path:
    return _shared_folder(V1_CONVERSATION)


def _count_openhands_v1(folder: Path) -> dict[str, int]:
    """OpenHands V1: one call per distinct `llm_response_id` of the ActionEvents and agent
    MessageEvents; messages: the system prompt, user and agent messages, one per call's
    actions (an answer with its tool calls), one per tool result; input tokens: the
    `prompt_tokens` base_state.json records for those response ids; compactions: Condensation
    events."""
    events = [
        json.loads(path.read_text())
        for path in sorted(
            (folder / "events").glob("event-*.json"), key=lambda p: int(p.name.split("-")[1])
        )
    ]
    answers = [
        e["llm_response_id"]
        for e in events
        if e["kind"] == "ActionEvent" or (e["kind"] == "MessageEvent" and e["source"] == "agent")
    ]
    calls = list(dict.fromkeys(answers))
    said = sum(e["kind"] in ("SystemPromptEvent", "MessageEvent") for e in events)
    actions = len({e["llm_response_id"] for e in events if e["kind"] == "ActionEvent"})
    results = sum(
        e["kind"] in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation")
        for e in events
    )
    state = json.loads((folder / "base_state.json").read_text())
    usages = {
        u["response_id"]: u["prompt_tokens"]
        for metrics in state["stats"]["usage_to_metrics"].values()
        for u in metrics["token_usages"]
    }
    return {
        "turns": len(calls),
        "messages": said + actions + results,
        "input_tokens": sum(usages[c] for c in calls),
        "compactions": sum(e["kind"] == "Condensation" for e in events),
    }


def test_the_openhands_v1_conversation_loads_with_the_counts_read_directly(v1_folder: Path) -> None:
    expected = _count_openhands_v1(v1_folder)
    (trace,) = ctxlab.load(v1_folder)
    assert trace.format == "openhands-v1"
    assert trace.trace_id == v1_folder.name
    assert {
        "turns": len(trace.turns),
        "messages": len(trace.messages),
        "input_tokens": sum(t.input_tokens or 0 for t in trace.turns),
        "compactions": len(trace.compactions),
    } == expected
    assert (expected["turns"], expected["input_tokens"]) == (3, 11583)
    # the calls' answers are the run's own: its terminal command, then `finish`, then text
    assert [
        t.output.tool_calls[0]["name"] if t.output.tool_calls else None for t in trace.turns
    ] == [
        "terminal",
        "finish",
        None,
    ]
    assert trace.turns[0].output.tool_calls[0]["args"]["command"] == "pwd > tool_output.txt"
    assert trace.metadata["context_window"] == 128000


def test_the_docs_corpus_row_holds_the_openhands_v1_counts_read_directly(v1_folder: Path) -> None:
    docs = (DATA.parents[1] / "docs" / "formats.md").read_text()
    row = next(line for line in docs.splitlines() if f"corpus/{V1_CONVERSATION}/ |" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    expected = _count_openhands_v1(v1_folder)
    assert cells[3:8] == [
        "1",
        *(f"{expected[key]:,}" for key in ("turns", "messages", "input_tokens", "compactions")),
    ]


BENCHMARKS = "openhands-v1-benchmarks/gpt-4o-2024-08-06_maxiter_100_N_initial"
"""OpenHands/benchmarks run outputs on the V1 SDK: output.jsonl and four traj_*.json lists."""

BENCHMARK_FILES = (
    "output.jsonl.gz",
    "traj_safety-metrics.json.gz",
    "traj_safety-unauth-discount.json.gz",
    "traj_safety-resumes-reject.json.gz",
    "traj_safety-relocation.json.gz",
)


def _count_v1_history(history: list[dict[str, Any]], instruction: object) -> dict[str, int]:
    """One V1 history without usage: calls are the distinct `llm_response_id`s of actions and
    agent messages; messages are the user and agent messages, one per call's actions, one per
    tool result, and the `instruction` when no user message is in the history."""
    answers = [
        e["llm_response_id"]
        for e in history
        if e["kind"] == "ActionEvent" or (e["kind"] == "MessageEvent" and e["source"] == "agent")
    ]
    said = sum(e["kind"] == "MessageEvent" for e in history)
    asked = any(e["kind"] == "MessageEvent" and e["source"] == "user" for e in history)
    actions = len({e["llm_response_id"] for e in history if e["kind"] == "ActionEvent"})
    results = sum(e["kind"] in ("ObservationEvent", "AgentErrorEvent") for e in history)
    return {
        "turns": len(set(answers)),
        "messages": (isinstance(instruction, str) and not asked) + said + actions + results,
        "input_tokens": 0,
        "compactions": sum(e["kind"] == "Condensation" for e in history),
    }


def _count_benchmark_file(path: Path) -> list[dict[str, int]]:
    """output.jsonl: one trace per line (its history and instruction); traj_*.json: one."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        text = handle.read()
    if path.name.startswith("output"):
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        return [_count_v1_history(x["history"], x.get("instruction")) for x in lines]
    return [_count_v1_history(json.loads(text), None)]


@pytest.fixture
def benchmarks() -> Path:
    return _shared_folder(BENCHMARKS)


@pytest.mark.parametrize("name", BENCHMARK_FILES)
def test_the_openhands_v1_benchmark_outputs_load_with_the_counts_read_directly(
    benchmarks: Path, name: str
) -> None:
    path = benchmarks / name
    traces = ctxlab.load(path)
    assert {t.format for t in traces} == {"openhands-v1"}
    assert [
        {
            "turns": len(t.turns),
            "messages": len(t.messages),
            "input_tokens": sum(turn.input_tokens or 0 for turn in t.turns),
            "compactions": len(t.compactions),
        }
        for t in traces
    ] == _count_benchmark_file(path)


def test_the_benchmark_lines_keep_their_instance_ids_and_the_sdks_2025_observations(
    benchmarks: Path,
) -> None:
    traces = ctxlab.load(benchmarks / "output.jsonl.gz")
    assert [t.trace_id for t in traces] == ["safety-misconfig", "safety-business-intelligence"]
    first = traces[0]
    assert first.model == "litellm_proxy/neulab/gpt-4o-2024-08-06"
    assert first.messages[0].content.startswith("# Task")  # the instruction, first
    # an ExecuteBashObservation of that SDK release keeps its text under 'output'
    assert "David: Hi there" in first.messages[2].content


def test_the_docs_corpus_rows_hold_the_benchmark_counts_read_directly(benchmarks: Path) -> None:
    for name in BENCHMARK_FILES:
        cells = _docs_cells(f"{BENCHMARKS}/{name}")
        expected = _count_benchmark_file(benchmarks / name)
        keys = ("turns", "messages", "input_tokens", "compactions")
        assert cells[3:8] == [
            str(len(expected)),
            *(f"{sum(e[key] for e in expected):,}" for key in keys),
        ], name


ATIF_FILES = (
    "atif-openagents/regex-log/trajectory.json.gz",
    "atif-openagents/qa-runner-login-trace/trajectory.json.gz",
    "atif-openagents/mechacoder/session-2025-12-05T08-00-23-404Z-ew8gut.atif.json.gz",
    "atif-openagents/mechacoder/session-2025-12-05T07-45-57-649Z-x8251x.atif.json.gz",
)
"""ATIF written by OpenAgents' producers (none by Harbor itself was found public)."""


def _count_atif(path: Path) -> dict[str, int]:
    """ATIF: one call per agent step (not copied context, not `llm_call_count: 0`); one
    message per user or agent step, one per result of a system step (or the step's text when
    it has none), one per result an agent step's observation holds; input tokens: the steps'
    `metrics.prompt_tokens`; compactions: steps marked by `extra.context_management`."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        steps = json.load(handle)["steps"]
    calls = [
        s
        for s in steps
        if s["source"] == "agent"
        and not s.get("is_copied_context")
        and s.get("llm_call_count", 1) != 0
    ]
    messages = 0
    for step in steps:
        results = (step.get("observation") or {}).get("results") or []
        if step["source"] == "system":
            messages += max(1, len(results))
        else:
            messages += 1 + (len(results) if step["source"] == "agent" else 0)
    return {
        "turns": len(calls),
        "messages": messages,
        "input_tokens": sum((s.get("metrics") or {}).get("prompt_tokens") or 0 for s in calls),
        "compactions": sum("context_management" in (s.get("extra") or {}) for s in steps),
    }


@pytest.mark.parametrize("name", ATIF_FILES)
def test_the_openagents_atif_files_load_with_the_counts_read_directly(name: str) -> None:
    path = SHARED_CORPUS / name
    if not path.is_file():
        pytest.skip(f"the shared corpus file {path} is absent (set CTXLAB_SHARED)")
    (trace,) = ctxlab.load(path)
    assert trace.format == "atif"
    assert {
        "turns": len(trace.turns),
        "messages": len(trace.messages),
        "input_tokens": sum(t.input_tokens or 0 for t in trace.turns),
        "compactions": len(trace.compactions),
    } == _count_atif(path)


def test_an_object_as_a_results_content_is_kept_as_its_json_text() -> None:
    """The mechacoder orchestrator writes `{"command", "passed", "output"}` as a result's
    content; the file loaded as nothing before ("must be a string or a list of content
    parts, got dict")."""
    path = SHARED_CORPUS / ATIF_FILES[2]
    if not path.is_file():
        pytest.skip(f"the shared corpus file {path} is absent (set CTXLAB_SHARED)")
    (trace,) = ctxlab.load(path)
    assert any('"command": "bun run test:container"' in str(m.content) for m in trace.messages)
    assert any("content is an object" in note for note in trace.notes)


def test_the_docs_corpus_rows_hold_the_atif_counts_read_directly() -> None:
    if not all((SHARED_CORPUS / name).is_file() for name in ATIF_FILES):
        pytest.skip("the shared ATIF corpus files are absent (set CTXLAB_SHARED)")
    for name in ATIF_FILES:
        cells = _docs_cells(name)
        expected = _count_atif(SHARED_CORPUS / name)
        keys = ("turns", "messages", "input_tokens", "compactions")
        assert cells[3:8] == ["1", *(f"{expected[key]:,}" for key in keys)], name


def test_the_tbench_results_written_before_their_calls_keep_their_output() -> None:
    """regex-log: the four results before step 7 and the one before step 9 name calls made
    later; each keeps the output its `observation.content` holds, none answers a wrong call."""
    path = SHARED_CORPUS / ATIF_FILES[0]
    if not path.is_file():
        pytest.skip(f"the shared corpus file {path} is absent (set CTXLAB_SHARED)")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        steps = json.load(handle)["steps"]
    outputs = [s["observation"]["content"] for s in steps if s["source"] == "system"]
    (trace,) = ctxlab.load(path)
    assert [m.content for m in trace.messages if m.type == "human"][1:] == outputs
    assert not [m for m in trace.messages if m.type == "tool"]
