"""OpenHands event streams and evaluation output load as traces
(ctxlab/_ingest/formats/openhands.py)."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab._replay.policies import catalog

REAL = "data/real-traces/openhands-multiswebench-llama4"

TOOLS = [{"type": "function", "function": {"name": "execute_bash", "parameters": {}}}]


def response(rid: str, calls: list[tuple[str, str, dict[str, Any]]], prompt: int) -> dict:
    """A raw OpenAI ChatCompletion as OpenHands stores it in `tool_call_metadata`."""
    return {
        "id": rid,
        "model": "claude-sonnet-4",
        "choices": [{
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": f"thinking {rid}",
                "tool_calls": [
                    {"id": cid, "type": "function",
                     "function": {"name": name, "arguments": json.dumps(args)}}
                    for cid, name, args in calls
                ],
            },
        }],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 10,
                  "prompt_tokens_details": {"cached_tokens": prompt // 2},
                  "cache_creation_input_tokens": 7},
    }  # fmt: skip


def action(eid: int, rid: str, resp: dict, call: str, command: str) -> dict:
    calls = len(resp["choices"][0]["message"]["tool_calls"])
    return {
        "id": eid, "timestamp": f"2025-05-01T10:00:{eid:02d}", "source": "agent",
        "action": "run", "args": {"command": command},
        "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": call,
                               "model_response": resp,
                               "total_calls_in_response": calls},
    }  # fmt: skip


def observation(eid: int, cause: int, call: str, output: str) -> dict:
    return {
        "id": eid, "source": "agent", "observation": "run", "cause": cause, "content": output,
        "extras": {"metadata": {"exit_code": 0, "suffix": "\n[done]"}},
        "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": call},
    }  # fmt: skip


def stream() -> list[dict]:
    """system, user, a response with two calls, their results, one more call, a condensation
    forgetting the first exchange with a summary, and a last call."""
    r1 = response("r1", [("c1", "execute_bash", {"command": "ls"}),
                         ("c2", "execute_bash", {"command": "pwd"})], 1000)  # fmt: skip
    r2 = response("r2", [("c3", "execute_bash", {"command": "cat a"})], 1500)
    r3 = response("r3", [("c4", "execute_bash", {"command": "cat b"})], 900)
    return [
        {"id": 0, "source": "agent", "action": "system",
         "args": {"content": "You are OpenHands.", "tools": TOOLS}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "Fix the bug."}},
        {"id": 2, "source": "environment", "observation": "agent_state_changed", "content": "",
         "extras": {"agent_state": "running"}},
        action(3, "r1", r1, "c1", "ls"),
        action(4, "r1", r1, "c2", "pwd"),
        observation(5, 3, "c1", "a b"),
        observation(6, 4, "c2", "/w"),
        action(7, "r2", r2, "c3", "cat a"),
        observation(8, 7, "c3", "A" * 50),
        {"id": 9, "timestamp": "2025-05-01T10:00:09", "source": "agent", "action": "condensation",
         "args": {"forgotten_event_ids": [3, 4, 5, 6], "summary": "Listed files.",
                  "summary_offset": 2}},
        action(10, "r3", r3, "c4", "cat b"),
        observation(11, 10, "c4", "B"),
    ]  # fmt: skip


def write(tmp_path: Path, value: Any, name: str = "events.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value))
    return path


@pytest.mark.parametrize(
    ("instance", "messages", "turns", "tokens", "errors"),
    [
        ("ponylang__ponyc-4595", 47, 23, 565158, 0),
        ("ponylang__ponyc-4593", 68, 33, 410169, 1),
        ("ponylang__ponyc-4588", 101, 49, 938015, 1),
    ],
)
def test_eval_output_counts(
    shared: Path, instance: str, messages: int, turns: int, tokens: int, errors: int
) -> None:
    """45/65/98 events carry tool_call_metadata (SOURCE.txt): half actions, half results, one
    turn per model response; recorded input equals the file's accumulated prompt tokens."""
    traces = {t.trace_id: t for t in ctxlab.load(shared / REAL / "output.jsonl.gz")}
    assert list(traces) == ["ponylang__ponyc-4595", "ponylang__ponyc-4593", "ponylang__ponyc-4588"]
    trace = traces[instance]
    raw = next(
        json.loads(line)
        for line in gzip.open(shared / REAL / "output.jsonl.gz", "rt")
        if json.loads(line)["instance_id"] == instance
    )
    with_meta = sum(1 for e in raw["history"] if e.get("tool_call_metadata"))
    calls = sum(len(m.tool_calls) for m in trace.messages if isinstance(m, AIMessage))
    results = sum(1 for m in trace.messages if isinstance(m, ToolMessage))
    assert calls + results == with_meta
    assert trace.format == "openhands"
    assert len(trace.messages) == messages
    assert len(trace.turns) == turns
    assert trace.recorded_input_tokens == tokens
    assert tokens == raw["metrics"]["accumulated_token_usage"]["prompt_tokens"]
    assert (
        sum(t.output_tokens or 0 for t in trace.turns)
        == (raw["metrics"]["accumulated_token_usage"]["completion_tokens"])
    )
    assert trace.model == "meta-llama/llama-4-maverick"
    assert len(trace.tools) == 4
    assert isinstance(trace.messages[0], SystemMessage) and trace.system_prompt
    assert isinstance(trace.messages[1], HumanMessage)
    assert sum(isinstance(m, HumanMessage) for m in trace.messages) == 1 + errors
    assert trace.compactions == [] and trace.subagents == []
    assert [t.position for t in trace.turns] == [
        i for i, m in enumerate(trace.messages) if isinstance(m, AIMessage)
    ]
    assert all(t.inputs == tuple(trace.messages[: t.position]) for t in trace.turns)
    assert all(t.started_at and t.started_at.startswith("2025-04-30") for t in trace.turns)
    assert any("rebuilt from the events" in n for n in trace.notes)
    assert any("response_latencies" in n for n in trace.notes) == bool(errors)


