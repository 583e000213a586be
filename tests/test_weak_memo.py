"""The one memo of values per live object (`ctxlab._weak_memo.WeakMemo`): found only for the
object it was made for, gone when that object is freed."""

from __future__ import annotations

import gc

from langchain_core.messages import HumanMessage

from ctxlab._weak_memo import WeakMemo


def test_a_value_is_found_for_its_object_only_and_leaves_with_it() -> None:
    memo: WeakMemo[int] = WeakMemo()
    a, b = HumanMessage("same"), HumanMessage("same")  # equal, not identical
    assert memo.setdefault(a, lambda: 1) == 1
    assert memo.setdefault(a, lambda: 2) == 1  # made once
    assert memo.get(b) is None
    key = id(a)
    del a
    gc.collect()
    assert key not in memo.table


def test_a_reused_id_never_finds_the_dead_objects_value() -> None:
    memo: WeakMemo[str] = WeakMemo()
    a = HumanMessage("first")
    memo.put(a, "first's")
    ref, _ = memo.table[id(a)]
    # an entry whose object died but whose callback has not run yet (as under a paused
    # collector with a cycle): a new object at the same id must not see it
    memo.table[id(a)] = (lambda: None, "stale")  # type: ignore[assignment]
    assert memo.get(a) is None
    assert memo.setdefault(a, lambda: "fresh") == "fresh"
    assert ref() is a


def test_what_is_remembered_per_trace_is_made_once_and_leaves_with_the_trace() -> None:
    """The caches of a trace's facts, fact index and biller are this memo: a second ask is
    the same object, and none of them keeps the trace alive (a value referring to its trace
    would)."""
    from ctxlab._cost import billing
    from ctxlab._evaluate import evaluation, survival
    from tests.synthetic import make_trace

    trace = make_trace(12, seed=3, model="claude-sonnet-4-5", provider="anthropic")
    facts = evaluation.trace_facts(trace)
    assert evaluation.trace_facts(trace) is facts
    shared = survival.index(trace, facts)
    assert survival.index(trace, facts) is shared
    assert survival.index(trace, facts[:1]) is not shared  # other facts: made again
    biller = billing.biller_of(trace)
    assert billing.biller_of(trace) is biller
    key = id(trace)
    memos = (evaluation._EXTRACTED, survival._INDEXES, billing._BILLERS)
    assert all(key in memo.table for memo in memos)
    del trace
    gc.collect()
    assert not any(key in memo.table for memo in memos)
