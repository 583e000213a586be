"""What each recorded call received (`Turn.inputs`), stored once for the whole trace.

An agent's calls mostly see the previous call's input, its output and a few new messages: as a
tuple per call, a trace of n calls holds about n²/2 references (1.1 GB for a 10,000-turn
synthetic trace, against 20 MB at 1,000). Here each call's input is an `Inputs`: a read-only
sequence made of a few slices of lists that only ever grow (the trace's own history, or a
loader's append-only "tape"), so consecutive calls share everything they have in common and a
trace holds references in proportion to what changed between calls.

Loaders build them in one of two ways:

* `Inputs.prefix(history, n)`: the call saw the first `n` messages of the full history, as
  every format without recorded per-call inputs assumes (the list must only grow from then on:
  it is the trace's `messages`).
* `Recorder.snapshot(context)`: the call saw `context`, a list the loader edits as the recorded
  harness did (appends, a summary in place of old messages, a cleared tool result). Only what
  differs from the previous snapshot (compared by identity) is stored. A `Context` (a list that
  remembers the lowest index edited since the last snapshot) spares the comparison, which
  matters for sessions of thousands of calls.

An `Inputs` compares equal to a tuple (or another `Inputs`) of the same messages, slices to a
tuple, pickles with its shared lists (pickle's memo keeps them shared) and never changes.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, compress, count, islice
from typing import Any, SupportsIndex, overload

from langchain_core.messages import BaseMessage

Part = tuple[list[BaseMessage], int, int]
"""A slice `(base, start, stop)` of an append-only list."""

MAX_PARTS = 16
"""Slices a snapshot may have before it is copied whole into one (edits scattered through a
context, as observation masking makes, would otherwise make every access slower)."""


class Inputs(Sequence[BaseMessage]):
    """An immutable sequence of messages made of slices of shared, append-only lists."""

    __slots__ = ("_len", "_parts")

    def __init__(self, parts: Iterable[Part] = ()) -> None:
        # a list and a loop, not generators: half the cost, paid once per recorded call
        kept = tuple([p for p in parts if p[2] > p[1]])
        self._parts: tuple[Part, ...] = kept
        length = 0
        for _, start, stop in kept:
            length += stop - start
        self._len = length

    @classmethod
    def prefix(cls, history: list[BaseMessage], stop: int) -> Inputs:
        """The first `stop` messages of `history` (which must only grow from now on)."""
        return cls(((history, 0, stop),))

    @classmethod
    def of(cls, messages: Iterable[BaseMessage]) -> Inputs:
        """`messages` in a list of their own (when nothing is there to share)."""
        own = list(messages)
        return cls(((own, 0, len(own)),))

    @property
    def parts(self) -> tuple[Part, ...]:
        """The slices this sequence is made of (for the memory bound in tests)."""
        return self._parts

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[BaseMessage]:
        parts = self._parts
        if len(parts) == 1:
            base, start, stop = parts[0]
            return iter(base) if start == 0 and stop == len(base) else islice(base, start, stop)
        return chain.from_iterable(islice(b, s, e) for b, s, e in parts)

    @overload
    def __getitem__(self, index: SupportsIndex) -> BaseMessage: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[BaseMessage, ...]: ...

    def __getitem__(self, index: SupportsIndex | slice) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        i = operator.index(index)
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("inputs index out of range")
        for base, start, stop in self._parts:
            if i < stop - start:
                return base[start + i]
            i -= stop - start
        raise IndexError("inputs index out of range")  # unreachable: lengths add up

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Inputs):
            if _same_parts(self._parts, other._parts):
                return True
            return self._len == other._len and tuple(self) == tuple(other)
        if isinstance(other, tuple):
            return self._len == len(other) and tuple(self) == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: object) -> tuple[BaseMessage, ...]:
        if isinstance(other, (tuple, Inputs)):
            return (*self, *other)
        return NotImplemented

    def __radd__(self, other: object) -> tuple[BaseMessage, ...]:
        if isinstance(other, tuple):
            return (*other, *self)
        return NotImplemented

    def __reduce__(self) -> tuple[Any, ...]:
        return (Inputs, (self._parts,))

    def __repr__(self) -> str:
        return f"Inputs({list(self)!r})"

    def starts_with(self, other: Inputs) -> bool:
        """Whether this sequence begins with `other` as the same slices of the same lists (no
        message compared; False does not mean the messages differ)."""
        return other._len <= self._len and _same_parts(self.head(other._len), other._parts)

    def head(self, n: int) -> tuple[Part, ...]:
        """The slices of the first `n` messages."""
        if n >= self._len:
            return self._parts
        out: list[Part] = []
        for base, start, stop in self._parts:
            if n <= 0:
                break
            take = min(n, stop - start)
            out.append((base, start, start + take))
            n -= take
        return tuple(out)


class Context(list[BaseMessage]):
    """A loader's as-sent context: a list that remembers how many leading messages are
    unchanged since the last `Recorder.snapshot` of it, so the snapshot need not compare them.
    Appending never lowers that count; any other edit lowers it to the first index it touches."""

    __slots__ = ("clean",)

    def __init__(self, messages: Iterable[BaseMessage] = ()) -> None:
        super().__init__(messages)
        self.clean = 0

    def _touch(self, index: int) -> None:
        self.clean = max(0, min(self.clean, index))

    def __setitem__(self, index: Any, value: Any) -> None:
        self._touch(_first(index, len(self)))
        super().__setitem__(index, value)

    def __delitem__(self, index: Any) -> None:
        self._touch(_first(index, len(self)))
        super().__delitem__(index)

    def __imul__(self, n: SupportsIndex) -> Context:
        self._touch(len(self) if operator.index(n) >= 1 else 0)
        return super().__imul__(n)

    def insert(self, index: SupportsIndex, value: BaseMessage) -> None:
        self._touch(_first(operator.index(index), len(self)))
        super().insert(index, value)

    def pop(self, index: SupportsIndex = -1) -> BaseMessage:
        self._touch(_first(operator.index(index), len(self)))
        return super().pop(index)

    def remove(self, value: BaseMessage) -> None:
        self._touch(0)
        super().remove(value)

    def clear(self) -> None:
        self._touch(0)
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._touch(0)
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        self._touch(0)
        super().reverse()


def _same_parts(a: tuple[Part, ...], b: tuple[Part, ...]) -> bool:
    """Whether two sequences are the same slices of the same lists (no message compared)."""
    return len(a) == len(b) and all(
        x[0] is y[0] and x[1] == y[1] and x[2] == y[2] for x, y in zip(a, b, strict=True)
    )


def _first(index: Any, length: int) -> int:
    """The first position an index or slice touches (0 when unsure)."""
    if isinstance(index, slice):
        if index.step not in (None, 1):
            return 0
        return index.indices(length)[0]
    i = operator.index(index)
    return i + length if i < 0 else i


class Recorder:
    """Turns successive states of a loader's context into `Inputs` that share storage."""

    __slots__ = ("_last", "_source", "_tape")

    def __init__(self) -> None:
        self._tape: list[BaseMessage] = []
        self._last = Inputs()
        self._source: Sequence[BaseMessage] | None = None

    def snapshot(self, context: Sequence[BaseMessage]) -> Inputs:
        """`context` as it is now, stored as the previous snapshot's unchanged leading
        messages plus a copy of the rest."""
        last = self._last
        if context is self._source and isinstance(context, Context):
            keep = min(context.clean, len(last), len(context))
        else:
            keep = _common(last, context)
        parts = list(last.head(keep))
        added = len(context) - keep
        if added:
            tape = self._tape
            start = len(tape)
            tape.extend(islice(context, keep, None))
            if parts and parts[-1][0] is tape and parts[-1][2] == start:
                base, first, _ = parts.pop()
                parts.append((base, first, start + added))
            else:
                parts.append((tape, start, start + added))
        if len(parts) > MAX_PARTS:
            tape = self._tape
            start = len(tape)
            tape.extend(context)
            parts = [(tape, start, len(tape))]
        result = Inputs(parts)
        self._last, self._source = result, context
        if isinstance(context, Context):
            context.clean = len(context)
        return result


def _common(last: Inputs, context: Sequence[BaseMessage]) -> int:
    """How many leading messages `context` shares, object for object, with `last`."""
    differ = next(compress(count(), map(operator.is_not, last, context)), None)
    return min(len(last), len(context)) if differ is None else differ