def test_run_output_is_what_the_model_read(shared: Path) -> None:
    trace = ctxlab.load(shared / REAL / "output.jsonl.gz")[0]
    first = next(m for m in trace.messages if isinstance(m, ToolMessage))
    assert first.tool_call_id == "toolu_01" and first.name == "execute_bash"
    assert first.text.endswith(
        "[The command completed with exit code 0.]\n"
        "[Current working directory: /workspace/ponylang__ponyc__0.1]\n"
        "[Command finished with exit code 0]"
    )


def test_event_list_counts(shared: Path) -> None:
    """basic_gui_mode.json: 18 events, 4 tool calls and a closing agent message (5 calls), no
    system action, Anthropic cache reads and writes through LiteLLM."""
    (trace,) = ctxlab.load(shared / REAL / "basic_gui_mode.json.gz")
    assert trace.trace_id == "basic_gui_mode"
    assert [m.type for m in trace.messages] == ["human"] + ["ai", "tool"] * 4 + ["ai"]
    assert len(trace.turns) == 5
    assert trace.model == "claude-3-5-sonnet-20241022"
    assert [t.input_tokens for t in trace.turns] == [3439, 3601, 4769, 5488, None]
    assert [t.cache_read_tokens for t in trace.turns] == [0, 3435, 3595, 4763, None]
    assert [t.cache_write_tokens for t in trace.turns] == [3435, 160, 1168, 719, None]
    assert trace.recorded_input_tokens == 17297
    assert trace.system_prompt is None and trace.tools == []
    assert any("system prompt is not in the file" in n for n in trace.notes)
    assert any("1 of 5 model calls have no recorded usage" in n for n in trace.notes)


@pytest.mark.parametrize("policy", ["deepagents", "openhands-llm-summarizing"])
def test_real_traces_replay(shared: Path, policy: str) -> None:
    for trace in ctxlab.load(shared / REAL / "output.jsonl.gz"):
        replay = ctxlab.replay(trace, catalog.get(policy))
        assert replay.turns.height == len(trace.turns)
        assert replay.turns["recorded_input_tokens"].sum() == trace.recorded_input_tokens


