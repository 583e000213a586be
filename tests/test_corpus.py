"""The real files of the corpus load with the counts a short script finds by reading them
directly, not through ctxlab.

They live in ../shared/data/corpus, beside the team's other real traces: files fetched from
public repositories are never committed to this one (each folder has its SOURCE.txt: repository,
commit, licence, producer). They are tested when that folder is present and skipped otherwise,
like every ../shared test.

Each `_count_*` function below reads one format's JSON with the standard library only and says
how many model calls, messages, recorded input tokens and recorded compactions the file holds;
ctxlab must agree.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import ctxlab
from tests.conftest import SHARED

DATA = Path(__file__).resolve().parent / "data"
SHARED_CORPUS = SHARED / "data" / "corpus"


def _json(path: Path) -> object:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def _count_any_agent(path: Path) -> dict[str, int]:
    """any-agent: one call per `call_llm` span; messages = the first call's input messages, one
    answer per call, and one result per `execute_tool` span a later call saw (started before
    the last call: a final tool run no call read is not in any context)."""
    spans = _json(path)["spans"]
    calls = sorted(
        (s for s in spans if s["attributes"].get("gen_ai.operation.name") == "call_llm"),
        key=lambda s: s["start_time"],
    )
    tools = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "execute_tool"]
    seen = [s for s in tools if s["start_time"] < calls[-1]["start_time"]]
    inputs = json.loads(calls[0]["attributes"]["gen_ai.input.messages"])
    return {
        "turns": len(calls),
        "messages": len(inputs) + len(calls) + len(seen),
        "input_tokens": sum(
            int(s["attributes"].get("gen_ai.usage.input_tokens", 0)) for s in calls
        ),
    }


def _count_openhands_resolver(path: Path) -> list[dict[str, int]]:
    """openhands-resolver lines: one call per agent action (every action but the first,
    the user's message); messages = every action and observation; calls = `metrics.costs`."""
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for text in lines:
            line = json.loads(text)
            actions = [e for e in line["history"] if "action" in e]
            observations = [e for e in line["history"] if "observation" in e]
            assert len(line["metrics"]["costs"]) == len(actions) - 1
            out.append({"turns": len(actions) - 1, "messages": len(actions) + len(observations)})
    return out


CORPUS = {
    path: _count_any_agent for path in sorted((SHARED_CORPUS / "any-agent").glob("*.json.gz"))
}
RESOLVER = SHARED_CORPUS / "openhands-resolver" / "output.jsonl.gz"
needs_corpus = pytest.mark.skipif(
    not SHARED_CORPUS.is_dir(), reason=f"the shared corpus is not at {SHARED_CORPUS}"
)


@pytest.mark.parametrize("path", sorted(CORPUS), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_file_loads_with_the_counts_read_directly(path: Path) -> None:
    expected = CORPUS[path](path)
    (trace,) = ctxlab.load(path)
    assert len(trace.turns) == expected["turns"]
    assert len(trace.messages) == expected["messages"]
    assert sum(t.input_tokens or 0 for t in trace.turns) == expected["input_tokens"]
    assert not any(
        "record no input messages" in note for note in trace.notes
    )  # rebuilt, and said so:
    assert any("any-agent" in note for note in trace.notes)


@needs_corpus
def test_any_agent_tool_results_answer_the_calls_that_asked() -> None:
    (trace,) = ctxlab.load(SHARED_CORPUS / "any-agent" / "LANGCHAIN_trace.json.gz")
    kinds = [type(m).__name__ for m in trace.messages]
    assert kinds == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "AIMessage",
    ]
    asked = trace.messages[2].tool_calls[0]
    assert asked["name"] == "get_current_time" and asked["args"] == {"timezone": "America/New_York"}
    assert trace.messages[3].tool_call_id == asked["id"]
    assert "2025" in trace.messages[3].content
    # each later call saw the earlier answer and tool result
    assert [t.position for t in trace.turns] == [2, 4, 6, 7]


@needs_corpus
def test_openhands_resolver_output_loads_with_the_counts_read_directly() -> None:
    expected = _count_openhands_resolver(RESOLVER)
    traces = ctxlab.load(RESOLVER)
    assert [t.trace_id for t in traces] == ["neubig/pr-viewer#5", "neubig/pr-viewer#1"]
    assert [{"turns": len(t.turns), "messages": len(t.messages)} for t in traces] == expected
    first = traces[0]
    assert first.format == "openhands-legacy"
    assert "<execute_bash>\ntouch LICENSE\n</execute_bash>" in first.messages[1].content
    assert first.messages[2].content.startswith("OBSERVATION:")
    assert all(t.inputs[-1] is not None for t in first.turns)


@needs_corpus
def test_the_corpus_table_in_the_docs_holds_the_counts_read_directly() -> None:
    """docs/formats.md's corpus rows say what the stdlib scripts above find."""
    docs = (DATA.parents[1] / "docs" / "formats.md").read_text()
    for path, count in CORPUS.items():
        row = next(line for line in docs.splitlines() if f"any-agent/{path.name} |" in line)
        cells = [c.strip() for c in row.strip("|").split("|")]
        expected = count(path)
        assert cells[4:7] == [
            str(expected["turns"]),
            str(expected["messages"]),
            f"{expected['input_tokens']:,}",
        ]


# ---- the shared corpus (../shared/data/corpus) ------------------------------------------------


def _lines(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(text) for text in handle if text.strip()]


def _count_claude_code(path: Path) -> list[dict[str, int]]:
    """Claude Code: one call per distinct `message.id` of the main thread's assistant lines
    (not `isSidechain`, not the `<synthetic>` model); its input tokens are its last line's
    usage (input + cache read + cache creation). Messages: one per assistant message id, one
    per string user message, one per `tool_result` block plus one for any other blocks of a
    user line; the `isCompactSummary` message is not history. Compactions: `compact_boundary`
    lines."""
    lines = _lines(path)
    main = [x for x in lines if x.get("type") in ("user", "assistant") and not x.get("isSidechain")]
    calls: dict[str, int] = {}
    ids: set[str] = set()
    messages = 0
    for line in main:
        message = line["message"]
        if line["type"] == "assistant":
            messages += message["id"] not in ids
            ids.add(message["id"])
            if message.get("model") != "<synthetic>":
                usage = message["usage"]
                calls[message["id"]] = (
                    usage["input_tokens"]
                    + usage.get("cache_read_input_tokens", 0)
                    + usage.get("cache_creation_input_tokens", 0)
                )
        elif not line.get("isCompactSummary"):
            content = message["content"]
            if isinstance(content, str):
                messages += 1
            else:
                results = sum(b.get("type") == "tool_result" for b in content)
                messages += results + (results < len(content))
    return [
        {
            "turns": len(calls),
            "messages": messages,
            "input_tokens": sum(calls.values()),
            "compactions": sum(x.get("subtype") == "compact_boundary" for x in lines),
        }
    ]


def _count_codex(path: Path) -> list[dict[str, int]]:
    """Codex: one call per `token_count` event whose `last_token_usage` differs from the
    previous event's (Codex writes each twice) and has input (the zero ones after a
    compaction are not calls). Messages: the base instructions, developer and user messages,
    one assistant message per call, one per tool output. Compactions: `compacted` lines."""
    lines = _lines(path)
    calls: list[int] = []
    last = None
    for line in lines:
        payload = line["payload"]
        if line["type"] == "event_msg" and payload.get("type") == "token_count" and payload["info"]:
            usage = payload["info"]["last_token_usage"]
            if usage != last and usage["input_tokens"] > 0:
                calls.append(usage["input_tokens"])
            last = usage
    items = [x["payload"] for x in lines if x["type"] == "response_item"]
    system = bool((lines[0]["payload"].get("base_instructions") or {}).get("text"))
    said = sum(i["type"] == "message" and i["role"] in ("developer", "user") for i in items)
    outputs = sum(i["type"] in ("function_call_output", "custom_tool_call_output") for i in items)
    return [
        {
            "turns": len(calls),
            "messages": system + said + len(calls) + outputs,
            "input_tokens": sum(calls),
            "compactions": sum(x["type"] == "compacted" for x in lines),
        }
    ]


def _count_inspect(path: Path) -> list[dict[str, int]]:
    """Inspect JSON log: one trace per sample; its calls are the model events outside scorer
    steps/spans (the grader's calls are the harness's); a call's whole input is its usage's
    `total_tokens` minus `output_tokens` (whether the provider counts cached tokens inside
    `input_tokens`, as OpenAI does, or beside it, as Anthropic does), or, where the writer
    kept no total (vitals), input + cache read + cache write; messages are `sample.messages`."""
    out = []
    for sample in _json(path)["samples"]:
        calls: list[int] = []
        scoring = 0
        for event in sample["events"]:
            kind = event["event"]
            if kind in ("step", "span_begin", "span_end") and event.get("type") == "scorer":
                scoring += 1 if kind == "span_begin" or event.get("action") == "begin" else -1
            elif kind == "model" and not scoring:
                usage = event["output"].get("usage") or {}
                parts = ("input_tokens", "input_tokens_cache_read", "input_tokens_cache_write")
                calls.append(
                    usage["total_tokens"] - usage["output_tokens"]
                    if "total_tokens" in usage
                    else sum(usage.get(key, 0) for key in parts)
                )
        out.append(
            {
                "turns": len(calls),
                "messages": len(sample["messages"]),
                "input_tokens": sum(calls),
                "compactions": 0,
            }
        )
    return out


def _count_mini_swe_agent(path: Path) -> list[dict[str, int]]:
    """mini-swe-agent: every message but the final `exit` record; one call per assistant
    message, its input tokens the `prompt_tokens` of the LiteLLM response it keeps."""
    messages = [m for m in _json(path)["messages"] if m["role"] != "exit"]
    calls = [m for m in messages if m["role"] == "assistant"]
    return [
        {
            "turns": len(calls),
            "messages": len(messages),
            "input_tokens": sum(m["extra"]["response"]["usage"]["prompt_tokens"] for m in calls),
            "compactions": 0,
        }
    ]


SHARED_FILES = {
    **{
        f"agentlogs-claudecode/{name}.jsonl.gz": _count_claude_code
        for name in ("compact", "crud", "images", "subagent", "todos")
    },
    **{f"agentlogs-codex/{name}.jsonl.gz": _count_codex for name in ("crud", "images")},
    **{
        f"codex-localpush/rollout-2026-02-23T{stamp}.jsonl.gz": _count_codex
        for stamp in (
            "12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a",
            "12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9",
            "12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a",
            "12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9",
            "13-19-38-019c8a70-dda7-7f33-98ea-f30553347322",
            "20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff",
        )
    },
    **{
        f"inspect-vitals/{name}.json.gz": _count_inspect
        for name in (
            "2025-03-24T10-39-36-05-00_simple-arithmetic_fQ9mYnqZFhtEuUenPpJgKL",
            "2025-04-07T11-00-30-05-00_arithmetic-with-tool_gKECTBvzvzgtPqQCd3cirF",
            "2025-06-04T10-45-58-05-00_system-prompt_FzH5aCHPGhLT6CGuF5Xdmj",
            "2025-06-18T10-09-15-05-00_An-R-Eval_e4763d5da8fe03a6cf4a90",
        )
    },
    **{
        f"mini-swe-agent/{name}.traj.json.gz": _count_mini_swe_agent
        for name in (
            "astropy__astropy-12907",
            "django__django-14752",
            "pvlib__pvlib-python-1606",
        )
    },
}
"""Every file of ../shared/data/corpus and the stdlib count of its format."""

COLUMNS = ("turns", "messages", "input_tokens", "compactions")
"""The docs table's count columns after the number of traces: sums over the traces."""

COMPACTED_CODEX = (
    "codex-localpush/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
)


@pytest.fixture
def corpus() -> Path:
    if not SHARED_CORPUS.is_dir():
        pytest.skip(f"the shared corpus is not at {SHARED_CORPUS} (set CTXLAB_SHARED)")
    return SHARED_CORPUS


def _loaded(path: Path) -> list[dict[str, int]]:
    """ctxlab's counts for each agent trace of a file (sample traces of an Inspect log)."""
    return [
        {
            "turns": len(t.turns),
            "messages": len(t.messages),
            "input_tokens": sum(turn.input_tokens or 0 for turn in t.turns),
            "compactions": len(t.compactions),
        }
        for t in ctxlab.load(path)
        if t.parent_trace_id is None
    ]


def test_the_shared_corpus_holds_every_listed_file_and_a_source(corpus: Path) -> None:
    listed = {Path(name) for name in SHARED_FILES} | {
        p.relative_to(corpus) for p in [*CORPUS, RESOLVER]
    }
    assert {p.relative_to(corpus) for p in corpus.glob("*/*.gz")} == listed
    for folder in {p.parent for p in listed}:
        assert (corpus / folder / "SOURCE.txt").is_file()


@pytest.mark.parametrize("name", sorted(SHARED_FILES))
def test_shared_corpus_file_loads_with_the_counts_read_directly(corpus: Path, name: str) -> None:
    path = corpus / name
    assert _loaded(path) == SHARED_FILES[name](path)


def test_shared_corpus_compactions_keep_what_the_harness_recorded(corpus: Path) -> None:
    (claude,) = ctxlab.load(corpus / "agentlogs-claudecode/compact.jsonl.gz")
    (boundary,) = [
        x
        for x in _lines(corpus / "agentlogs-claudecode/compact.jsonl.gz")
        if x.get("subtype") == "compact_boundary"
    ]
    (recorded,) = claude.compactions
    assert (
        (recorded.trigger, recorded.pre_tokens)
        == (
            boundary["compactMetadata"]["trigger"],
            boundary["compactMetadata"]["preTokens"],
        )
        == ("manual", 15808)
    )
    codex_file = corpus / COMPACTED_CODEX
    (codex,) = ctxlab.load(codex_file)
    (compaction,) = codex.compactions
    assert compaction.trigger == "auto" and compaction.pre_tokens == 212134
    # read from the file (its lines 1784-1787): the last call before the `compacted` line
    # recorded 209,950 input and 212,134 total tokens, the call the issue names
    assert codex.turns[compaction.turn - 1].input_tokens == 209950
    assert codex.turns[compaction.turn].compacted


def test_the_corpus_docs_table_holds_the_shared_counts_read_directly(corpus: Path) -> None:
    """docs/formats.md's rows for ../shared/data/corpus say what the stdlib scripts find."""
    docs = (DATA.parents[1] / "docs" / "formats.md").read_text()
    for name, count in SHARED_FILES.items():
        row = next(line for line in docs.splitlines() if f"corpus/{name} |" in line)
        cells = [c.strip() for c in row.strip("|").split("|")]
        expected = count(corpus / name)
        assert cells[3:8] == [
            str(len(expected)),
            *(f"{sum(e[key] for e in expected):,}" for key in COLUMNS),
        ], name


def test_a_claude_code_2_0_sidechain_is_the_task_calls_subagent(corpus: Path) -> None:
    """Claude Code 2.0 wrote the subagent into the session as `isSidechain` lines: one Task
    call in the main thread, one subagent call (its assistant message id) in the sidechain."""
    path = corpus / "agentlogs-claudecode/subagent.jsonl.gz"
    lines = _lines(path)
    tasks = [
        block["id"]
        for x in lines
        if x.get("type") == "assistant" and not x.get("isSidechain")
        for block in x["message"]["content"]
        if block.get("type") == "tool_use" and block["name"] == "Task"
    ]
    side = {x["message"]["id"] for x in lines if x.get("isSidechain") and x["type"] == "assistant"}
    (trace,) = ctxlab.load(path)
    (subagent,) = trace.subagents
    assert [subagent.parent_tool_call_id] == tasks
    assert {t.run_id for t in subagent.turns} == side


def _count_swe_agent(path: Path) -> list[dict[str, int]]:
    """SWE-agent 1.x: the history is the conversation, one call per assistant message; the
    steps record no input tokens."""
    history = _json(path)["history"]
    return [
        {
            "turns": sum(m["role"] == "assistant" for m in history),
            "messages": len(history),
            "input_tokens": 0,
            "compactions": 0,
        }
    ]


REAL_FILES = {
    "claude-code-session/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl.gz": _count_claude_code,
    "claude-code-session-compacted/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz": (
        _count_claude_code
    ),
    "codex-rollout/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz": (
        _count_codex
    ),
    "inspect-ai-log/2025-05-12T20-27-36-04-00_browser.json.gz": _count_inspect,
    "swe-agent-traj-function-calling-marshmallow/marshmallow-code__marshmallow-1867.traj.gz": (
        _count_swe_agent
    ),
}
"""Files of ../shared/data/real-traces whose formats the counters above read: the same
independent check on the team's own real traces."""


@pytest.mark.parametrize("name", sorted(REAL_FILES))
def test_shared_real_trace_loads_with_the_counts_read_directly(shared: Path, name: str) -> None:
    path = shared / "data" / "real-traces" / name
    assert _loaded(path) == REAL_FILES[name](path)
