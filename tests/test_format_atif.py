"""Harbor / Terminal-Bench ATIF trajectories load as traces (ctxlab/_ingest/formats/atif.py).

No spec-conformant ATIF file is in shared/data (they live on Hugging Face) and the third-party
"ATIF 1.4" file the research notes describe was kept back, so every file here is synthetic:
the RFC's own example extended, and one file per producer deviation the notes list.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab._replay.policies import catalog

TOOLS = [{"type": "function", "function": {"name": "financial_search", "parameters": {}}}]


def conformant() -> dict[str, Any]:
    """The RFC 0001 example (v1.6 fields), with a system step and cache metrics."""
    return {
        "schema_version": "ATIF-v1.6",
        "session_id": "025B810F",
        "agent": {"name": "harbor-agent", "version": "1.0.0", "model_name": "gemini-2.5-flash",
                  "tool_definitions": TOOLS},
        "steps": [
            {"step_id": 1, "source": "system", "message": "You are a finance agent."},
            {"step_id": 2, "timestamp": "2025-10-11T10:30:00Z", "source": "user",
             "message": "What is the current trading price of Alphabet (GOOGL)?"},
            {"step_id": 3, "timestamp": "2025-10-11T10:30:02Z", "source": "agent",
             "model_name": "gemini-2.5-flash", "message": "I will search.",
             "reasoning_content": "Two data points are needed.",
             "tool_calls": [
                 {"tool_call_id": "call_price_1", "function_name": "financial_search",
                  "arguments": {"ticker": "GOOGL", "metric": "price"}},
                 {"tool_call_id": "call_volume_2", "function_name": "financial_search",
                  "arguments": {"ticker": "GOOGL", "metric": "volume"}}],
             "observation": {"results": [
                 {"source_call_id": "call_price_1", "content": "GOOGL is at $185.35"},
                 {"source_call_id": "call_volume_2", "content": "GOOGL volume: 1.5M"}]},
             "metrics": {"prompt_tokens": 520, "completion_tokens": 80, "cached_tokens": 200,
                         "extra": {"cache_creation_input_tokens": 40}}},
            {"step_id": 4, "timestamp": "2025-10-11T10:30:05Z", "source": "agent",
             "message": [{"type": "text", "text": "GOOGL trades at $185.35."}],
             "metrics": {"prompt_tokens": 600, "completion_tokens": 44}},
        ],
        "final_metrics": {"total_prompt_tokens": 1120, "total_completion_tokens": 124},
    }  # fmt: skip


def write(tmp_path: Path, value: Any, name: str = "trajectory.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value))
    return path


def test_conformant_trajectory(tmp_path: Path) -> None:
    (trace,) = ctxlab.load(write(tmp_path, conformant()))
    assert (trace.format, trace.trace_id, trace.model) == ("atif", "025B810F", "gemini-2.5-flash")
    assert [type(m) for m in trace.messages] == [
        SystemMessage, HumanMessage, AIMessage, ToolMessage, ToolMessage, AIMessage
    ]  # fmt: skip
    assert trace.system_prompt == "You are a finance agent." and trace.tools == TOOLS
    assert [t.position for t in trace.turns] == [2, 5]
    assert trace.turns[1].inputs == tuple(trace.messages[:5])
    assert [t.input_tokens for t in trace.turns] == [520, 600]
    assert [t.output_tokens for t in trace.turns] == [80, 44]
    assert [t.cache_read_tokens for t in trace.turns] == [200, None]
    assert [t.cache_write_tokens for t in trace.turns] == [40, None]
    assert (
        trace.recorded_input_tokens
        == 1120
        == trace.metadata["final_metrics"]["total_prompt_tokens"]
    )
    assert [t.started_at for t in trace.turns] == ["2025-10-11T10:30:02Z", "2025-10-11T10:30:05Z"]
    call = trace.messages[2]
    assert isinstance(call, AIMessage)
    assert [c["id"] for c in call.tool_calls] == ["call_price_1", "call_volume_2"]
    assert call.tool_calls[1]["args"] == {"ticker": "GOOGL", "metric": "volume"}
    assert call.additional_kwargs["reasoning_content"] == "Two data points are needed."
    assert trace.messages[4].tool_call_id == "call_volume_2"
    assert trace.messages[5].text == "GOOGL trades at $185.35."
    assert trace.notes == [
        "ATIF does not record each call's input: it is rebuilt as every step before the call."
    ]
    assert trace.compactions == [] and trace.subagents == []


def test_third_party_deviations(tmp_path: Path) -> None:
    """The converter deviations the research notes name: schema_version "1.4" without the
    prefix, `agent.model`, tool results as separate system steps; plus JSON-string arguments
    and an 'assistant' source."""
    doc = {
        "schema_version": "1.4",
        "session_id": "cc-tbench",
        "agent": {"name": "claude-code", "model": "claude-sonnet-4-5"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Make the tests pass."},
            {"step_id": 2, "source": "agent", "message": "",
             "tool_calls": [{"tool_call_id": "toolu_1", "function_name": "Bash",
                             "arguments": "{\"command\": \"pytest\"}"}],
             "metrics": {"prompt_tokens": 900, "completion_tokens": 30, "cached_tokens": 800}},
            {"step_id": 3, "source": "system", "message": "1 failed"},
            {"step_id": 4, "source": "assistant", "message": "",
             "tool_calls": [{"id": "toolu_2", "name": "Edit",
                             "arguments": {"path": "a.py"}}],
             "metrics": {"prompt_tokens": 1000, "completion_tokens": 20}},
            {"step_id": 5, "source": "system", "message": "",
             "observation": {"results": [{"source_call_id": "toolu_2", "content": "edited"}]}},
            {"step_id": 6, "source": "agent", "message": "Done."},
        ],
    }  # fmt: skip
    (trace,) = ctxlab.load(write(tmp_path, doc))
    assert [m.type for m in trace.messages] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert trace.messages[2].tool_call_id == "toolu_1" and trace.messages[2].text == "1 failed"
    assert trace.messages[4].tool_call_id == "toolu_2"
    assert trace.messages[1].tool_calls[0]["args"] == {"command": "pytest"}
    assert trace.model == "claude-sonnet-4-5" and trace.turns[0].model == "claude-sonnet-4-5"
    assert [t.input_tokens for t in trace.turns] == [900, 1000, None]
    assert trace.recorded_input_tokens == 1900
    deviations = [n for n in trace.notes if n.startswith("Deviation")]
    assert deviations == [
        "Deviation from the ATIF spec tolerated: agent.model instead of agent.model_name.",
        "Deviation from the ATIF spec tolerated: schema_version '1.4' without the 'ATIF-v' prefix.",
        "Deviation from the ATIF spec tolerated: steps with source 'assistant' are read as "
        "agent steps.",
        "Deviation from the ATIF spec tolerated: tool calls with 'id'/'name' for "
        "'tool_call_id'/'function_name'.",
        "Deviation from the ATIF spec tolerated: tool results written as separate system steps.",
        "Deviation from the ATIF spec tolerated: tool-call arguments written as JSON strings.",
    ]
    assert any("system prompt is not in the file" in n for n in trace.notes)
    assert any("Tool schemas are not in the file" in n for n in trace.notes)
    assert any("1 of 3 agent steps have no metrics.prompt_tokens" in n for n in trace.notes)
    for name in ("deepagents", "openhands-llm-summarizing", "openhands-observation-masking"):
        replay = ctxlab.replay(trace, catalog.get(name))
        assert replay.turns.height == 3
        assert replay.turns["recorded_input_tokens"].to_list() == [900, 1000, None]


def test_terminus_results_without_call_ids(tmp_path: Path) -> None:
    """Terminus-2 writes commands in the message and the terminal output as results with no
    call id: the model read them as the next user turn."""
    doc = {
        "schema_version": "ATIF-v1.5", "session_id": "t2", "agent": {"name": "terminus-2",
                                                                     "version": "2"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Task: list files"},
            {"step_id": 2, "source": "agent", "message": "{\"commands\": [\"ls\"]}",
             "observation": {"results": [{"content": "a.txt b.txt"}]},
             "metrics": {"prompt_tokens": 300, "completion_tokens": 10}},
            {"step_id": 3, "source": "agent", "message": "{\"task_complete\": true}",
             "metrics": {"prompt_tokens": 330, "completion_tokens": 8}},
        ],
    }  # fmt: skip
    (trace,) = ctxlab.load(write(tmp_path, doc))
    assert [m.type for m in trace.messages] == ["human", "ai", "human", "ai"]
    assert trace.messages[2].text == "a.txt b.txt"
    assert [t.position for t in trace.turns] == [1, 3]


def test_copied_context_and_dispatch_steps_are_not_calls(tmp_path: Path) -> None:
    doc = conformant()
    doc["steps"][2]["is_copied_context"] = True
    doc["steps"].append({"step_id": 5, "source": "agent", "message": "routing",
                         "llm_call_count": 0})  # fmt: skip
    doc["steps"].append({"step_id": 6, "source": "agent", "message": "two calls",
                         "llm_call_count": 2,
                         "metrics": {"prompt_tokens": 1400, "completion_tokens": 9}})  # fmt: skip
    (trace,) = ctxlab.load(write(tmp_path, doc))
    assert len(trace.messages) == 8
    assert [t.position for t in trace.turns] == [5, 7]
    assert [t.input_tokens for t in trace.turns] == [600, 1400]
    assert any("not counted as calls: 1." in n for n in trace.notes)
    assert any("aggregate several model calls" in n for n in trace.notes)


def test_embedded_and_linked_subagents(tmp_path: Path) -> None:
    sub = {
        "schema_version": "ATIF-v1.7", "session_id": "s", "trajectory_id": "research-1",
        "agent": {"name": "researcher", "version": "1", "model_name": "small"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Find the price."},
            {"step_id": 2, "source": "agent", "message": "$185",
             "metrics": {"prompt_tokens": 50, "completion_tokens": 3}},
        ],
    }  # fmt: skip
    doc = conformant()
    doc["schema_version"] = "ATIF-v1.7"
    doc["steps"][2]["observation"]["results"][0]["subagent_trajectory_ref"] = [
        {"trajectory_id": "research-1"}
    ]
    doc["steps"][2]["observation"]["results"][1]["subagent_trajectory_ref"] = [
        {"session_id": "vol-session", "trajectory_path": "trajectory.volume.json"}
    ]
    doc["subagent_trajectories"] = [sub]
    linked = {**copy.deepcopy(sub), "session_id": "vol-session", "trajectory_id": None}
    write(tmp_path, doc)
    write(tmp_path, linked, "trajectory.volume.json")
    (trace,) = ctxlab.load(tmp_path)
    embedded, volume = trace.subagents
    assert (embedded.trace_id, embedded.parent_tool_call_id) == ("research-1", "call_price_1")
    assert (volume.trace_id, volume.parent_tool_call_id) == ("vol-session", "call_volume_2")
    assert embedded.parent_trace_id == volume.parent_trace_id == "025B810F"
    assert [len(t.turns) for t in trace.walk()] == [2, 1, 1]
    assert embedded.model == "small" and embedded.recorded_input_tokens == 50
    assert trace.summary()["subagents"] == 2
    (alone,) = ctxlab.load(tmp_path / "trajectory.json")
    assert len(alone.subagents) == 1
    assert any("trajectory.volume.json was not loaded" in n for n in alone.notes)


def test_replays_under_deepagents_and_openhands(tmp_path: Path) -> None:
    (trace,) = ctxlab.load(write(tmp_path, conformant()))
    for name in ("deepagents", "openhands-llm-summarizing", "openhands-observation-masking"):
        replay = ctxlab.replay(trace, catalog.get(name))
        assert replay.turns["recorded_input_tokens"].to_list() == [520, 600]
        assert replay.turns["context_tokens"].min() > 0


BAD: list[tuple[str, Any, str]] = [
    ("step not an object", lambda d: d["steps"].__setitem__(1, "user"),
     "step #1: field 'steps[]' must be an object"),
    ("bad source", lambda d: d["steps"][1].__setitem__("source", "human"),
     "step 2: field 'source' must be 'system', 'user' or 'agent', got 'human'"),
    ("step id text", lambda d: d["steps"][2].__setitem__("step_id", "3"),
     "step #2: field 'step_id' must be an integer"),
    ("message number", lambda d: d["steps"][1].__setitem__("message", 7),
     "step 2: field 'message' must be a string or a list of content parts"),
    ("tool_calls object", lambda d: d["steps"][2].__setitem__("tool_calls", {}),
     "step 3: field 'tool_calls' must be a list"),
    ("no call id", lambda d: d["steps"][2]["tool_calls"][0].pop("tool_call_id"),
     "step 3: field 'tool_calls[].tool_call_id'"),
    ("arguments list", lambda d: d["steps"][2]["tool_calls"][0].__setitem__("arguments", [1]),
     "step 3: field 'tool_calls[].arguments' must be an object"),
    ("arguments bad json", lambda d: d["steps"][2]["tool_calls"][0].__setitem__(
        "arguments", "{oops"), "step 3: field 'tool_calls[].arguments'"),
    ("negative tokens", lambda d: d["steps"][3]["metrics"].__setitem__("prompt_tokens", -1),
     "step 4: field 'metrics.prompt_tokens' must be a non-negative integer"),
    ("cached tokens text", lambda d: d["steps"][2]["metrics"].__setitem__("cached_tokens", "9"),
     "step 3: field 'metrics.cached_tokens'"),
    ("results object", lambda d: d["steps"][2]["observation"].__setitem__("results", {}),
     "step 3: field 'observation.results' must be a list"),
    ("copied flag text", lambda d: d["steps"][3].__setitem__("is_copied_context", "yes"),
     "step 4: field 'is_copied_context' must be a boolean"),
    ("image part", lambda d: d["steps"][3].__setitem__("message", [{"type": "audio"}]),
     "step 4: field 'message[].type'"),
    ("agent not object", lambda d: d.__setitem__("agent", "harbor"),
     "field 'agent' must be an object"),
    ("subagent bad", lambda d: d.__setitem__("subagent_trajectories", [{"steps": [{
        "source": "agent", "message": "x", "metrics": {"completion_tokens": -2}}]}]),
     "subagent_trajectories[0], step #0: field 'metrics.completion_tokens'"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "mutate", "expected"), BAD, ids=[b[0] for b in BAD])
def test_bad_trajectories_are_located(
    tmp_path: Path, case: str, mutate: Any, expected: str
) -> None:
    doc = conformant()
    mutate(doc)
    path = write(tmp_path, doc)
    with pytest.raises(ctxlab.TraceFormatError) as info:
        ctxlab.load(path)
    assert str(info.value).startswith(f"{path}: ") and expected in str(info.value)


def test_steps_not_a_list_is_an_unknown_format(tmp_path: Path) -> None:
    path = write(tmp_path, {**conformant(), "steps": {}})
    with pytest.raises(ctxlab.TraceFormatError, match="Harbor / Terminal-Bench ATIF trajectory"):
        ctxlab.load(path)


def segment(steps: list[dict[str, Any]], **root: Any) -> dict[str, Any]:
    return {"schema_version": "ATIF-v1.5", "session_id": "run-1",
            "agent": {"name": "terminus-2", "version": "2", "model_name": "gpt-5"},
            "steps": [{"step_id": i + 1, **s} for i, s in enumerate(steps)], **root}  # fmt: skip


def agent_step(call: str, prompt: int, **extra: Any) -> dict[str, Any]:
    return {"source": "agent", "message": f"run {call}",
            "tool_calls": [{"tool_call_id": call, "function_name": "bash",
                            "arguments": {"cmd": call}}],
            "observation": {"results": [{"source_call_id": call, "content": f"out {call}"}]},
            "metrics": {"prompt_tokens": prompt, "completion_tokens": 5},
            "timestamp": f"2025-11-01T00:00:{prompt % 60:02d}Z", **extra}  # fmt: skip


def test_continuation_files_join_into_one_run_with_a_recorded_compaction(tmp_path: Path) -> None:
    """Terminus-2 continues a summarised run in a new file: its copied-context steps are what
    the model received instead of the history, the recorded compaction."""
    system = {"source": "system", "message": "You are Terminus."}
    task = {"source": "user", "message": "Build it."}
    first = segment(
        [system, task, agent_step("c1", 1000), agent_step("c2", 90000)],
        continued_trajectory_ref="trajectory.cont-1.json",
    )
    copied = {"is_copied_context": True}
    second = segment([
        {**system, **copied}, {**task, **copied},
        {"source": "user", "message": "Summary: c1 and c2 ran.", **copied},
        agent_step("c3", 3000), agent_step("c4", 3500),
    ])  # fmt: skip
    write(tmp_path, first)
    write(tmp_path, second, "trajectory.cont-1.json")
    (trace,) = ctxlab.load(tmp_path)
    assert [m.type for m in trace.messages] == ["system", "human"] + ["ai", "tool"] * 4
    assert [t.position for t in trace.turns] == [2, 4, 6, 8]
    assert [t.input_tokens for t in trace.turns] == [1000, 90000, 3000, 3500]
    assert [t.compacted for t in trace.turns] == [False, False, True, False]
    assert [m.text for m in trace.turns[2].inputs] == [
        "You are Terminus.", "Build it.", "Summary: c1 and c2 ran."
    ]  # fmt: skip
    assert trace.turns[3].output is trace.messages[8]
    assert [m.text for m in trace.inserted] == ["Summary: c1 and c2 ran."]
    (comp,) = trace.compactions
    assert (comp.turn, comp.kind, comp.trigger) == (2, "summarize", "auto")
    assert (comp.pre_tokens, comp.post_tokens) == (90000, 3000)
    assert comp.summary == "Summary: c1 and c2 ran."
    assert trace.recorded_compactions == [2]
    assert any(
        "trajectory.cont-1.json (continued_trajectory_ref): joined" in n for n in trace.notes
    )
    replay = ctxlab.replay(trace, catalog.get("deepagents"))
    assert replay.turns["recorded_input_tokens"].to_list() == [1000, 90000, 3000, 3500]
    (alone,) = ctxlab.load(tmp_path / "trajectory.json")
    assert len(alone.turns) == 2 and alone.compactions == []
    assert any("continuation trajectory.cont-1.json was not loaded" in n for n in alone.notes)


def _managed_run() -> tuple[dict[str, Any], dict[str, Any]]:
    """A run whose harness compacted (a v1.7 `context_management` step replacing the context)
    and then continued in a second file named by an object reference."""
    head = conformant()
    head["schema_version"] = "ATIF-v1.7"
    head["trajectory_id"] = "run-1"
    head["steps"].append(
        {"step_id": 5, "source": "user", "message": "Summary: GOOGL trades at $185.35.",
         "extra": {"context_management": {"type": "compaction", "boundary": "replace"}}}
    )  # fmt: skip
    head["steps"].append(
        {"step_id": 6, "source": "agent", "message": "Anything else?",
         "metrics": {"prompt_tokens": 90, "completion_tokens": 5}}
    )  # fmt: skip
    head["continued_trajectory_ref"] = {"trajectory_path": "cont.json"}
    tail = {
        "schema_version": "ATIF-v1.7",
        "trajectory_id": "run-1-cont",
        "agent": head["agent"],
        "steps": [
            {"step_id": 1, "source": "user", "message": "Later summary.",
             "extra": {"context_management": {"type": "compaction", "boundary": "replace"}}},
            {"step_id": 2, "source": "agent", "message": "Done.",
             "metrics": {"prompt_tokens": 40, "completion_tokens": 2}},
        ],
    }  # fmt: skip
    return head, tail


def test_context_management_steps_are_recorded_compactions(tmp_path: Path) -> None:
    head, _ = _managed_run()
    head.pop("continued_trajectory_ref")
    (trace,) = ctxlab.load(write(tmp_path, head))
    (compaction,) = trace.compactions
    assert compaction.turn == 2 and compaction.kind == "summarize"
    assert (compaction.pre_tokens, compaction.post_tokens) == (600, 90)
    assert compaction.summary == "Summary: GOOGL trades at $185.35."
    after = trace.turns[2]
    assert after.compacted
    assert [m.text for m in after.inputs] == [
        "You are a finance agent.",
        "Summary: GOOGL trades at $185.35.",
    ]
    assert [m.text for m in trace.inserted] == ["Summary: GOOGL trades at $185.35."]
    assert all("Summary:" not in m.text for m in trace.messages)
    assert any("context_management" in note for note in trace.notes)


def test_a_continuation_named_by_an_object_is_joined(tmp_path: Path) -> None:
    head, tail = _managed_run()
    write(tmp_path, head, "run.json")
    write(tmp_path, tail, "cont.json")
    (trace,) = ctxlab.load(tmp_path)
    assert len(trace.turns) == 4
    assert [c.turn for c in trace.compactions] == [2, 3]
    assert trace.compactions[1].summary == "Later summary."
    assert [m.text for m in trace.turns[3].inputs][-1] == "Later summary."


def test_system_step_results_follow_the_call_their_text_names(tmp_path: Path) -> None:
    """OpenAgents' tbench converter (../shared/data/corpus/atif-openagents/regex-log) writes
    each result as a system step "Tool result for <id>" with the output under
    `observation.content`, and writes it before the agent step that holds its call. The
    output is the result's text; a result naming a pending call answers that call, not the
    oldest; one naming a call made later stays a user message."""
    doc = {
        "schema_version": "1.4",
        "agent": {"name": "claude-code", "model": "claude-sonnet-4"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Save the regex."},
            {"step_id": 2, "source": "system", "message": "Tool result for toolu_early1",
             "observation": {"type": "tool_result", "content": "EACCES: permission denied"}},
            {"step_id": 3, "source": "agent", "message": "Writing it.",
             "tool_calls": [{"id": "toolu_early1", "name": "Write", "arguments": {}},
                            {"id": "toolu_second", "name": "Bash", "arguments": {}}]},
            {"step_id": 4, "source": "system", "message": "Tool result for toolu_second",
             "observation": {"type": "tool_result", "content": "/tmp/work"}},
            {"step_id": 5, "source": "agent", "message": "Saved in /tmp/work."},
        ],
    }  # fmt: skip
    (trace,) = ctxlab.load(write(tmp_path, doc))
    assert [m.type for m in trace.messages] == ["human", "human", "ai", "tool", "ai"]
    assert trace.messages[1].text == "EACCES: permission denied"
    assert (trace.messages[3].tool_call_id, trace.messages[3].text) == ("toolu_second", "/tmp/work")
    deviations = " ".join(n for n in trace.notes if n.startswith("Deviation"))
    assert "before the step holding their call" in deviations
    assert "'observation.content'" in deviations
