"""mini-swe-agent trajectories: the final `exit` record, per-call usage from the kept LiteLLM
response, and errors that name the message and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab import TraceFormatError
from tests.conftest import SHARED


def _response(prompt: int, completion: int, cached: int | None = None) -> dict:
    usage: dict = {"prompt_tokens": prompt, "completion_tokens": completion}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {"id": "r", "model": "deepseek-chat", "choices": [], "usage": usage}


def _call(text: str, call_id: str, command: str, response: dict) -> dict:
    return {
        "role": "assistant",
        "content": text,
        "tool_calls": [
            {
                "index": 0,
                "id": call_id,
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": command})},
            }
        ],
        "function_call": None,
        "provider_specific_fields": None,
        "extra": {"actions": [{"command": command}], "response": response, "cost": 0.001},
    }


def _doc(**changes: object) -> dict:
    doc = {
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "repo__repo-1",
        "info": {
            "model_stats": {"instance_cost": 0.002, "api_calls": 2},
            "config": {"model": {"model_name": "deepseek/deepseek-chat"}},
            "mini_version": "2.2.7",
            "exit_status": "Submitted",
            "submission": "diff",
        },
        "messages": [
            {"role": "system", "content": "You can run bash."},
            {"role": "user", "content": "Fix the bug."},
            _call("Look first.", "call_1", "ls", _response(100, 10, cached=64)),
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "content": "<returncode>0</returncode>",
                "extra": {"raw_output": "a.py", "returncode": 0},
            },
            _call("Submit.", "call_2", "echo DONE", _response(140, 12)),
            {
                "role": "exit",
                "content": "diff",
                "extra": {"exit_status": "Submitted", "submission": "diff"},
            },
        ],
    }
    doc.update(changes)
    return doc


def _load(tmp_path: Path, doc: dict) -> ctxlab.Trace:
    path = tmp_path / "repo__repo-1.traj.json"
    path.write_text(json.dumps(doc))
    (trace,) = ctxlab.load(path)
    return trace


def test_the_exit_record_is_metadata_and_usage_comes_from_each_response(tmp_path: Path) -> None:
    trace = _load(tmp_path, _doc())
    assert trace.format == "mini-swe-agent"
    assert trace.trace_id == "repo__repo-1"
    assert trace.model == "deepseek/deepseek-chat"
    assert [type(m) for m in trace.messages] == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]
    assert trace.messages[2].tool_calls[0]["args"] == {"command": "ls"}
    first, second = trace.turns
    assert (first.input_tokens, first.output_tokens, first.cache_read_tokens) == (100, 10, 64)
    assert (second.input_tokens, second.output_tokens, second.cache_read_tokens) == (140, 12, None)
    assert first.model == "deepseek-chat"
    assert [len(t.inputs) for t in trace.turns] == [2, 4]
    assert trace.metadata["exit_status"] == "Submitted"
    assert trace.metadata["submission"] == "diff"
    assert trace.metadata["model_stats"]["api_calls"] == 2
    assert any("bash tool" in note for note in trace.notes)


def test_a_bad_usage_count_names_the_message_and_field(tmp_path: Path) -> None:
    doc = _doc()
    doc["messages"][4]["extra"]["response"]["usage"]["prompt_tokens"] = "140"
    with pytest.raises(TraceFormatError) as error:
        _load(tmp_path, doc)
    assert "messages[4].extra.response.usage.prompt_tokens" in str(error.value)
    assert "repo__repo-1.traj.json" in str(error.value)


def test_a_tool_result_without_its_call_is_refused(tmp_path: Path) -> None:
    doc = _doc()
    del doc["messages"][2]
    with pytest.raises(TraceFormatError, match="answers no earlier call"):
        _load(tmp_path, doc)


def test_text_only_runs_without_responses_say_usage_is_missing(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "THOUGHT\n```bash\nls\n```"},
        {"role": "user", "content": "<output>a.py</output>"},
        {"role": "assistant", "content": "done"},
    ]
    trace = _load(tmp_path, _doc(trajectory_format="mini-swe-agent-1", messages=messages))
    assert len(trace.turns) == 2 and all(t.input_tokens is None for t in trace.turns)
    assert any("No call records its usage" in note for note in trace.notes)
    assert not any("bash tool" in note for note in trace.notes)


def test_the_real_run_keeps_each_calls_recorded_usage() -> None:
    path = SHARED / "data" / "corpus" / "mini-swe-agent" / "django__django-14752.traj.json.gz"
    if not path.is_file():
        pytest.skip(f"the shared corpus is not at {path.parents[1]} (set CTXLAB_SHARED)")
    (trace,) = ctxlab.load(path)
    # the first call's LiteLLM response: 1,995 prompt tokens, 93 completion tokens
    assert (trace.turns[0].input_tokens, trace.turns[0].output_tokens) == (1995, 93)
    assert trace.turns[0].model == "deepseek-chat"
    assert trace.metadata["exit_status"] == "Submitted"
    assert trace.metadata["submission"].startswith("diff --git a/django/contrib/admin/views/")
