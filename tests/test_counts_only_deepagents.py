"""Deep Agents' count-only form (`DeepAgents.counts_only`,
`ctxlab._replay.policies.deepagents.counts`)
against its full replay: the same `counts` frame and `event_list` at every setting the
explorer's sliders reach and at settings that make every kind of event, on synthetic traces, a
hand-built conversation and every real trace in the shared data."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab._replay.policies.base import EVENT_KINDS
from ctxlab._replay.policies.deepagents.run import DeepAgentsRun
from ctxlab._replay.replay import counted, replay
from ctxlab._trace import Trace, from_messages
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import CachedExtractive
from ctxlab.widgets import ThresholdExplorer
from tests._policy_traces import real_traces
from tests.synthetic import make_trace

MODEL = "claude-sonnet-4-5"

SETTINGS = [
    DeepAgents(),
    DeepAgents(trigger=("fraction", 0.15)),
    DeepAgents(trigger=("fraction", 0.3), keep=("fraction", 0.02)),
    DeepAgents(stress=0.1),
    DeepAgents(stress=0.05, tool_token_limit_before_evict=None),
    DeepAgents(tool_token_limit_before_evict=200),
    DeepAgents(human_message_token_limit_before_evict=50),
    DeepAgents(window=20_000, max_output_tokens=15_000),  # a small budget: clips, overflows
    DeepAgents(window=8_000),
    DeepAgents(max_output_tokens=190_000),
    DeepAgents(trigger=("messages", 30), keep=("messages", 5)),
    DeepAgents(trigger=[{"tokens": 4_000, "messages": 10}, ("fraction", 0.9)], window=100_000),
    DeepAgents(
        truncate_args_settings={
            "trigger": ("messages", 10),
            "keep": ("messages", 4),
            "max_length": 50,
        }
    ),
    DeepAgents(window=None),
    DeepAgents(stress=0.2, trim_tokens_to_summarize=300),
]
"""Defaults, the explorer's slider ranges, and settings that act at nearly every call."""


def assert_same(trace: Trace, policy: DeepAgents) -> set[str]:
    """The form's counts and events equal the full replay's; the event kinds seen."""
    summarizer = CachedExtractive()
    quick = counted(trace, policy, summarizer)
    assert quick is not None
    full = replay(trace, policy, summarizer)
    assert quick.counts.equals(full.counts), (trace.trace_id, policy.params())
    assert quick.event_list == full.event_list, (trace.trace_id, policy.params())
    return {e.kind for e in full.event_list}


def _conversation() -> Trace:
    """Every path of the step: an oversized and an already evicted human message, same-path
    parallel edits (refused), long write arguments (truncated), results without a call id
    (named by the run's counter), oversized results, a call with no new message, and an
    oversized result after the last call (an event no call saw)."""
    msgs: list = [SystemMessage("You are a coding agent."), HumanMessage("fix /src/app.py")]
    for i in range(40):
        if i == 5:
            msgs.append(HumanMessage("please also read this log:\n" + "line of log\n" * 400))
        if i == 9:
            evicted = {"lc_evicted_to": "/conversation_history/earlier.md"}
            msgs.append(HumanMessage("old request " * 300, additional_kwargs=evicted))
        if i % 7 == 3:
            calls = [
                {
                    "name": "edit_file",
                    "args": {"file_path": "/src/app.py", "old": "a"},
                    "id": f"e{i}a",
                },
                {
                    "name": "edit_file",
                    "args": {"file_path": "/src/app.py", "old": "b"},
                    "id": f"e{i}b",
                },
            ]
        elif i % 4 == 0:
            body = f"def f{i}():\n" + "    return 1\n" * (30 + i)
            calls = [
                {
                    "name": "write_file",
                    "args": {"file_path": f"/src/m{i}.py", "content": body},
                    "id": f"w{i}",
                }
            ]
        else:
            calls = [{"name": "execute", "args": {"command": f"pytest -k t{i}"}, "id": f"x{i}"}]
        msgs.append(AIMessage(f"step {i}: working on /src/m{i}.py", tool_calls=calls))
        for call in calls:
            size = 2_000 if i % 6 == 1 else 40 + 9 * i
            call_id = "" if i % 11 == 2 else call["id"]
            msgs.append(ToolMessage(f"out {i}\n" * size, tool_call_id=call_id, name=call["name"]))
        if i == 20:
            msgs.append(AIMessage("thinking about the failure"))
    msgs.append(
        AIMessage("", tool_calls=[{"name": "execute", "args": {"command": "ls"}, "id": "end"}])
    )
    msgs.append(ToolMessage("z\n" * 50_000, tool_call_id="end", name="execute"))
    return from_messages(msgs, trace_id="every-path", model=MODEL, provider="anthropic")


