"""Unit rules of the DeepAgents policy: defaults, texts from the package, invariants."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from deepagents.middleware._message_eviction import (
    _extract_text_from_message,
    _render_too_large_tool_msg,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from ctxlab._messages import message_text
from ctxlab._replay.policies.deepagents import normalize_trigger
from ctxlab._replay.policies.deepagents_tools import default_tools
from ctxlab._replay.replay import replay
from ctxlab._trace import from_messages
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import Fixed
from tests.synthetic import make_trace


def test_defaults_follow_the_model_profile() -> None:
    claude = DeepAgents().resolve(from_messages([], model="claude-sonnet-4-5"))
    assert claude.window == 200_000
    assert claude.chars_per_token == 3.3
    assert claude.budget == 126_000  # int(0.95 * 200k) - 64k ChatAnthropic max_tokens
    assert claude.clauses == [{"fraction": 0.85}] and claude.keep == ("fraction", 0.10)
    assert claude.truncate_trigger == ("fraction", 0.85)

    dated = DeepAgents().resolve(from_messages([], model="gpt-5-2025-08-07"))
    assert dated.window is None and dated.budget is None and dated.chars_per_token == 4.0
    assert dated.clauses == [{"tokens": 170_000}] and dated.keep == ("messages", 6)
    assert dated.truncate_trigger == ("messages", 20)

    gpt = DeepAgents().resolve(from_messages([], model="gpt-4o"))
    assert gpt.window == 128_000 and gpt.budget == 121_600


def test_fraction_without_profile_is_rejected_like_langchain() -> None:
    with pytest.raises(ValueError, match="profile"):
        DeepAgents(window=None, trigger=("fraction", 0.5)).resolve(from_messages([]))


def test_trigger_spellings() -> None:
    assert normalize_trigger(("fraction", 0.85)) == [{"fraction": 0.85}]
    assert normalize_trigger(["tokens", 10]) == [{"tokens": 10}]
    assert normalize_trigger([{"tokens": 4000, "messages": 10}, ("fraction", 0.9)]) == [
        {"tokens": 4000, "messages": 10},
        {"fraction": 0.9},
    ]
    with pytest.raises(ValueError):
        normalize_trigger(("fraction", 1.5))


def test_stress_mode_triggers_at_the_given_fraction() -> None:
    trace = make_trace(150, seed=5)
    s = DeepAgents(window=100_000, stress=0.15).resolve(trace)
    assert s.clauses == [{"fraction": 0.15}] and s.truncate_trigger == ("fraction", 0.15)
    normal = replay(trace, DeepAgents(window=100_000), Fixed("x"))
    stressed = replay(trace, DeepAgents(window=100_000, stress=0.15), Fixed("x"))

    def count(r: object) -> int:
        return sum(e.kind == "summarize" for e in r.event_list)

    assert count(stressed) > count(normal)
    assert stressed.turns["context_tokens"].max() < normal.turns["context_tokens"].max()


def test_deepagents_tool_set_as_the_request_carries_it() -> None:
    tools = default_tools()
    assert [t["name"] for t in tools] == [
        "ls",
        "read_file",
        "write_file",
        "edit_file",
        "delete",
        "glob",
        "grep",
        "task",
    ]
    s = DeepAgents(window=None, tools="deepagents").resolve(from_messages([]))
    assert s.tools_tokens == count_tokens_approximately([], tools=list(tools))
    assert DeepAgents(window=None, tools=1234).resolve(from_messages([])).tools_tokens == 1234


def _offload_trace(size: int, name: str = "execute") -> list:
    return [
        SystemMessage("sys"),
        HumanMessage("go"),
        AIMessage("", tool_calls=[{"name": name, "args": {"command": "x"}, "id": "call.1/a"}]),
        ToolMessage(
            ("x" * 99 + "\n") * (size // 100) + "x" * (size % 100),
            tool_call_id="call.1/a",
            name=name,
        ),
        AIMessage("done"),
    ]


def test_tool_result_offload_stub_and_file() -> None:
    msgs = _offload_trace(80_001)
    result = replay(from_messages(msgs), DeepAgents(window=None), Fixed("s"))
    path = "/large_tool_results/call_1_a"
    assert result.files[path] == msgs[3].content
    [event] = result.event_list
    assert (event.kind, event.turn, event.messages, event.file_path) == (
        "offload_tool_result",
        1,
        (3,),
        path,
    )
    stub = ToolMessage(
        _render_too_large_tool_msg(
            tool_call_id="call.1/a", file_path=path, content_str=msgs[3].content
        ),
        tool_call_id="call.1/a",
        name="execute",
    )
    expected = count_tokens_approximately([SystemMessage("sys"), *msgs[1:3], stub])
    assert result.calls[1].context_tokens == expected


@pytest.mark.parametrize(("size", "name"), [(80_000, "execute"), (90_000, "read_file")])
def test_no_offload_at_or_under_limit_or_for_excluded_tools(size: int, name: str) -> None:
    result = replay(from_messages(_offload_trace(size, name)), DeepAgents(window=None), Fixed("s"))
    assert not result.event_list and not result.files


def test_parallel_same_path_mutation_is_answered_with_deepagents_error() -> None:
    def call(i: int) -> dict:
        return {
            "name": "write_file",
            "args": {"file_path": "/a.txt", "content": "x"},
            "id": f"c{i}",
        }

    msgs = [
        HumanMessage("go"),
        AIMessage("", tool_calls=[call(1), call(2)]),
        ToolMessage("ok", tool_call_id="c1", name="write_file"),
        ToolMessage("ok", tool_call_id="c2", name="write_file"),
        AIMessage("done"),
    ]
    run = DeepAgents(window=None).start(from_messages(msgs), Fixed("s"))
    for turn in from_messages(msgs).turns:
        run.call(turn)
    assert run.view[2].content == "ok"
    assert run.view[3].content == "Error: parallel file mutations to the same path are not allowed."


def test_huge_human_message_is_offloaded_and_stubbed() -> None:
    msgs = [HumanMessage("a" * 200_001), AIMessage("ok"), HumanMessage("b"), AIMessage("ok")]
    result = replay(from_messages(msgs), DeepAgents(window=None), Fixed("s"))
    [event] = result.event_list
    assert event.kind == "offload_human_message" and event.turn == 0
    assert result.files[event.file_path] == "a" * 200_001
    assert result.calls[1].context_tokens < 1_000  # the stub stays in later requests


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([0.2, 0.5, 0.85]), st.integers(2, 30))
def test_summaries_never_split_tool_pairs_and_honour_keep(
    seed: int, trigger: float, keep: int
) -> None:
    trace = make_trace(80, seed=seed, big=0.1)
    policy = DeepAgents(window=30_000, trigger=("fraction", trigger), keep=("messages", keep))
    run = policy.start(trace, Fixed("summary"))
    summaries = 0
    for turn in trace.turns:
        before = run.event
        call = run.call(turn)
        if run.event is not before and run.event is not None:
            summaries += 1
            first = run.event.cutoff
            kept = run.view[first:]
            if kept and isinstance(kept[0], ToolMessage):
                pytest.fail("kept window starts with a ToolMessage whose call was summarised")
            # the keep window is honoured or exceeded (never shortened) by the safe cutoff
            assert call.messages >= min(keep, len(run.view)) or call.messages - 1 >= keep
    assert summaries, "no summary fired, so nothing above was checked"


_blocks = st.lists(
    st.one_of(
        st.text(max_size=20),
        st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=20)),
        st.just({"type": "image", "url": "https://x/y.png"}),
    ),
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(_blocks, st.sampled_from([None, "anthropic", "openai"]))
def test_text_extraction_fast_path_is_exact(blocks: list, provider: str | None) -> None:
    meta = {"model_provider": provider} if provider else {}
    message = ToolMessage(content=blocks, tool_call_id="c", response_metadata=meta)
    assert message_text(message) == _extract_text_from_message(message)


def test_replay_is_deterministic() -> None:
    trace = make_trace(200, fmt="anthropic", seed=11, huge_human_at=50)
    a = replay(trace, DeepAgents(window=30_000), Fixed("s"))
    b = replay(trace, DeepAgents(window=30_000), Fixed("s"))
    assert a.turns.equals(b.turns) and a.events.equals(b.events)
    assert dict(a.files) == dict(b.files)


def test_models_version_is_the_installed_oracle() -> None:
    """The conformance tests run against the installed deepagents: it is the modelled one."""
    assert DeepAgents.models_version == "0.7.32" == version("deepagents")


_VERSION_CHECK = """
import sys, warnings
from ctxlab.policies import DeepAgents
from ctxlab._cost.profiles import profile
from ctxlab._trace import from_messages
trace = from_messages([], model="gpt-4o")
profile("gpt-4o", trace.provider)
if sys.argv[1] == "hidden":  # no distribution of deepagents on the path any more
    sys.path[:] = [p for p in sys.path if "site-packages" not in p]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    DeepAgents().resolve(trace)
    DeepAgents(window=1000).thresholds(trace)