def test_multi_call_response_and_condensation(tmp_path: Path) -> None:
    (trace,) = ctxlab.load(write(tmp_path, stream()))
    types = [m.type for m in trace.messages]
    assert types == ["system", "human", "ai", "tool", "tool", "ai", "tool", "ai", "tool"]
    assert len(trace.turns) == 3
    first = trace.turns[0].output
    assert first is not None and [c["id"] for c in first.tool_calls] == ["c1", "c2"]
    assert first.tool_calls[1]["args"] == {"command": "pwd"}
    assert trace.messages[3].text == "a b\n[done]\n[Command finished with exit code 0]"
    assert [t.input_tokens for t in trace.turns] == [1000, 1500, 900]
    assert [t.cache_read_tokens for t in trace.turns] == [500, 750, 450]
    assert [t.cache_write_tokens for t in trace.turns] == [7, 7, 7]
    assert trace.tools == TOOLS
    assert [t.compacted for t in trace.turns] == [False, False, True]
    (comp,) = trace.compactions
    assert (comp.turn, comp.kind, comp.trigger) == (2, "condensation", "auto")
    assert (comp.pre_tokens, comp.post_tokens) == (1500, 900)
    assert comp.summary == "Listed files." and comp.started_at == "2025-05-01T10:00:09"
    assert trace.recorded_compactions == [2]
    # The last call saw: system, user, the summary (offset 2), then the kept r2 exchange.
    last = trace.turns[2].inputs
    assert [m.type for m in last] == ["system", "human", "human", "ai", "tool"]
    assert last[2].text == "Listed files." and last[2] is trace.inserted[0]
    assert len(trace.inserted) == 1 and trace.inserted[0] not in trace.messages
    assert trace.turns[1].inputs == tuple(trace.messages[:5])
    assert any("condensations applied" in n for n in trace.notes)
    for name in ("deepagents", "openhands-llm-summarizing", "openhands-observation-masking"):
        replay = ctxlab.replay(trace, catalog.get(name))
        assert replay.turns.height == 3


def test_condense_observation_and_range(tmp_path: Path) -> None:
    """Older streams: a `condense` observation carries the summary; a range forgets events."""
    events = stream()
    events[9] = {"id": 9, "source": "agent", "action": "condensation", "args": {
        "forgotten_events_start_id": 3, "forgotten_events_end_id": 6}}  # fmt: skip
    events.insert(10, {"id": 12, "source": "environment", "observation": "condense",
                       "content": "Summary so far."})  # fmt: skip
    (trace,) = ctxlab.load(write(tmp_path, events))
    assert [c.turn for c in trace.compactions] == [2, 2]
    assert {c.summary for c in trace.compactions} == {None, "Summary so far."}
    last = trace.turns[2].inputs
    assert [m.type for m in last] == ["system", "human", "ai", "tool", "human"]
    assert last[-1].text == "Summary so far." and trace.inserted == [last[-1]]
    assert len(trace.messages) == 9


def test_eval_line_wraps_events(tmp_path: Path) -> None:
    line = {"instance_id": "x__y-1", "instruction": "Fix", "history": stream(),
            "metadata": {"agent_class": "CodeActAgent", "llm_config": {"model": "m"}},
            "metrics": {}}  # fmt: skip
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps({**line, "instance_id": "x__y-2"}) + "\n")
    traces = ctxlab.load(path)
    assert [t.trace_id for t in traces] == ["x__y-1", "x__y-2"]
    assert traces[0].metadata["agent_class"] == "CodeActAgent"