def _traces() -> list[Trace]:
    return [
        make_trace(150, fmt="anthropic", seed=4, model=MODEL, provider="anthropic", big=0.1),
        make_trace(90, fmt="openai", seed=5, model="gpt-4o", provider="openai", big=0.05),
        _conversation(),
        from_messages([HumanMessage("hi")], trace_id="no calls", model=MODEL),
    ]


@pytest.mark.parametrize("policy", SETTINGS, ids=lambda p: str(p.params()))
def test_synthetic_and_hand_built_traces(policy: DeepAgents) -> None:
    for trace in _traces():
        try:
            policy.resolve(trace)
        except ValueError:
            continue  # fractions without a window: both refuse
        assert_same(trace, policy)


def test_a_request_exactly_at_a_limit_is_stepped() -> None:
    """A limit is reached at equality (`>=`), for the trigger and for argument truncation."""
    trace = _traces()[0]
    off = {"truncate_args_settings": None}
    plain = replay(trace, DeepAgents(trigger=("tokens", 10**9), **off)).counts["context_tokens"]
    for k in (10, 40, 90):
        at = int(plain[k])
        assert at > int(plain[k - 1])
        kinds = assert_same(trace, DeepAgents(trigger=("tokens", at), keep=("messages", 6), **off))
        assert "summarize" in kinds
        truncate = {"trigger": ("tokens", at), "keep": ("messages", 4), "max_length": 20}
        kinds = assert_same(
            trace, DeepAgents(trigger=("tokens", 10**9), truncate_args_settings=truncate)
        )
        assert "truncate_args" in kinds


def test_every_kind_of_event_is_checked() -> None:
    """The settings above make every event the step has, so each is compared."""
    kinds: set[str] = set()
    for policy in SETTINGS:
        for trace in _traces():
            try:
                policy.resolve(trace)
            except ValueError:
                continue
            kinds |= {e.kind for e in replay(trace, policy, CachedExtractive()).event_list}
    assert kinds >= set(EVENT_KINDS[:6])  # Deep Agents' six (`ctxlab._replay.policies.base`)


def test_every_real_trace(shared: Path) -> None:
    seen = 0
    for trace in real_traces(shared):
        for policy in (SETTINGS[0], SETTINGS[3], SETTINGS[5], SETTINGS[10]):
            try:
                policy.resolve(trace)
            except ValueError:
                continue
            assert_same(trace, policy)
        seen += 1
    assert seen >= 10


def test_the_form_steps_only_where_something_may_happen(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long trace runs the real step at the calls with events and a few more only."""
    trace = make_trace(400, fmt="anthropic", seed=1, model=MODEL, provider="anthropic", big=0.03)
    policy = DeepAgents(stress=0.5)
    with_events = {e.turn for e in replay(trace, policy).event_list}
    stepped = 0
    call = DeepAgentsRun.call

    def counting(self: DeepAgentsRun, turn):  # type: ignore[no-untyped-def]
        nonlocal stepped
        stepped += 1
        return call(self, turn)

    monkeypatch.setattr(DeepAgentsRun, "call", counting)
    assert counted(trace, policy) is not None
    assert len(with_events) <= stepped < len(trace.turns) // 4


def test_usage_scaling_and_a_run_of_its_own_get_the_full_engine() -> None:
    class OwnRun(DeepAgents):
        def start(self, trace, summarizer):  # type: ignore[no-untyped-def]
            return super().start(trace, summarizer)

    trace = make_trace(20, seed=1, model=MODEL)
    assert counted(trace, DeepAgents(use_usage_metadata=True)) is None
    assert counted(trace, OwnRun()) is None


def test_the_explorer_draws_deepagents_from_counts_then_replays_in_full() -> None:
    trace = make_trace(60, seed=2, model=MODEL, provider="anthropic", big=0.1)
    ex = ThresholdExplorer(trace, debounce=0)
    ex.control("trigger").value = 0.2
    shown = ex.replay  # no event loop runs here: the full replay is made when read
    assert shown is not None and shown.params["trigger"] == ("fraction", 0.2)
    direct = replay(trace, ex.policy, ex.summarizer)
    assert shown.counts.equals(direct.counts)
    assert ex.figure.data[3].y.tolist() == direct.counts["ai_tokens"].to_list()
