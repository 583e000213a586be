"""`RunningCount` (a stage's count of its successive inputs) always equals a count from scratch:
while the list only grows, after an edit, after `forget`, without system messages, and with the
fast paths off."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from ctxlab._replay.policies import _engine_counts
from ctxlab._replay.policies._engine_counts import Grown, RunningCount, extended
from ctxlab._replay.policies.engine import Item


def _tok(message) -> int:
    return len(message.text) + 1


def _count(items, system: bool = True) -> int:
    return sum(_tok(it.msg) for it in items if system or it.kind != "system")


def _items(n: int, start: int = 0) -> list[Item]:
    return [Item(i, AIMessage(f"message {i} " * (i % 7 + 1)), "ai") for i in range(start, n)]


def test_a_growing_list_is_counted_by_what_it_gained() -> None:
    recounts: list[int] = []

    def recount(items) -> int:
        recounts.append(len(items))
        return _count(items)

    counted = RunningCount()
    history = Grown([Item(0, SystemMessage("system prompt"), "system"), *_items(5, 1)])
    assert counted(history, recount, _tok) == _count(history)
    for stop in range(6, 40, 3):
        history.extend(_items(stop, len(history)))
        assert counted(history, recount, _tok) == _count(history)
    assert recounts == [5]  # once; every later call added what was new


def test_an_edit_or_forget_counts_afresh() -> None:
    counted = RunningCount()
    history, stage = Grown(_items(10)), object()
    history.owner = stage  # made by `stage`: it grows and edits it in place
    counted(history, _count, _tok)
    edited = extended(history, _items(12, 10), edits=True, owner=stage)
    assert edited is history
    edited[3] = Item(3, HumanMessage("a much longer replacement " * 20), "human")
    edited.same = min(edited.same, 3)
    assert counted(edited, _count, _tok) == _count(edited)
    counted.forget()
    sentinel = 10**6
    assert counted(edited, lambda items: sentinel, _tok) == sentinel


def test_system_messages_are_left_out_on_request() -> None:
    counted = RunningCount()
    history = Grown(_items(4))
    assert counted(history, lambda i: _count(i, False), _tok, system=False) == _count(history)
    history.append(Item(4, SystemMessage("late system message"), "system"))
    history.extend(_items(8, 5))
    got = counted(history, lambda i: _count(i, False), _tok, system=False)
    assert got == _count(history, system=False)


def test_with_the_fast_paths_off_every_call_counts_afresh(monkeypatch) -> None:
    monkeypatch.setattr(_engine_counts, "INCREMENTAL", False)
    calls: list[int] = []
    counted = RunningCount()
    history = Grown(_items(3))
    for stop in (3, 6, 9):
        history.extend(_items(stop, len(history)))
        counted(history, lambda i: calls.append(1) or _count(i), _tok)
    assert len(calls) == 3