def test_plain_agent_actions_and_accumulated_usage(tmp_path: Path) -> None:
    """No native tool calling: actions without tool_call_metadata are assistant text, their
    observations user messages; usage from llm_metrics.accumulated_token_usage differences."""
    events = [
        {"id": 1, "source": "user", "action": "message", "args": {"content": "Hi"}},
        {"id": 2, "source": "agent", "action": "run", "message": "Running ls", "args": {},
         "llm_metrics": {"accumulated_token_usage": {"prompt_tokens": 100}}},
        {"id": 3, "source": "agent", "observation": "run", "cause": 2, "content": "a b"},
        {"id": 4, "source": "agent", "action": "message", "args": {"content": "Done."},
         "llm_metrics": {"accumulated_token_usage": {"prompt_tokens": 250}}},
    ]  # fmt: skip
    (trace,) = ctxlab.load(write(tmp_path, events))
    assert [m.type for m in trace.messages] == ["human", "ai", "human", "ai"]
    assert [t.input_tokens for t in trace.turns] == [100, 150]
    assert any("accumulated_token_usage" in n for n in trace.notes)
    assert any("without tool_call_metadata" in n for n in trace.notes)


BAD: list[tuple[str, Any, str]] = [
    ("event not an object", lambda ev: ev.__setitem__(3, "run"), "event #3"),
    ("args not an object", lambda ev: ev[1].__setitem__("args", [1]), "event 1: field 'args'"),
    ("user content not text", lambda ev: ev[1]["args"].__setitem__("content", 5),
     "event 1: field 'args.content' must be a string"),
    ("model_response not an object",
     lambda ev: ev[3]["tool_call_metadata"].__setitem__("model_response", "x"),
     "event 3: field 'tool_call_metadata.model_response' must be an object"),
    ("no choices", lambda ev: ev[3]["tool_call_metadata"]["model_response"].__setitem__(
        "choices", []), "event 3: field 'model_response.choices'"),
    ("negative usage", lambda ev: ev[3]["tool_call_metadata"]["model_response"]["usage"]
     .__setitem__("prompt_tokens", -3), "event 3: field 'usage.prompt_tokens'"),
    ("bad arguments", lambda ev: ev[7]["tool_call_metadata"]["model_response"]["choices"][0][
        "message"]["tool_calls"][0]["function"].__setitem__("arguments", "{oops"),
     "event 7: field 'model_response.choices[0].message.tool_calls[].function.arguments'"),
    ("orphan result", lambda ev: ev[8]["tool_call_metadata"].__setitem__("tool_call_id", "zz"),
     "event 8: observation answers tool call 'zz'"),
    ("kind not text", lambda ev: ev[2].__setitem__("observation", 3), "event 2: field 'action'"),
    ("forgotten ids", lambda ev: ev[9]["args"].__setitem__("forgotten_event_ids", 3),
     "event 9: field 'args.forgotten_event_ids'"),
    ("forgotten id object", lambda ev: ev[9]["args"].__setitem__("forgotten_event_ids", [{}]),
     "event 9: field 'args.forgotten_event_ids'"),
    ("summary offset", lambda ev: ev[9]["args"].__setitem__("summary_offset", "2"),
     "event 9: field 'args.summary_offset'"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "mutate", "expected"), BAD, ids=[b[0] for b in BAD])
def test_bad_event_lists_are_located(tmp_path: Path, case: str, mutate: Any, expected: str) -> None:
    events = copy.deepcopy(stream())
    mutate(events)
    path = write(tmp_path, events)
    with pytest.raises(ctxlab.TraceFormatError) as info:
        ctxlab.load(path)
    assert str(path) in str(info.value) and expected in str(info.value)


def test_bad_eval_lines_name_the_line(tmp_path: Path) -> None:
    good = {"instance_id": "a", "history": stream()}
    bad = copy.deepcopy(good)
    bad["history"][5]["tool_call_metadata"]["tool_call_id"] = 7
    path = tmp_path / "output.jsonl"
    path.write_bytes(orjson.dumps(good) + b"\n" + orjson.dumps(bad) + b"\n")
    with pytest.raises(ctxlab.TraceFormatError) as info:
        ctxlab.load(path)
    assert "line 2" in str(info.value)
    assert "event 5: field 'tool_call_metadata.tool_call_id' must be a string" in str(info.value)
    path.write_bytes(orjson.dumps(good) + b"\n" + orjson.dumps({**good, "history": {}}) + b"\n")
    with pytest.raises(ctxlab.TraceFormatError, match=r"line 2: field 'history' must be a list"):
        ctxlab.load(path)
