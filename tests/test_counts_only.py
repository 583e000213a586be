"""Count-only forms (`StagePolicy.counts_only`, `ctxlab._replay.replay.counted`) against the full
engine.

A count-only form must give exactly the full replay's `counts` frame and `event_list`, at every
setting, on every trace: the explorer draws it instead of the replay. Checked on synthetic
traces of both provider shapes, a hand-built conversation with tags, results before the first
user message and parallel calls, and every real trace in the shared data.
"""

from __future__ import annotations

import asyncio
from dataclasses import fields, replace
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab._ingest.inputs import Inputs
from ctxlab._messages import summary_message
from ctxlab._replay.policies.base import Event, make_event
from ctxlab._replay.policies.codex import EarlierReasoning
from ctxlab._replay.policies.counts_only import fed_lengths
from ctxlab._replay.policies.engine import Context, StageRun
from ctxlab._replay.policies.masking import LastNStage
from ctxlab._replay.policies.masking_counts import masked_after
from ctxlab._replay.replay import counted, replay
from ctxlab._trace import Trace, from_messages
from ctxlab.policies import (
    ClaudeCode,
    ClearToolUses,
    Codex,
    InspectEdit,
    InspectSummary,
    InspectTrim,
    JetBrainsHybrid,
    JetBrainsLLMSummary,
    ObservationMasking,
    OpenHandsAmortized,
    OpenHandsLLMSummarizing,
    OpenHandsObservationMasking,
    OpenHandsRecent,
    SWEAgentMasking,
    ToolResultOffload,
)
from ctxlab.summarizers import CachedExtractive
from ctxlab.widgets import ThresholdExplorer
from tests._policy_traces import real_traces
from tests.synthetic import make_trace
from tests.waiting import trait_until

SETTINGS = [
    ObservationMasking(),
    ObservationMasking(n=1),
    ObservationMasking(n=3, polling=4),
    ObservationMasking(n=2, always_remove_output_for_tags=(), always_keep_output_for_tags=()),
    SWEAgentMasking(),
    SWEAgentMasking(n=40, polling=7),
    OpenHandsObservationMasking(),
    OpenHandsObservationMasking(attention_window=0),
    OpenHandsObservationMasking(attention_window=1),
    OpenHandsObservationMasking(attention_window=9, placeholder="[gone]"),
    ClearToolUses(),
    ClearToolUses(trigger=2_000, keep=0),
    ClearToolUses(trigger=500, keep=2, exclude_tools=("read_file", "run"), placeholder="[x]"),
    ClearToolUses(trigger=10**9),
    OpenHandsRecent(),
    OpenHandsRecent(keep_first=0, max_events=5),
    OpenHandsRecent(keep_first=3, max_events=3),
    OpenHandsRecent(keep_first=4, max_events=9),
    OpenHandsRecent(keep_first=1, max_events=2),
    ToolResultOffload(),
    ToolResultOffload(tool_token_limit_before_evict=30),
    ToolResultOffload(tool_token_limit_before_evict=5, exclude_tools=("run",)),
    ClaudeCode(),
    ClaudeCode(window=8_000, autocompact_buffer=1_000),
    ClaudeCode(window=2_000, max_output_tokens=0, autocompact_buffer=0),
    Codex(window=200_000),
    Codex(window=6_000, auto_compact_fraction=0.5, user_message_max_tokens=40),
    InspectSummary(window=200_000),
    InspectSummary(window=5_000, threshold=0.5),
    InspectTrim(window=200_000),
    InspectTrim(window=3_000, threshold=0.4, preserve=0.5),
    OpenHandsLLMSummarizing(),
    OpenHandsLLMSummarizing(max_size=10, keep_first=2, max_event_length=50),
    OpenHandsAmortized(),
    OpenHandsAmortized(max_size=9, keep_first=1),
    JetBrainsLLMSummary(),
    JetBrainsLLMSummary(n=3, keep_last_m_turns=0),
    JetBrainsLLMSummary(n=2, keep_last_m_turns=1, enable_static_checkpointing=False),
    JetBrainsHybrid(),
    JetBrainsHybrid(n=3, keep_last_m_turns=0, observations_n=2),
    JetBrainsHybrid(n=2, keep_last_m_turns=1, enable_static_checkpointing=False, observations_n=1),
    InspectEdit(window=200_000),
    InspectEdit(window=3_000, threshold=0.5),
    InspectEdit(window=4_000, threshold=0.3, keep_tool_uses=0, keep_thinking_turns=0),
    InspectEdit(window=5_000, keep_tool_uses=7, keep_thinking_turns="all"),
    InspectEdit(threshold=1_500, keep_tool_uses=1, keep_thinking_turns=3),
]
"""Each count-only form at its defaults and at settings that act often (small windows)."""


