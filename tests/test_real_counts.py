"""The rest of ../shared/data loads with the counts a short script finds by reading each file's
JSON directly, not through ctxlab (tests/test_corpus.py does the same for the Claude Code,
Codex, Inspect and SWE-agent files).

Per trace (an agent's own thread; a subagent is its own entry after its parent): the model
calls (ctxlab's turns plus the calls it keeps apart as `harness_calls`, such as a planner's or
a grader's separate prompts), the messages of the conversation, the recorded input tokens and
the recorded compactions. Skipped when ../shared/data is absent. The LangChain tracer files
under samples/ are synthetic (samples/README.md): counted for the reader's sake, not as
evidence of real use.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ctxlab

Counts = dict[str, int]


def _read(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        text = handle.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def _counts(calls: int, messages: int, input_tokens: int) -> Counts:
    return {"calls": calls, "messages": messages, "input_tokens": input_tokens, "compactions": 0}


def _langsmith_usage(patch: dict[str, Any]) -> int:
    """Input tokens of an LLM run as its patch records them: `outputs.usage_metadata`
    (wrap_openai), else the first generation's message `usage_metadata` (LangChain)."""
    outputs = patch.get("outputs") or {}
    usage = outputs.get("usage_metadata")
    if usage is None and outputs.get("generations"):
        first = outputs["generations"][0]
        first = first[0] if isinstance(first, list) else first
        usage = ((first.get("message") or {}).get("kwargs") or {}).get("usage_metadata")
    return int((usage or {}).get("input_tokens", 0))


def _count_langsmith_ops(path: Path) -> list[Counts]:
    """LangSmith ingestion ops: a `post` and a `patch` per run id, as a list or as
    {"post": [...], "patch": [...]}. LLM runs are grouped by the agent that made
    them (`extra.metadata.lc_agent_name`, none for the main agent, listed first); a group's
    messages are its longest input plus the answer to it."""
    data = _read(path)
    if isinstance(data, dict):
        ops = [("post", op) for op in data["post"]] + [("patch", op) for op in data["patch"]]
    else:  # the SDK's own ops say which they are; older dumps: a post has `run_type`
        ops = [(op.get("op") or ("post" if "run_type" in op else "patch"), op) for op in data]
    posts = {op["id"]: op for kind, op in ops if kind == "post"}
    patches = {op["id"]: op for kind, op in ops if kind == "patch"}
    groups: dict[str, list[dict[str, Any]]] = {}
    for post in sorted(posts.values(), key=lambda op: op["dotted_order"]):
        if post["run_type"] == "llm":
            agent = ((post.get("extra") or {}).get("metadata") or {}).get("lc_agent_name") or ""
            groups.setdefault(agent, []).append(post)
    out = []
    for agent in sorted(groups):
        runs = groups[agent]
        inputs = [run["inputs"]["messages"] for run in runs]
        inputs = [m[0] if m and isinstance(m[0], list) else m for m in inputs]
        out.append(
            _counts(
                len(runs),
                max(len(m) for m in inputs) + 1,
                sum(_langsmith_usage(patches[run["id"]]) for run in runs),
            )
        )
    return out


def _count_openhands_history(history: list[dict[str, Any]]) -> Counts:
    """OpenHands events: a model call per distinct `model_response` id among the actions'
    `tool_call_metadata` (parallel tool calls share one), plus one per agent `message` action
    without it (a text answer, no usage recorded). Messages: the `system` action, the user's
    `message` actions and error observations answering no tool call, one assistant message per
    call, one tool result per observation answering a tool call."""
    responses: dict[str, int] = {}
    texts = system = user = results = 0
    for event in history:
        meta = event.get("tool_call_metadata")
        if "observation" in event:
            # answering a tool call: a tool result; an error answering none (a malformed
            # call): a user message, as OpenHands' ConversationMemory sends it
            results += meta is not None
            user += meta is None and event["observation"] == "error"
        elif meta is not None:
            response = meta["model_response"]
            responses[response["id"]] = response["usage"]["prompt_tokens"]
        elif event.get("action") == "message":
            user += event["source"] == "user"
            texts += event["source"] == "agent"
        elif event.get("action") == "system":
            system += 1
    calls = len(responses) + texts
    return _counts(calls, system + user + calls + results, sum(responses.values()))


def _count_openhands(path: Path) -> list[Counts]:
    """An evaluation `output.jsonl` (one instance a line, its `history`) or a bare event list."""
    data = _read(path)
    if data and isinstance(data[0], dict) and "history" in data[0]:
        return [_count_openhands_history(line["history"]) for line in data]
    return [_count_openhands_history(data)]


def _indexed(attrs: dict[str, Any], prefix: str) -> int:
    """How many `prefix.N.` entries a flat attribute map holds."""
    return len({key[len(prefix) :].split(".")[0] for key in attrs if key.startswith(prefix)})


