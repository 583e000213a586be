"""One memo for everything ctxlab remembers about a live object (a trace, a message, a feed).

Traces and messages are treated as immutable while they live, so what is derived from one (its
measured sizes, its history's facts, its calls as columns) is worked out once and remembered
for as long as the object lives, and no longer. Such objects are often unhashable (pydantic
messages compare by value, traces are dataclasses), so the memo is keyed by identity: each
entry holds a weak reference to its object, leaves when the object is freed (the reference's
callback), and is found only while the reference still points at the object, as a freed
object's id may be reused by a new one.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from functools import partial
from typing import Any, Generic, TypeVar

V = TypeVar("V")


def _forget(table: dict[int, tuple[weakref.ref, Any]], key: int, ref: weakref.ref) -> None:
    """Weakref callback: drop the entry of an object that died. It reads no module globals
    (the table is bound), as callbacks also run while the interpreter shuts down."""
    entry = table.get(key)
    if entry is not None and entry[0] is ref:
        del table[key]


class WeakMemo(Generic[V]):
    """Values remembered per live object, by identity (see the module docstring).

    A value must not refer to its object, or the memo would keep the object alive."""

    __slots__ = ("table",)

    def __init__(self) -> None:
        self.table: dict[int, tuple[weakref.ref, V]] = {}
        """id -> (weak reference to the object, value); hot loops may read it directly,
        checking `entry[0]() is obj` as `get` does."""

    def get(self, obj: object) -> V | None:
        """The value remembered for `obj`, or None."""
        entry = self.table.get(id(obj))
        return entry[1] if entry is not None and entry[0]() is obj else None

    def put(self, obj: object, value: V) -> V:
        """Remember `value` for `obj` (replacing any), and give it back."""
        key = id(obj)
        self.table[key] = (weakref.ref(obj, partial(_forget, self.table, key)), value)
        return value

    def setdefault(self, obj: object, make: Callable[[], V]) -> V:
        """The value remembered for `obj`, made with `make()` and remembered the first time."""
        entry = self.table.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        return self.put(obj, make())


__all__ = ["WeakMemo"]
