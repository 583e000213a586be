"""`Turn.inputs` as shared slices (`ctxlab._ingest.inputs`) behaves as the tuple it replaced."""

from __future__ import annotations

import pickle
import random

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxlab._ingest.inputs import MAX_PARTS, Context, Inputs, Recorder
from ctxlab._trace import from_messages


def _messages(n: int) -> list[BaseMessage]:
    return [
        (AIMessage if i % 2 else HumanMessage)(content=f"message {i}", id=str(i)) for i in range(n)
    ]


def test_prefix_reads_like_a_tuple() -> None:
    history = _messages(10)
    view = Inputs.prefix(history, 6)
    as_tuple = tuple(history[:6])
    assert len(view) == 6 and list(view) == list(as_tuple)
    assert view == as_tuple and as_tuple == view and not (view != as_tuple)
    assert view != tuple(history[:5]) and view != tuple(history[:7])
    assert view[0] is history[0] and view[-1] is history[5]
    assert view[1:3] == as_tuple[1:3] and isinstance(view[1:], tuple)
    assert view[::-2] == as_tuple[::-2]
    assert history[3] in view and history[7] not in view
    assert view.index(history[4]) == 4 and view.count(history[4]) == 1
    assert (*view, history[6]) == (*as_tuple, history[6])
    assert view + (history[6],) == as_tuple + (history[6],)
    assert (history[6],) + view == (history[6],) + as_tuple
    assert view != list(as_tuple)  # as a tuple: never equal to a list
    with pytest.raises(IndexError):
        view[6]
    with pytest.raises(IndexError):
        view[-7]
    history.append(AIMessage(content="later"))  # the history grows; the view does not
    assert len(view) == 6 and tuple(view) == as_tuple


def test_equal_views_of_different_lists_and_hash() -> None:
    history = _messages(5)
    a = Inputs.prefix(history, 4)
    b = Inputs.of(history[:4])
    assert a == b and b == a and a != Inputs.prefix(history, 3)
    with pytest.raises(TypeError):  # messages are unhashable, as in a tuple of them
        hash(a)
    assert Inputs() == () and len(Inputs()) == 0 and list(Inputs()) == []


def test_pickle_keeps_the_history_shared() -> None:
    trace = from_messages(_messages(9))
    copy = pickle.loads(pickle.dumps(trace))
    assert [list(t.inputs) for t in copy.turns] == [copy.messages[: t.position] for t in copy.turns]
    assert copy.turns[-1].inputs[0] is copy.messages[0]  # one history, not a copy per turn
    assert copy.turns == trace.turns  # equal messages, other objects


def test_turns_compare_as_before() -> None:
    messages = _messages(8)
    a, b = from_messages(messages), from_messages(messages)
    assert a.turns == b.turns  # same messages, different views
    assert a.turns[2].inputs == tuple(messages[: a.turns[2].position])


@pytest.mark.parametrize("seed", range(6))
def test_recorder_snapshots_equal_the_contexts(seed: int) -> None:
    """Random edits of every kind a loader makes; every snapshot equals a tuple of the context
    taken at the time, object for object, and storage stays bounded."""
    rng = random.Random(seed)
    recorder = Recorder()
    context = Context() if seed % 2 else []
    expected: list[tuple[BaseMessage, ...]] = []
    snapshots: list[Inputs] = []
    count = 0

    def new() -> BaseMessage:
        nonlocal count
        count += 1
        return HumanMessage(content=f"m{count}")

    for _ in range(400):
        roll = rng.random()
        if roll < 0.55 or not context:
            context.append(new())
        elif roll < 0.65:
            context.extend([new(), new()])
        elif roll < 0.72:
            context[rng.randrange(len(context))] = new()
        elif roll < 0.77:
            del context[rng.randrange(len(context)) :]
        elif roll < 0.8:
            context.insert(rng.randrange(len(context)), new())
        elif roll < 0.83:
            context.pop(rng.randrange(len(context)))
        elif roll < 0.85:
            context[1:3] = [new()]
        elif roll < 0.86:
            context.clear()
        elif roll < 0.87:
            context.reverse()
        elif roll < 0.9:
            context = (Context if seed % 2 else list)(context[-3:])
        if rng.random() < 0.6:
            snapshots.append(recorder.snapshot(context))
            expected.append(tuple(context))
    for snap, want in zip(snapshots, expected, strict=True):
        assert len(snap) == len(want) and all(a is b for a, b in zip(snap, want, strict=True))
        assert len(snap.parts) <= MAX_PARTS


def test_appends_share_one_slice() -> None:
    recorder = Recorder()
    context = Context()
    snaps = []
    for message in _messages(50):
        context.append(message)
        snaps.append(recorder.snapshot(context))
    bases = {id(base) for s in snaps for base, _, _ in s.parts}
    assert len(bases) == 1 and all(len(s.parts) == 1 for s in snaps)
    (base,) = {id(b): b for s in snaps for b, _, _ in s.parts}.values()
    assert len(base) == 50  # each message stored once