def _count_span_attributes(path: Path) -> list[Counts]:
    """One LLM span's attribute map: OpenInference (`llm.input_messages.N.*`,
    `llm.output_messages.N.*`, `llm.token_count.prompt`), OTel GenAI (`gen_ai.input.messages` /
    `gen_ai.output.messages` JSON lists) or its deprecated form (`gen_ai.prompt` JSON list,
    `gen_ai.completion` one object); usage in `gen_ai.usage.input_tokens`."""
    attrs = _read(path)
    if "llm.token_count.prompt" in attrs:
        messages = _indexed(attrs, "llm.input_messages.") + _indexed(attrs, "llm.output_messages.")
        return [_counts(1, messages, attrs["llm.token_count.prompt"])]
    if "gen_ai.input.messages" in attrs:
        said = json.loads(attrs["gen_ai.input.messages"])
        answers = json.loads(attrs["gen_ai.output.messages"])
    else:
        said, answers = json.loads(attrs["gen_ai.prompt"]), [json.loads(attrs["gen_ai.completion"])]
    return [_counts(1, len(said) + len(answers), attrs["gen_ai.usage.input_tokens"])]


def _count_managed_agents(path: Path) -> list[Counts]:
    """Anthropic Managed Agents SDK recording, `[method, payload]` a line: a call per
    `span.model_request_end` (input = input + cache creation + cache read tokens of its
    `model_usage`); messages: the agent's system prompt, the user's messages, one assistant
    message per call, one per tool result (built-in or MCP)."""
    lines = _read(path)
    events = [payload for _, payload in lines if isinstance(payload, dict) and "type" in payload]
    created = next(payload for method, payload in lines if method.endswith("sessions.create"))
    ends = [e["model_usage"] for e in events if e["type"] == "span.model_request_end"]
    tokens = sum(
        u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
        for u in ends
    )
    said = sum(e["type"] == "user.message" for e in events)
    results = sum(e["type"] in ("agent.tool_result", "agent.mcp_tool_result") for e in events)
    system = bool(created["agent"].get("system"))
    return [_counts(len(ends), system + said + len(ends) + results, tokens)]


FILES: dict[str, Callable[[Path], list[Counts]]] = {
    "real-traces/langsmith-runops-chat-langchain/run_ops_1efb27a4-5264-6908-9ab5-23fc3c60ae2d.jsonl.gz": _count_langsmith_ops,  # noqa: E501
    "real-traces/langsmith-wrap-openai-payloads/langsmith_py_wrap_openai_reasoning.json.gz": (
        _count_langsmith_ops
    ),
    "real-traces/langsmith-wrap-openai-payloads/langsmith_py_wrap_openai_stream.json.gz": (
        _count_langsmith_ops
    ),
    "real-traces/openhands-multiswebench-llama4/output.jsonl.gz": _count_openhands,
    "real-traces/openhands-multiswebench-llama4/basic_gui_mode.json.gz": _count_openhands,
    "real-traces/otel-genai-openinference-attr-fixtures/openinference_client_span_tool_calls.json.gz": _count_span_attributes,  # noqa: E501
    "real-traces/otel-genai-openinference-attr-fixtures/otel_genai_client_span_tool_calls.json.gz": _count_span_attributes,  # noqa: E501
    "real-traces/otel-genai-openinference-attr-fixtures/otel_genai_deprecated_client_span_tool_calls.json.gz": _count_span_attributes,  # noqa: E501
    "real-traces/anthropic-managed-agents-events/anthropic_managed_mcp_tools_reject.jsonl.gz": (
        _count_managed_agents
    ),
    "samples/langchain-tracer-ops_create_agent.json": _count_langsmith_ops,
    "samples/langchain-tracer-ops_deepagents_subagent.json": _count_langsmith_ops,
}
"""Every file of ../shared/data that tests/test_corpus.py does not count, and its counter."""


def _loaded(path: Path) -> list[Counts]:
    """ctxlab's counts: each trace the file loads as, each followed by its subagents."""
    out = []
    for root in ctxlab.load(path):
        for trace in (root, *root.subagents):
            calls = [*trace.turns, *(trace.harness_calls or [])]
            out.append(
                {
                    "calls": len(calls),
                    "messages": len(trace.messages),
                    "input_tokens": sum(call.input_tokens or 0 for call in calls),
                    "compactions": len(trace.compactions),
                }
            )
    return out


@pytest.mark.parametrize("name", sorted(FILES))
def test_shared_file_loads_with_the_counts_read_directly(shared: Path, name: str) -> None:
    path = shared / "data" / name
    assert _loaded(path) == FILES[name](path)


def test_every_shared_file_is_counted(shared: Path) -> None:
    """No file of real-traces/ or samples/ goes without an independent count (here or in
    tests/test_corpus.py)."""
    from tests.test_corpus import REAL_FILES

    data = shared / "data"
    found = {
        str(p.relative_to(data))
        for folder in ("real-traces", "samples")
        for p in (data / folder).rglob("*")
        if p.is_file()
        and p.name not in ("SOURCE.txt", "README.md")
        # a Claude Code session's subagent transcripts load with the session
        and "subagents" not in p.parts
    }
    counted = set(FILES) | {f"real-traces/{name}" for name in REAL_FILES}
    assert found - counted == set()


def _cells(counts: list[Counts], key: str) -> str:
    return " + ".join(f"{c[key]:,}" for c in counts)


def test_the_docs_table_holds_the_counts_read_directly(shared: Path) -> None:
    """docs/formats.md ("Independent counts: the rest of ../shared/data") says what the
    scripts find."""
    docs = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text()
    for name, count in FILES.items():
        row = next(line for line in docs.splitlines() if line.startswith(f"| {name} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        expected = count(shared / "data" / name)
        assert cells[3:8] == [
            str(len(expected)),
            *(_cells(expected, key) for key in ("calls", "messages", "input_tokens")),
            str(sum(c["compactions"] for c in expected)),
        ], name