print(len(caught), "deepagents" in sys.modules)
for w in caught:
    print(w.category.__name__, w.message)
"""


def _version_check(tmp_path: Path, mode: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    out = subprocess.run(
        [sys.executable, "-c", _VERSION_CHECK, mode],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=tmp_path,
    )
    return out.stdout.splitlines()


def test_other_installed_deepagents_warns_once(tmp_path: Path) -> None:
    """A `deepagents` 0.8.0 distribution ahead on the path: one warning per process, naming
    both versions, read from metadata without importing deepagents."""
    dist = tmp_path / "deepagents-0.8.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: deepagents\nVersion: 0.8.0\n")
    lines = _version_check(tmp_path, "other")
    assert lines[0] == "1 False"
    assert lines[1].startswith("UpstreamVersionWarning")
    assert "0.7.32" in lines[1] and "0.8.0" in lines[1]


def test_same_or_missing_deepagents_does_not_warn(tmp_path: Path) -> None:
    assert _version_check(tmp_path, "installed") == ["0 False"]
    assert _version_check(tmp_path, "hidden") == ["0 False"]


def test_thresholds_are_the_plotted_lines() -> None:
    claude = from_messages([], model="claude-sonnet-4-5")
    assert DeepAgents().thresholds(claude) == {
        "window": 200_000,
        "trigger": 170_000,
        "budget": 126_000,
    }
    # the lowest token threshold of the OR-ed clauses; messages clauses draw no line
    either = DeepAgents(trigger=[("fraction", 0.5), {"tokens": 120_000, "messages": 5}])
    assert either.thresholds(claude)["trigger"] == 100_000
    assert DeepAgents(trigger=("messages", 40)).thresholds(claude) == {
        "window": 200_000,
        "budget": 126_000,
    }
    no_profile = from_messages([], model="not-a-model")
    assert DeepAgents().thresholds(no_profile) == {"trigger": 170_000}
    # what the policy cannot resolve on a trace draws nothing
    assert DeepAgents(trigger=("fraction", 0.5)).thresholds(no_profile) == {}


def test_thresholds_agree_with_the_resolved_settings() -> None:
    trace = from_messages([], model="gpt-4o")
    for policy in (DeepAgents(), DeepAgents(stress=0.2), DeepAgents(window=50_000)):
        s = policy.resolve(trace)
        lines = policy.thresholds(trace)
        assert lines["window"] == s.window and lines["budget"] == s.budget
        assert lines["trigger"] == max(1, int(s.window * s.clauses[0]["fraction"]))


_NO_UPSTREAM = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.synthetic import make_trace
from ctxlab.policies import (
    ClearToolUses, DeepAgents, LangChainSummarization, Pipeline, SlidingWindow,
    ToolResultOffload,
)
from ctxlab._replay.replay import replay
from ctxlab.summarizers import Extractive
trace = make_trace(120, fmt="anthropic", seed=3, big=0.2, huge_human_at=60)
for policy in (
    DeepAgents(window=30_000, tools="deepagents+trace"),
    Pipeline([ToolResultOffload(), LangChainSummarization(trigger=("tokens", 20_000))]),
    ClearToolUses(trigger=10_000),
    SlidingWindow(max_tokens=20_000),
):
    replay(trace, policy, Extractive())
print(sorted({m.split(".")[0] for m in sys.modules} & {"deepagents", "langchain", "langgraph"}))
"""


def test_replays_import_no_deepagents_or_langchain() -> None:
    """At run time the policies need neither package (nor LangGraph): only langchain_core."""
    tests = str(Path(__file__).resolve().parent)
    out = subprocess.run(
        [sys.executable, "-c", _NO_UPSTREAM, tests],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert out.stdout.split() == ["[]"]
