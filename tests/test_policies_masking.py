"""Observation masking presets.

Sources: SWE-agent `sweagent/agent/history_processors.py` LastNObservations (placeholder
"Old environment output: (N lines omitted)", the first observation never elided, `polling`);
OpenHands `observation_masking_condenser.py` ('<MASKED>' outside the last attention_window events).
"""

from __future__ import annotations

from ctxlab import replay
from ctxlab._cost.tokens import count_tokens
from ctxlab._trace import from_messages
from ctxlab.policies import ObservationMasking, OpenHandsObservationMasking, SWEAgentMasking
from tests._policy_traces import agent
from tests.synthetic import make_trace


def _masked_positions(result) -> set[int]:
    out: set[int] = set()
    for e in result.event_list:
        out |= set(e.messages)
    return out


def test_last_n_keeps_n_observations_and_the_task():
    """Observations = task + tool results; all but the last n (and the first) are elided."""
    trace = from_messages(agent(6))
    result = replay(trace, ObservationMasking(n=2))
    # final call sees 6 results (positions 3,5,...,13) + the task = 7 observations;
    # omit observation_indices[1:7-2] = results 1..4 -> positions 3,5,7,9
    assert _masked_positions(result) == {3, 5, 7, 9}
    assert result.calls[-1].by_kind["stubs"] > 0
    assert all(c.orphans == 0 for c in result.calls)


def test_placeholder_text_counts_lines():
    """Each call masks the result that left the last n=1, in place of a placeholder that counts
    its lines: what the request saves is the result's tokens less the placeholder's."""
    from ctxlab._replay.policies.masking import _swe_placeholder

    msgs = agent(4, size=100)  # 20 lines each
    trace = from_messages(msgs)
    run = ObservationMasking(n=1).start(trace, None)
    calls = [run.call(t) for t in trace.turns]
    events = [e for c in calls for e in c.events]
    assert [(e.turn, e.kind, e.messages) for e in events] == [
        (2, "mask_observations", (3,)),
        (3, "mask_observations", (5,)),
        (4, "mask_observations", (7,)),
    ]
    placeholder = "Old environment output: (20 lines omitted)"
    assert _swe_placeholder(msgs[3]) == placeholder
    masked = msgs[3].model_copy(update={"content": placeholder})
    saved = count_tokens([msgs[3]]) - count_tokens([masked])
    assert saved > 0
    assert [e.tokens_before - e.tokens_after for e in events] == [saved, 2 * saved, 3 * saved]


def test_polling_delays_masking():
    """With polling=3, masking moves in steps of 3 observations (fewer prompt rewrites)."""
    trace = from_messages(agent(8))
    every = replay(trace, ObservationMasking(n=2))
    polled = replay(trace, ObservationMasking(n=2, polling=3))
    assert len(polled.event_list) < len(every.event_list)


def test_swe_agent_preset_is_n5():
    assert SWEAgentMasking().n == 5 and ObservationMasking().n == 10


def test_openhands_masks_outside_attention_window():
    """Events (messages) older than the last attention_window are masked if observations."""
    trace = from_messages(agent(6))
    result = replay(trace, OpenHandsObservationMasking(attention_window=4))
    # final request: 14 messages; indices < 10 that are tool results -> 3,5,7,9
    assert _masked_positions(result) == {3, 5, 7, 9}


def test_long_trace_masking_bounds_context():
    trace = make_trace(turns=200)
    raw = replay(trace, ObservationMasking(n=10**6))
    masked = replay(trace, ObservationMasking())
    assert masked.turns["context_tokens"].max() < raw.turns["context_tokens"].max()
