"""JetBrains "Complexity Trap" presets against the paper's code.

Source: `SummarizeEveryNTurns.__call__` in sweagent/agent/history_processors.py of
Recursive-Safeguarding/the-complexity-trap@adfaa1a18b8b (a fork of
JetBrains-Research/the-complexity-trap; the configs there set `n: 21, keep_last_m_turns: 10,
enable_static_checkpointing: true` for LLM-Summary and `n: 43` plus `last_n_observations n: 10`
for the hybrid). `upstream_requests` below restates that method's control flow on plain
(role, content) pairs so each call's request can be compared with ctxlab's.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ctxlab import replay
from ctxlab._trace import from_messages
from ctxlab.policies import JetBrainsHybrid, JetBrainsLLMSummary
from ctxlab.summarizers import Fixed
from tests._policy_traces import agent
from tests.synthetic import make_trace


class Recording:
    """A summariser that answers `S1`, `S2`, ... and keeps what it was given."""

    name = "recording"

    def __init__(self) -> None:
        self.inputs: list[list[BaseMessage]] = []

    def summarize(self, messages, *, prompt):
        self.inputs.append(list(messages))
        return f"S{len(self.inputs)}"


def upstream_requests(history: list[tuple[str, str]], n: int, m: int, static: bool):
    """The request SummarizeEveryNTurns returns at each model call (the agent calls it with the
    history so far: system, user, then (assistant, tool) turns), restated from adfaa1a18b8b."""
    cache: list[tuple[str, str]] = []
    summaries = 0
    out = []
    for end in range(4, len(history) + 1, 2):  # before each action after the first turn
        hist = history[:end]
        turns = [hist[i : i + 2] for i in range(2, len(hist), 2)]
        processed = (len(cache) - 2) * n if cache else 0
        unprocessed = turns[processed:]
        if len(unprocessed) < n + m:
            req = (cache + [s for t in unprocessed for s in t]) if cache else hist
        else:
            keep = [s for t in unprocessed[n:] for s in t]
            summaries += 1
            summary = ("assistant", f"Checkpoint for the last {n} turns:\nS{summaries}")
            cache = hist[:2] + [summary] if not cache else cache + [summary]
            req = hist[:2] + [summary] + keep if static else cache + keep
        out.append(req)
    return out


def sent_requests(trace, policy, summarizer):
    """ctxlab's request at each call, as (role, content) pairs, by watching the last stage."""
    run = policy.start(trace, summarizer)
    stage = run.stages[-1]
    apply, seen = stage.apply, []

    def watch(items, ctx):
        out = apply(items, ctx)
        seen.append([(_role(it.msg), it.msg.text) for it in out])
        return out

    stage.apply = watch
    for turn in trace.turns:
        run.call(turn)
    return seen


def _role(msg: BaseMessage) -> str:
    return {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}[msg.type]


def _swe_agent(turns: int) -> list[BaseMessage]:
    """system, task, then `turns` (action with one tool call, observation) pairs, then done."""
    msgs: list[BaseMessage] = [SystemMessage("sys"), HumanMessage("fix the bug in /src/app.py")]
    for i in range(turns):
        call = {"name": "run", "args": {}, "id": f"c{i}"}
        msgs += [
            AIMessage(f"action {i}", tool_calls=[call]),
            ToolMessage(f"obs {i}", tool_call_id=f"c{i}"),
        ]
    return [*msgs, AIMessage("done")]


@pytest.mark.parametrize("static", [True, False])
@pytest.mark.parametrize(("n", "m"), [(3, 2), (2, 0), (4, 1)])
def test_requests_match_the_papers_code(n: int, m: int, static: bool) -> None:
    msgs = _swe_agent(17)
    pairs = [(_role(x), x.text) for x in msgs[:-1]]
    policy = JetBrainsLLMSummary(n=n, keep_last_m_turns=m, enable_static_checkpointing=static)
    ours = sent_requests(from_messages(msgs), policy, Recording())
    assert ours[0] == pairs[:2]  # ctxlab's first call (before any turn) is not in the oracle
    assert ours[1:] == upstream_requests(pairs, n, m, static)


def test_summariser_gets_problem_statement_then_previous_checkpoint() -> None:
    trace = from_messages(agent(12))
    rec = Recording()
    replay(trace, JetBrainsLLMSummary(n=3, keep_last_m_turns=2), summarizer=rec)
    assert len(rec.inputs) >= 2
    first, second = rec.inputs[0][0].text, rec.inputs[1][0].text
    assert first == "<PROBLEM_STATEMENT>\nfix the bug in /src/app.py\n</PROBLEM_STATEMENT>\n"
    assert second == (
        "<PREVIOUS_CHECKPOINT>\nCheckpoint for the last 3 turns:\nS1\n</PREVIOUS_CHECKPOINT>\n"
    )
    assert len(rec.inputs[0]) == 1 + 3 * 2  # context, then 3 (action, observation) turns


def test_jetbrains_summarises_n_turns_when_n_plus_m_unprocessed() -> None:
    trace = from_messages(agent(8))
    result = replay(trace, JetBrainsLLMSummary(n=3, keep_last_m_turns=2), summarizer=Fixed("S"))
    first = next(c for c in result.calls if c.events)
    # turn i (AIMessage i) is unprocessed-count i at call i; first fires with 5 turns present
    assert first.turn == 5
    assert first.events[0].messages == tuple(range(2, 8))  # 3 turns = 6 messages after the task
    assert all(c.orphans == 0 for c in result.calls)


def test_static_checkpointing_sends_one_checkpoint_on_summarising_calls_only() -> None:
    trace = from_messages(_swe_agent(14))
    policy = JetBrainsLLMSummary(n=3, keep_last_m_turns=2)
    seen = sent_requests(trace, policy, Recording())
    fired = [c.turn for c in replay(trace, policy, summarizer=Fixed("S")).calls if c.events]
    count = [sum(text.startswith("Checkpoint") for _, text in req) for req in seen]
    assert len(fired) >= 3 and fired[1] + 1 < len(count)
    for k, turn in enumerate(fired, start=1):
        assert count[turn] == 1  # the summarising call: the newest checkpoint only
        if turn + 1 < len(count):
            assert count[turn + 1] == k  # the next call: every checkpoint so far


def test_jetbrains_hybrid_masks_after_summary() -> None:
    trace = make_trace(turns=120)
    result = replay(trace, JetBrainsHybrid())
    kinds = {e.kind for e in result.event_list}
    assert {"summarize", "mask_observations"} <= kinds
    assert JetBrainsHybrid().enable_static_checkpointing is True