def assert_same(trace: Trace, policy: object, *, may_decline: bool = False) -> bool:
    """The form's counts and events equal the full replay's; True if the form applied (a
    form may decline a trace it cannot say by formula, when `may_decline`)."""
    quick = counted(trace, policy)  # type: ignore[arg-type]
    if quick is None and may_decline:
        return False
    assert quick is not None
    full = replay(trace, policy)  # type: ignore[arg-type]
    assert quick.counts.equals(full.counts), (trace.trace_id, policy)
    assert quick.event_list == full.event_list, (trace.trace_id, policy)
    assert (quick.trace_id, quick.policy) == (full.trace_id, full.policy)
    return True


def _tagged() -> Trace:
    """Tool results before the first user message, parallel calls, and results tagged to be
    removed, kept, or both."""
    msgs: list = [SystemMessage("sys")]
    msgs.append(AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "pre"}]))
    msgs.append(ToolMessage("early\n" * 30, tool_call_id="pre", name="ls"))
    msgs.append(HumanMessage("fix /src/app.py"))
    tags = [["remove_output"], ["keep_output"], [], ["keep_output", "remove_output"], []]
    for i in range(12):
        ids = [f"c{i}a", f"c{i}b"] if i % 3 == 0 else [f"c{i}"]
        msgs.append(AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": c} for c in ids]))
        for c in ids:
            kwargs = {"tags": tags[i % len(tags)]} if i % 2 else {}
            text = f"out {c}\n" * (20 + 7 * i)
            msgs.append(ToolMessage(text, tool_call_id=c, name="run", additional_kwargs=kwargs))
    # a result whose nearest assistant message is not its call's, and one cleared already
    msgs.append(AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": "late"}]))
    msgs.append(AIMessage("still thinking"))
    msgs.append(ToolMessage("late\n" * 50, tool_call_id="late", name="run"))
    cleared = {"context_editing": {"cleared": True}}
    msgs.append(AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": "old"}]))
    msgs.append(ToolMessage("[cleared]", tool_call_id="old", name="run", response_metadata=cleared))
    msgs.append(AIMessage("done"))
    return from_messages(msgs, trace_id="tagged")


def _stage_over(trace: Trace, stage: LastNStage, pieces: list) -> tuple[list, list, list]:
    """What `stage` does call by call over the pieces' inputs (the reference of
    `masked_after`): tokens of the results it masks and of their stubs, and its events."""
    run = StageRun(trace, CachedExtractive(), [], window=None)
    history = run.items
    fed = fed_lengths(trace)
    orig, stub, events = [0] * len(fed), [0] * len(fed), []
    for t0, t1, items, cut in pieces:
        for t in range(t0, t1):
            given = [*items, *(it for it in history[cut : fed[t]])] if cut >= 0 else items
            ctx = Context(
                trace.turns[t], trace, run.summarizer, run.files, [], run.cpt,
                run.tools_tokens, None, run.tok, run.sums,
            )  # fmt: skip
            out = stage.apply(list(given), ctx)
            for a, b in zip(given, out, strict=True):
                if a.msg is not b.msg:
                    orig[t] += run.tok(a.msg)
                    stub[t] += run.tok(b.msg)
            events += [(t, e.messages) for e in ctx.events]
    return orig, stub, events


def test_masking_after_an_input_that_shrinks_then_grows() -> None:
    """A result masked at one call, kept at the next (a shorter input) and masked again later
    is listed again there, as the stage lists it; the counts follow the stage call by call."""
    trace = make_trace(60, fmt="anthropic", seed=7, model="claude-sonnet-4-5")
    fed = fed_lengths(trace)
    history = StageRun(trace, CachedExtractive(), [], window=None).items
    results = [it for it in history if it.kind == "tool_results"]
    head = [it for it in history[: fed[0]] if it.kind in ("system", "human")]
    a, b = 20, 21
    kept = [it for it in results if it.pos < fed[a]][-8:-4]  # newer ones left out at b
    pieces = [
        (0, a, [], 0),
        (a, b, list(history[: fed[a]]), -1),  # everything: the window masks most
        (b, len(fed), [*head, *kept], int(fed[a])),  # a short input that grows again
    ]
    stage = LastNStage(n=4, polling=1, remove_tags=frozenset(), keep_tags=frozenset())
    orig, stub, events = _stage_over(trace, stage, pieces)
    facts = StageRun(trace, CachedExtractive(), [], window=None).facts
    got_orig, got_stub, got_events = masked_after(facts, stage, pieces, fed)
    assert got_orig.tolist() == orig
    assert got_stub.tolist() == stub
    assert got_events == events
    later = {p for t, ps in events if t > b for p in ps}
    again = later & {p for t, ps in events if t <= a for p in ps}
    assert again & {it.pos for it in kept}  # the case itself: masked, kept, masked again


def _resumed() -> Trace:
    """A run resumed from a compaction: the earlier summary (a marked user message) leads the
    history, right after the system prompt, ahead of the next request."""
    msgs: list = [
        SystemMessage("sys"),
        summary_message("## Intent\nfix /src/app.py\n\n## Progress\n- read /src/app.py"),
        HumanMessage("go on with /src/app.py"),
    ]
    for i in range(14):
        msgs.append(AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": f"r{i}"}]))
        msgs.append(ToolMessage(f"out {i}\n" * (25 + 9 * i), tool_call_id=f"r{i}", name="run"))
    msgs.append(AIMessage("done"))
    return from_messages(msgs, trace_id="resumed")


def _ends_on_a_result() -> Trace:
    """A run whose last call failed (no output) right after a tool result: the history, and
    that call's request, end on a result, so a cut that lands on it must move past it to the
    end (`RecentStage`'s `past_results`; the form reads where it moves from the history)."""
    msgs: list = [HumanMessage("task")]
    for i in range(3):
        msgs.append(AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": f"r{i}"}]))
        msgs.append(ToolMessage(f"out {i}\n" * 30, tool_call_id=f"r{i}", name="run"))
    trace = from_messages(msgs, trace_id="ends on a result")
    inputs = Inputs.prefix(trace.messages, len(msgs))
    failed = replace(
        trace.turns[-1], index=len(trace.turns), position=len(msgs), inputs=inputs, output=None
    )
    return replace(trace, turns=[*trace.turns, failed])


@pytest.mark.parametrize("policy", SETTINGS, ids=lambda p: f"{p.name}:{p.params()}")
def test_synthetic_and_hand_built_traces(policy: object) -> None:
    for trace in (
        make_trace(120, fmt="anthropic", seed=4, model="claude-sonnet-4-5", big=0.1),
        make_trace(80, fmt="openai", seed=5, model="gpt-4o"),
        _tagged(),
        _resumed(),
        from_messages([HumanMessage("hi")], trace_id="no calls"),
        _ends_on_a_result(),
    ):
        assert_same(trace, policy)


def test_tags_decide_as_in_the_stage() -> None:
    """The hand-built trace exercises every tag path: removed at once, kept past the window,
    both (removal wins), and a result ahead of the first user message (the first observation)."""
    full = replay(_tagged(), ObservationMasking(n=2))
    masked = {p for e in full.event_list for p in e.messages}
    assert 2 not in masked  # the first observation is never elided by the window
    assert len(full.event_list) > 3
    assert_same(_tagged(), ObservationMasking(n=2))


def test_a_step_that_masks_by_tag_and_by_window_lists_them_in_order() -> None:
    """A step with more results than the window keeps, the first one tagged for removal: at
    one call the tag removes it and the window passes the one after it; the event lists them
    in the input's order, as the stage does."""
    msgs: list = [SystemMessage("sys"), HumanMessage("fix /src/app.py")]
    tagged = set()
    for i in range(6):
        ids = [f"c{i}{k}" for k in "abc"]
        msgs.append(AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": c} for c in ids]))
        for k, c in enumerate(ids):
            tags = {"tags": ["remove_output"]} if k == 0 else {}
            tagged.update([len(msgs)] if k == 0 else [])
            text = f"out {c}\n" * (30 + 5 * i)
            msgs.append(ToolMessage(text, tool_call_id=c, name="run", additional_kwargs=tags))
    msgs.append(AIMessage("done"))
    trace = from_messages(msgs, trace_id="mixed step")
    hybrid = JetBrainsHybrid(n=2, keep_last_m_turns=1, observations_n=1)
    for policy in (ObservationMasking(n=1), hybrid):
        assert_same(trace, policy)
        events = replay(trace, policy).event_list
        # the case itself: a tagged result listed before another result of its call
        assert any(p in tagged for e in events for p in e.messages[:-1])


def test_every_real_trace(shared: Path) -> None:
    """Every form on every real trace; the offload form declines the SWE-agent trajectory
    (a call id reused with another tool name, which makes the stage re-decide old results),
    and the Codex form a rollout with encrypted reasoning (Codex counts earlier turns'
    reasoning too, so its stage may act under its `trigger_tokens`)."""
    seen = declined = codex_declines = 0
    chosen = (*SETTINGS[0:3], *SETTINGS[6:9], *SETTINGS[10:13], *SETTINGS[14:])
    for trace in real_traces(shared):
        for policy in chosen:
            declined += not assert_same(trace, policy, may_decline=True)
        if EarlierReasoning(trace):
            codex_declines += sum(isinstance(p, Codex) for p in chosen)
        seen += 1
    assert seen >= 10
    assert codex_declines == 2  # the shared Codex rollout, both Codex settings
    assert declined == 3 + codex_declines  # and the offload form's three on SWE-agent


def test_settings_without_a_form_get_the_full_engine() -> None:
    trace = make_trace(20, seed=1)
    assert counted(trace, InspectEdit(exclude_tools=("run",))) is None  # reaches back
    assert counted(trace, InspectEdit(keep_tool_inputs=False)) is None  # calls leave too
    assert counted(trace, ClaudeCode(cache_aligned=True)) is None  # a wrapped stage
    assert counted(trace, ClearToolUses(clear_at_least=100)) is None
    assert counted(trace, ClearToolUses(clear_tool_inputs=True)) is None
    big = "x\n" * 50_000
    renamed = from_messages(
        [
            HumanMessage("go"),
            AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": "a"}]),
            ToolMessage(big, tool_call_id="a", name="run"),
            AIMessage("", tool_calls=[{"name": "read_file", "args": {}, "id": "a"}]),
            ToolMessage(big, tool_call_id="a", name="read_file"),
            AIMessage("done"),
        ]
    )
    assert counted(renamed, ToolResultOffload()) is None  # old results are re-decided
    early = from_messages(
        [
            HumanMessage("go"),
            ToolMessage(big, tool_call_id="b", name="run"),
            AIMessage("", tool_calls=[{"name": "read_file", "args": {}, "id": "b"}]),
            AIMessage("done"),
        ]
    )
    assert counted(early, ToolResultOffload()) is None  # its call comes after it


def test_a_subclass_with_other_stages_gets_the_full_engine() -> None:
    class Twice(ObservationMasking):
        def stages(self, trace, window):  # type: ignore[no-untyped-def]
            return [*super().stages(trace, window), LastNStage(1, 1, frozenset(), frozenset())]

    class OwnRun(ClaudeCode):
        def start(self, trace, summarizer):  # type: ignore[no-untyped-def]
            return super().start(trace, summarizer)

    trace = make_trace(20, seed=1)
    assert counted(trace, Twice()) is None
    assert counted(trace, OwnRun()) is None  # a run of its own: the engine's calls not known


def test_a_refused_setting_raises_as_the_replay_does() -> None:
    trace = make_trace(10, seed=1)
    with pytest.raises(ValueError, match="n must be a whole number of turns, 1 or more"):
        replace(ObservationMasking(), n=0)  # refused when built; past that check (below),
    bad = ObservationMasking()  # the replay's own check still holds
    object.__setattr__(bad, "n", 0)
    with pytest.raises(ValueError, match="n must be a positive integer") as quick:
        counted(trace, bad)
    with pytest.raises(ValueError) as full:
        replay(trace, bad)
    assert str(quick.value) == str(full.value)


def test_the_explorer_draws_the_counts_then_replays_in_full() -> None:
    trace = make_trace(60, seed=2, model="claude-sonnet-4-5")
    ex = ThresholdExplorer(trace, policy="observation-masking", debounce=0)
    ex.control("n").value = 3
    # no event loop runs here, so the full replay (for the cost readout) is made at once
    shown = ex.replay
    assert shown is not None and shown.params["n"] == 3
    direct = replay(trace, ObservationMasking(n=3), ex.summarizer)
    assert shown.counts.equals(direct.counts)
    assert ex.figure.data[0].y.tolist() == direct.counts["system_tokens"].to_list()
    assert "$" in ex.readout.value or "cost" in ex.readout.value.lower()


def test_in_a_kernel_the_full_replay_waits_until_the_sliders_rest() -> None:
    trace = make_trace(60, seed=2, model="claude-sonnet-4-5")
    ex = ThresholdExplorer(trace, policy="observation-masking", debounce=0, price_after=0.02)

    async def move() -> tuple[bool, bool]:
        ex.control("n").value = 4
        drawn_first = ex._replay is None  # the chart came from the counts alone
        # the sliders rested (`price_after`): the cost readout's replay is made
        await trait_until(
            ex.readout, "value", lambda v: "$" in v or "cost" in v.lower(),
            "cost readout once the sliders rested", 60,
        )  # fmt: skip
        return drawn_first, ex._replay is not None

    assert asyncio.run(move()) == (True, True)
    assert ex.replay is not None and ex.replay.params["n"] == 4
    expected = replay(trace, ObservationMasking(n=4), ex.summarizer).counts
    assert ex.figure.data[4].y.tolist() == expected["tool_results_tokens"].to_list()


def test_a_count_only_event_is_the_constructors() -> None:
    """`make_event` sets the slots itself (count-only forms make one an event at nearly every
    call): field for field the event `Event(...)` makes, in the dataclass's field order, as long
    as the class validates nothing."""
    values = ("mask_observations", 7, (3, 5), 1_200, 900, "/x.txt", "why", "text")
    made, built = make_event(*values), Event(*values)
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert make_event(*values[:-1]) == Event(*values[:-1])  # `summary` defaults to None
    assert [getattr(made, f.name) for f in fields(Event)] == list(values)
    assert not hasattr(Event, "__post_init__")
