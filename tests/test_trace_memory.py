"""Memory of a trace grows in proportion to its turns (issue 16, long traces).

A tuple of inputs per turn made a trace whose calls each see the whole history hold n²/2
references: doubling the turns quadrupled what the turns held (1.1 GB at 10,000 turns). These
tests measure with `tracemalloc` what building the turns allocates at 1,000 and 2,000 turns and
require it to grow at most ~2x, which the tuple version (about 4x) fails.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from bench.bench_memory import allocated, references
from ctxlab._ingest.inputs import Context, Recorder
from ctxlab._trace import from_messages
from tests.synthetic import make_trace

PROPORTIONAL = 2.5
"""Largest growth allowed when the turns double (linear: about 2; a tuple per turn: about 4)."""


@pytest.fixture(scope="module")
def histories() -> dict[int, list[BaseMessage]]:
    """The synthetic benchmark conversation at 1,000 and 2,000 turns (messages only)."""
    return {n: make_trace(n, fmt="openai", seed=1).messages for n in (1000, 2000)}


def test_turns_of_a_trace_grow_linearly(histories: dict[int, list[BaseMessage]]) -> None:
    small, small_bytes = allocated(lambda: from_messages(histories[1000]))
    large, large_bytes = allocated(lambda: from_messages(histories[2000]))
    assert len(large.turns) == 2 * len(small.turns) == 2000
    # every call still sees the whole history before it
    assert list(large.turns[-1].inputs) == large.messages[: large.turns[-1].position]
    ratio = large_bytes / small_bytes
    assert ratio < PROPORTIONAL, f"{small_bytes} -> {large_bytes} bytes: {ratio:.2f}x"
    # and the absolute size per turn stays small (a tuple of ~2,700 inputs is ~21 kB)
    assert large_bytes / len(large.turns) < 2_000


def _session(recorder: Recorder, turns: int) -> list[Any]:
    """Snapshots of a context grown as a harness does: a call, a tool result, sometimes a
    user message; every 300 calls a summary replaces all but the last 10 messages, every 97
    a tool result is cleared in place (a microcompact)."""
    context = Context()
    snapshots = []
    for i in range(turns):
        snapshots.append(recorder.snapshot(context))
        call = AIMessage(content="", tool_calls=[{"name": "t", "args": {}, "id": f"c{i}"}])
        context.append(call)
        context.append(ToolMessage(content=f"result {i}", tool_call_id=f"c{i}"))
        if i % 7 == 0:
            context.append(HumanMessage(content=f"note {i}"))
        if i % 300 == 299:
            context = Context([HumanMessage(content=f"summary {i}"), *context[-10:]])
        elif i % 97 == 96:
            context[len(context) - 4] = ToolMessage(content="(cleared)", tool_call_id="x")
    return snapshots


def test_recorded_contexts_grow_linearly() -> None:
    small, small_bytes = allocated(lambda: _session(Recorder(), 1000))
    large, large_bytes = allocated(lambda: _session(Recorder(), 2000))
    assert len(large) == 2000
    ratio = large_bytes / small_bytes
    assert ratio < PROPORTIONAL, f"{small_bytes} -> {large_bytes} bytes: {ratio:.2f}x"


def test_bench_memory_counts_shared_storage_once() -> None:
    trace = from_messages(make_trace(300, fmt="openai", seed=2).messages)
    exposed, stored = references(trace)
    assert exposed == sum(len(t.inputs) for t in trace.turns) > 10 * len(trace.messages)
    assert stored == len(trace.messages)  # every turn is a prefix of the one history
