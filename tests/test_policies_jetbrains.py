"""JetBrains "Complexity Trap" presets. Source: JetBrains-Research/the-complexity-trap
`SummarizeEveryNTurns` (summarise when unprocessed turns >= n + keep_last_m_turns; the first n
are summarised); Hybrid = summary(N=43, M=10) + last_n_observations(10)."""

from __future__ import annotations

from ctxlab import replay
from ctxlab.policies import (
    JetBrainsHybrid,
    JetBrainsLLMSummary,
)
from ctxlab.summarizers import Fixed
from ctxlab.trace import from_messages
from tests._policy_traces import agent
from tests.synthetic import make_trace


def test_jetbrains_summarises_n_turns_when_n_plus_m_unprocessed():
    trace = from_messages(agent(8))
    result = replay(trace, JetBrainsLLMSummary(n=3, keep_last_m_turns=2), summarizer=Fixed("S"))
    first = next(c for c in result.calls if c.events)
    # turn i (AIMessage i) is unprocessed-count i at call i; first fires with 5 turns present
    assert first.turn == 5
    assert first.events[0].messages == tuple(range(2, 8))  # 3 turns = 6 messages after the task
    assert all(c.orphans == 0 for c in result.calls)


def test_jetbrains_hybrid_masks_after_summary():
    trace = make_trace(turns=120)
    result = replay(trace, JetBrainsHybrid())
    kinds = {e.kind for e in result.event_list}
    assert {"summarize", "mask_observations"} <= kinds
