"""SWE-agent `.traj` files load: the real 1.x function-calling demonstration with exact counts
(its per-step views show SWE-agent's own observation masking), synthetic 0.x and `query`
trajectories, and located errors for malformed files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab._ingest.formats import swe_agent
from ctxlab._messages import message_text

MARSHMALLOW = (
    "data/real-traces/swe-agent-traj-function-calling-marshmallow/"
    "marshmallow-code__marshmallow-1867.traj.gz"
)


def test_real_trajectory_exact_counts(shared: Path) -> None:
    traces = ctxlab.load(shared / MARSHMALLOW)
    assert len(traces) == 1
    trace = traces[0]
    assert trace.format == "swe-agent"
    assert trace.trace_id == "marshmallow-code__marshmallow-1867"
    assert trace.model == "replay"  # a demonstration replayed by SWE-agent's replay model
    # history: system, issue, then 13 x (assistant tool call, tool observation)
    kinds = [type(m) for m in trace.messages]
    assert kinds == [SystemMessage, HumanMessage, *[AIMessage, ToolMessage] * 13]
    assert len(trace.turns) == 13
    assert trace.subagents == [] and trace.compactions == [] and trace.inserted == []
    assert [t.position for t in trace.turns] == list(range(2, 28, 2))
    assert [len(t.inputs) for t in trace.turns] == list(range(2, 28, 2))
    # last_n_observations(n=5): from step 6 on, the oldest observations are elided
    assert trace.recorded_compactions == [6, 7, 8, 9, 10, 11, 12]
    assert trace.recorded_input_tokens is None
    assert trace.metadata["model_stats"] == {
        "tokens_sent": 0,
        "tokens_received": 0,
        "api_calls": 13,
        "instance_cost": 0,
    }
    assert trace.metadata["exit_status"] == "submitted"
    masked = trace.turns[6].inputs[3]
    assert masked.content == "Old environment output: (7 lines omitted)"
    assert masked.tool_call_id == trace.messages[3].tool_call_id
    assert trace.messages[3].content.startswith("AUTHORS.rst")  # the full history keeps it
    last = trace.turns[12].inputs
    elided = [m for m in last if isinstance(m, ToolMessage) and m.content.startswith("Old env")]
    assert len(elided) == 7
    for turn in trace.turns:
        assert trace.messages[turn.position] is turn.output
        assert [type(m) for m in turn.inputs] == kinds[: turn.position]
    assert trace.turns[0].output.tool_calls == [
        {
            "name": "bash",
            "args": {"command": "ls -F"},
            "id": "call_9diWc1DYm4RLmPfHgIaP2wd",
            "type": "tool_call",
        }
    ]
    assert any("info.model_stats" in n for n in trace.notes)


def test_real_trajectory_replays(shared: Path) -> None:
    trace = ctxlab.load(shared / MARSHMALLOW)[0]
    assert ctxlab.replay(trace, "deepagents").turns.height == 13
    masked = ctxlab.replay(trace, "swe-agent-masking")
    assert masked.turns.height == 13
    # the preset elides observations at exactly the steps SWE-agent's own processor did
    assert sorted(set(masked.events["turn"].to_list())) == trace.recorded_compactions


# -- synthetic files ------------------------------------------------------------------------


def _write(tmp_path: Path, doc: Any, name: str = "run.traj") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _old_traj() -> dict[str, Any]:
    """SWE-agent 0.x: text actions in the assistant messages, observations as user turns."""
    history = [
        {
            "role": "system",
            "content": "SETTING: you are an autonomous programmer",
            "agent": "primary",
        },
        {
            "role": "user",
            "content": "Here is a demonstration: ...",
            "agent": "primary",
            "is_demo": True,
        },
        {"role": "user", "content": "ISSUE: fix it", "agent": "primary"},
        {
            "role": "assistant",
            "content": "Look.\n```\nls\n```",
            "thought": "Look.",
            "action": "ls\n",
            "agent": "primary",
        },
        {"role": "user", "content": "a.py\n(Open file: n/a)", "agent": "primary"},
        {
            "role": "assistant",
            "content": "Done.\n```\nsubmit\n```",
            "thought": "Done.",
            "action": "submit\n",
            "agent": "primary",
        },
    ]
    steps = [
        {
            "action": "ls\n",
            "observation": "a.py",
            "response": history[3]["content"],
            "thought": "Look.",
            "state": "{}",
        },
        {
            "action": "submit\n",
            "observation": "diff",
            "response": history[5]["content"],
            "thought": "Done.",
            "state": "{}",
        },
    ]
    return {
        "environment": "swe_main",
        "trajectory": steps,
        "history": history,
        "info": {
            "exit_status": "submitted",
            "model_stats": {
                "tokens_sent": 900,
                "tokens_received": 40,
                "api_calls": 3,
                "instance_cost": 0.01,
            },
        },
    }


def test_old_trajectory_without_views(tmp_path: Path) -> None:
    trace = ctxlab.load(_write(tmp_path, _old_traj(), "pydicom-1458.traj"))[0]
    assert trace.trace_id == "pydicom-1458"
    assert len(trace.messages) == 6 and len(trace.turns) == 2
    assert [t.position for t in trace.turns] == [3, 5]
    assert trace.turns[1].inputs == tuple(trace.messages[:5])
    assert trace.recorded_compactions == [] and trace.model is None
    assert trace.metadata["model_stats"]["tokens_sent"] == 900
    assert any("SWE-agent 0.x" in n for n in trace.notes)
    assert any("3 API calls for 2 steps" in n for n in trace.notes)
    assert any("model name is not recorded" in n for n in trace.notes)
    for policy in ("deepagents", "swe-agent-masking"):
        assert ctxlab.replay(trace, policy).turns.height == 2


def _long_old_traj(steps: int) -> dict[str, Any]:
    """A SWE-agent 0.x run of `steps` calls: system prompt, a demonstration (a user turn
    marked `is_demo`), the instance, then text actions each answered by a user turn of i + 2
    lines."""
    doc = _old_traj()
    history = doc["history"][:3]
    for i in range(steps):
        history.append(
            {"role": "assistant", "content": f"Step {i}.\n```\nls\n```", "agent": "primary"}
        )
        if i < steps - 1:
            lines = "\n".join(f"file{i}_{j}.py" for j in range(i + 2))
            history.append({"role": "user", "content": lines, "agent": "primary"})
    doc["history"] = history
    doc["trajectory"] = [
        {"action": "ls\n", "observation": "", "response": "", "thought": "", "state": "{}"}
        for _ in range(steps)
    ]
    return doc


def _swe_agent_0_view(history: list[dict[str, Any]], n: int) -> list[str]:
    """What SWE-agent 0.x's `LastNObservations(n)` sends, written here from its
    `last_n_history` (sweagent/agent/history_processors.py at v0.7.0), independently of
    ctxlab: every user turn that is not a demonstration counts; the first and the last n are
    kept, the others say "Old output omitted (N lines)"."""
    users = [e for e in history if e["role"] == "user" and not e.get("is_demo", False)]
    out, seen = [], 0
    for e in history:
        if e["role"] != "user" or e.get("is_demo", False):
            out.append(e["content"])
            continue
        seen += 1
        if seen == 1 or seen > len(users) - n:
            out.append(e["content"])
        else:
            out.append(f"Old output omitted ({len(e['content'].splitlines())} lines)")
    return out


@pytest.mark.parametrize(("policy", "n"), [("swe-agent-masking", 5), ("observation-masking", 3)])
def test_old_trajectory_masks_its_user_turns_as_swe_agent_0_did(
    tmp_path: Path, policy: str, n: int
) -> None:
    """0.x's observations are user turns: the masking presets elide them as 0.x did, request
    by request, keeping the demonstration, the instance and the last n."""
    doc = _long_old_traj(12)
    trace = ctxlab.load(_write(tmp_path, doc))[0]
    assert trace.metadata["swe_agent"] == "0.x"
    assert trace.metadata["observations"] == [2, *range(4, 4 + 2 * 11, 2)]
    preset = ctxlab.policies.get(policy, n=n) if policy == "observation-masking" else policy
    replayed = ctxlab.replay(trace, preset)
    events = replayed.event_list
    # masking starts once the observations before a call outnumber the instance and the last n
    assert [e.turn for e in events] == list(range(n + 1, 12))
    requests = ctxlab.Requests(replayed)
    for turn in trace.turns:
        sent = [message_text(r.message) for r in requests.at(turn.index)]
        assert sent == _swe_agent_0_view(doc["history"][: turn.position], n)


def _call(i: int, command: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": f"step {i}",
        "agent": "main",
        "message_type": "action",
        "tool_calls": [
            {
                "type": "function",
                "id": f"c{i}",
                "function": {"name": "bash", "arguments": json.dumps({"command": command})},
            }
        ],
    }


def _obs(i: int, text: str) -> dict[str, Any]:
    return {
        "role": "tool",
        "content": text,
        "agent": "main",
        "message_type": "observation",
        "tool_call_ids": [f"c{i}"],
    }


def _query_traj() -> dict[str, Any]:
    """SWE-agent 1.x with `query` (the exact input of each step) and per-step output tokens."""
    head = [
        {
            "role": "system",
            "content": [{"type": "text", "text": "system", "cache_control": {"type": "ephemeral"}}],
            "agent": "main",
        },
        {"role": "user", "content": "issue", "agent": "main"},
    ]
    history = [*head, _call(0, "ls"), _obs(0, "big output"), _call(1, "cat a"), _obs(1, "more")]
    masked = {**_obs(0, "Old environment output: (1 lines omitted)")}
    steps = [
        {
            "action": "ls",
            "observation": "big output",
            "response": "step 0",
            "thought": "step 0",
            "query": head,
            "output_tokens": 7,
        },
        {
            "action": "cat a",
            "observation": "more",
            "response": "step 1",
            "thought": "step 1",
            "query": [*head, _call(0, "ls"), masked],
            "output_tokens": 9,
        },
    ]
    config = {
        "agent": {"model": {"name": "claude-sonnet-4-20250514"}},
        "problem_statement": {"id": "org__repo-1"},
    }
    return {
        "trajectory": steps,
        "history": history,
        "info": {},
        "replay_config": json.dumps(config),
    }


def test_query_is_the_exact_input(tmp_path: Path) -> None:
    trace = ctxlab.load(_write(tmp_path, _query_traj()))[0]
    assert trace.trace_id == "org__repo-1" and trace.model == "claude-sonnet-4-20250514"
    assert [t.output_tokens for t in trace.turns] == [7, 9]
    assert [t.compacted for t in trace.turns] == [False, True]
    assert trace.turns[1].inputs[3].content.startswith("Old environment output")
    assert trace.turns[1].inputs[2] is trace.messages[2]  # unchanged messages are shared
    assert trace.messages[3].content == "big output"
    assert any("Per-call token usage is not recorded" in n for n in trace.notes)


# -- bad files ------------------------------------------------------------------------------


def _broken(change: Any) -> dict[str, Any]:
    doc = _query_traj()
    change(doc)
    return doc


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: d["history"].__setitem__(2, "oops"), "history[2]: expected an object"),
        (lambda d: d["history"][3].pop("tool_call_ids"), "history[3].tool_call_ids"),
        (
            lambda d: d["history"][3].__setitem__("tool_call_ids", ["zz"]),
            "history[3]: tool observation for call 'zz'",
        ),
        (
            lambda d: d["history"][1].__setitem__("content", 5),
            "history[1].content: expected a string or a list",
        ),
        (lambda d: d["history"][1].__setitem__("role", None), "history[1].role"),
        (
            lambda d: d["history"][1].__setitem__("role", "robot"),
            "history: message 1: unknown message type 'robot'",
        ),
        (
            lambda d: d["history"][2]["tool_calls"][0]["function"].__setitem__("arguments", "{x"),
            "history: message 2: tool-call arguments",
        ),
        (
            lambda d: d["history"][2].__setitem__("tool_calls", 5),
            "history[2].tool_calls: expected a list",
        ),
        (
            lambda d: d["history"][2]["tool_calls"][0].__setitem__("id", 5),
            "history[2].tool_calls[0].id",
        ),
        (
            lambda d: d["history"][1].__setitem__("content", [1]),
            "history[1].content: expected a list of text",
        ),
        (lambda d: d["trajectory"].__setitem__(0, []), "trajectory[0]: expected an object"),
        (
            lambda d: d["trajectory"][1].__setitem__("query", [*d["trajectory"][1]["query"], 3]),
            "trajectory[1].query[4]: expected an object",
        ),
        (
            lambda d: d.__setitem__("info", {"model_stats": {"tokens_sent": "many"}}),
            "info.model_stats.tokens_sent: expected a number",
        ),
        (
            lambda d: d.__setitem__("replay_config", "{not json"),
            "replay_config: expected JSON text",
        ),
        (lambda d: d.__setitem__("history", []), "history: expected the run's messages"),
    ],
)
def test_bad_files_are_located(tmp_path: Path, change: Any, says: str) -> None:
    path = _write(tmp_path, _broken(change))
    with pytest.raises(ctxlab.TraceFormatError) as info:
        ctxlab.load(path)
    assert str(path) in str(info.value)
    assert says in str(info.value)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


@pytest.mark.parametrize("make", [_query_traj, _old_traj])
def test_any_wrong_typed_field_is_a_located_error_or_loads(make: Any) -> None:
    """Every field replaced by each wrong type, or removed: reading either succeeds or raises
    TraceFormatError, never a raw Python error."""
    base = make()
    for path in _paths(base):
        for wrong in (None, -1, "s", [1], {"a": 1}, KeyError):
            doc = json.loads(json.dumps(base))
            parent = doc
            for key in path[:-1]:
                parent = parent[key]
            if wrong is KeyError:
                del parent[path[-1]]
            else:
                parent[path[-1]] = wrong
            if not swe_agent.sniff([(doc, None)]):
                continue
            try:
                swe_agent.read([(doc, None)], "f.traj")
            except ctxlab.TraceFormatError:
                pass
