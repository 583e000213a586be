"""Token counting for the stage engine: per-message counts and prefix sums of requests.

Private speed-up machinery behind `ctxlab._replay.policies.engine`: `Context.tokens` and
`Context.count` read it, and `appended` is the test a stage's fast path starts with. The
`INCREMENTAL` switch turns every fast path off, so tests can check that each replay equals
the full recomputation.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from langchain_core.messages import BaseMessage

from ctxlab._cost import tokens as tk
from ctxlab._replay.policies._engine_facts import facts

if TYPE_CHECKING:
    from ctxlab._replay.policies.engine import Item
    from ctxlab._trace import Trace


class TokenCache:
    """Tokens of a message object at one characters-per-token, looked up once per object.

    Keeps a reference to every message it measured, so an `id` is never reused while cached
    (a replay's messages live as long as the run anyway)."""

    __slots__ = ("cpt", "_d")

    def __init__(
        self, chars_per_token: float, seed: dict[int, tuple[BaseMessage, int]] | None = None
    ) -> None:
        self.cpt = chars_per_token
        self._d: dict[int, tuple[BaseMessage, int]] = dict(seed) if seed else {}

    @classmethod
    def of(cls, trace: Trace, chars_per_token: float) -> TokenCache:
        """A cache that starts with `trace`'s history measured (`_engine_facts.facts`)."""
        return cls(chars_per_token, facts(trace, chars_per_token).tokens)

    def __call__(self, message: BaseMessage) -> int:
        hit = self._d.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        toks = tk.message_tokens(message, self.cpt)
        self._d[id(message)] = (message, toks)
        return toks

    def each(self, items: Iterable[Item]) -> list[int]:
        """Tokens of each item's message, the lookup inlined (prefix sums of a whole request)."""
        found = self._d.get
        return [
            hit[1] if (hit := found(id(m := it.msg))) is not None and hit[0] is m else self(m)
            for it in items
        ]

    def by_kind(self, items: Iterable[Item], kinds: Iterable[str]) -> dict[str, int]:
        """Tokens of `items` by bucket (each of `kinds` present), the lookup inlined: the
        count-only form counts every request a compaction builds (`threshold_counts`)."""
        out = dict.fromkeys(kinds, 0)
        found = self._d.get
        for it in items:
            m = it.msg
            hit = found(id(m))
            out[it.kind] += hit[1] if hit is not None and hit[0] is m else self(m)
        return out


INCREMENTAL = True
"""Stages take their fast paths (work proportional to what changed since the previous call).
Tests switch this off to check that every replay equals the full recomputation each stage
falls back to when its input is not the previous input plus new messages."""


_serials = itertools.count(1)


class Grown(list):
    """A list whose first `same` items are the very objects of `base`'s first `same` (an
    append-only history, or a previous request plus new messages): comparing the two can
    start at `same` (`shared`), so the check costs what changed.

    Who may change it in place is explicit, never inferred from the interpreter: only its
    `owner` (the stage that made it through `extended`), and only until it is `handed` to a
    stage that did not declare `KEEPS_MARKS` (which may keep the list itself, so it must
    never change under it). Everyone else copies. `serial` names it for good, so a stage can
    remember it by a `Mark` without keeping it alive."""

    __slots__ = ("base", "same", "serial", "owner", "handed")

    def __init__(self, items: Sequence[Item] = (), base: list[Item] | None = None) -> None:
        super().__init__(items)
        self.base = base
        self.same = 0 if base is None else len(base)
        self.serial = next(_serials)
        self.owner: object = None
        self.handed = False


class Mark(NamedTuple):
    """A `Grown` as it was seen (its serial and length), held instead of the list itself."""

    serial: int
    n: int


def mark(items: list[Item]) -> list[Item] | Mark:
    """What a stage keeps of its input to test the next one with `appended`: a `Mark` of a
    `Grown` (so its owner may append to it in place), any other list itself."""
    return Mark(items.serial, len(items)) if isinstance(items, Grown) else items


def grown(base: list[Item], new: Sequence[Item]) -> Grown:
    """`base + new` as a `Grown` of `base` (lower `same` after editing an item below it,
    before handing it on).

    `base` forgets its own base, so a run's requests do not form a chain kept alive."""
    if isinstance(base, Grown):
        base.base = None
    out = Grown(base, base)
    out.extend(new)
    return out


def extended(prev: list[Item], new: Sequence[Item], *, edits: bool, owner: object) -> Grown:
    """`grown(prev, new)` for a stage's previous output `prev`, made in place when `owner`
    (the calling stage) made it and no stage that may keep lists was handed it: a long request
    then costs what changed, not a copy and a free of the whole list at every call. A copy
    otherwise, which `owner` then owns.

    `edits`: the caller will also replace items below `len(prev)` (masking older results).
    In place, the list then takes a new serial and keeps the old one in an empty `Grown`
    base, so a `Mark` of it still learns through `shared` that only the first `same` items
    are unchanged; the caller lowers `same` to the first item it edits, as it does for a
    copy. Without edits the list only grows, which every `Mark` of it allows."""
    if not isinstance(prev, Grown) or prev.owner is not owner or prev.handed:
        out = grown(prev, new)
        out.owner = owner
        return out
    if edits:
        ghost = Grown()
        ghost.serial = prev.serial
        prev.base, prev.same, prev.serial = ghost, len(prev), next(_serials)
    prev.extend(new)
    return prev


def shared(a: Sequence[Item] | Mark | None, b: Sequence[Item]) -> int:
    """A length the two lists are known to share item for item, through a `Grown`'s base or
    serial (0 when nothing is known: a plain list may have been edited since it was seen)."""
    if a is None or not isinstance(b, Grown):
        if isinstance(b, list) and isinstance(a, Grown) and a.base is b:
            return min(a.same, len(b))
        return 0
    if isinstance(a, Mark):
        if b.serial == a.serial:
            return min(a.n, len(b))
        base = b.base
        if isinstance(base, Grown):
            if base.serial == a.serial:
                return min(a.n, b.same)
            older = base.base  # an edit of the marked list's growth (a view, then its edit)
            if isinstance(older, Grown) and older.serial == a.serial:
                return min(a.n, base.same, b.same)
        return 0
    if b is a:
        return len(a)
    base = b.base
    if base is a:
        return min(b.same, len(a))
    if isinstance(base, Grown) and base.base is a:  # an edit of a previous request's growth
        return min(b.same, base.same, len(a))
    if isinstance(a, Grown) and a.base is b:
        return min(a.same, len(b))
    return 0


def common_prefix(a: Sequence[Item], b: Sequence[Item], start: int = 0) -> int:
    """Length of the longest common prefix of two requests known to share `start` items,
    compared at C speed.

    Items compare by identity first and by value otherwise (equal content is an equal prefix,
    as a provider's prompt cache sees it). Blocks from `start` on, growing from 32 to 1,024
    items, are compared as slices (C loops) until one differs, then bisected, so finding the
    first difference costs about one pass over what differs.
    """
    n = min(len(a), len(b))
    lo = min(start, n)
    step = 32
    while lo < n:
        hi = min(n, lo + step)
        if a[lo:hi] != b[lo:hi]:
            break
        lo = hi
        step = min(1024, 2 * step)
    else:
        return n
    # a[:lo] == b[:lo] and a[lo:hi] != b[lo:hi]
    while hi - lo > 8:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    while a[lo] == b[lo]:
        lo += 1
    return lo


def appended(previous: list[Item] | Mark | None, items: list[Item]) -> list[Item] | None:
    """`items[len(previous):]` when `items` is `previous` plus new messages, else None (and
    always None with `INCREMENTAL` off): the test every stage's fast path starts with.

    `previous` may be a `Mark` (`mark(previous)`): then only what the marked list is known to
    share with `items` counts, and anything else is None (the stage recomputes)."""
    if not INCREMENTAL or previous is None:
        return None
    if isinstance(previous, Mark):
        n = previous.n
        if len(items) < n or shared(previous, items) < n:
            return None
        return items[n:]
    n = len(previous)
    if len(items) < n:
        return None
    same = shared(previous, items)
    if same < n and items[same:n] != previous[same:]:
        return None
    return items[n:]


class RunningCount:
    """The tokens of a stage's successive inputs (or requests), each usually the last plus new
    messages: the last count plus the new messages' tokens, else (and after `forget`) counted
    afresh. A stage that checks a threshold at every call then pays for what is new, not for a
    search of the prefix-sum cache (`Sums`)."""

    __slots__ = ("seen", "tokens")

    def __init__(self) -> None:
        self.seen: list[Item] | Mark | None = None
        self.tokens = 0

    def __call__(
        self,
        items: list[Item],
        recount: Callable[[list[Item]], int],
        tokens: Callable[[BaseMessage], int],
        *,
        system: bool = True,
    ) -> int:
        """`recount(items)`, by `tokens` of the new items (system messages only if `system`)
        when `items` extends the list last counted."""
        new = appended(self.seen, items)
        if new is None:
            self.tokens = recount(items)
        else:
            self.tokens += sum(tokens(it.msg) for it in new if system or it.kind != "system")
        self.seen = mark(items)
        return self.tokens

    def forget(self) -> None:
        """Count afresh next time (the list counted was edited, or replaced)."""
        self.seen = None


class Sums:
    """Token totals of requests, reusing the prefix sums of a recently counted list.

    A call's stages count lists that mostly repeat earlier ones (the history plus a few new
    messages, the same request with one result masked near its end), so a count costs a
    C-speed comparison plus the tokens of what differs, not a walk of the whole request; the
    comparison starts where the list is known to share the entry's source (`shared`).
    Entries hold copies: a caller mutating its list later cannot corrupt them.
    """

    __slots__ = ("tok", "_entries", "_last")

    KEEP = 6

    def __init__(self, tok: TokenCache) -> None:
        self.tok = tok
        # [copy of the list, cumulative tokens of every item, of the non-system items,
        #  the list last counted with the entry, whose first items the copy holds]
        self._entries: list[list[Any]] = []
        # the list last counted (a `Mark` of a `Grown`) and its entry, for `rebase`
        self._last: tuple[Sequence[Item] | Mark, list[Any]] | None = None

    def rebase(self, before: Sequence[Item] | Mark, after: Sequence[Item], same: int) -> None:
        """`after` replaces `before` (or the list of a `Mark`, as it was when marked), the
        list just counted, sharing its first `same` items:
        the entry of `before` becomes `after`'s at the cost of what changed (a stage that
        edits a few items near the end of a long request at every call would otherwise pay
        for a search and a copy of the whole prefix at its next count)."""
        last = self._last
        self._last = None
        if not INCREMENTAL or last is None or not _is(last[0], before):
            return
        entry = last[1]
        n = before.n if isinstance(before, Mark) else len(before)
        if len(entry[0]) != n or same > n or same > len(after):
            return
        del entry[0][same:], entry[1][same + 1 :], entry[2][same + 1 :]
        self._extend(entry, after, same)

    def totals(self, items: Sequence[Item]) -> tuple[int, int]:
        """(tokens of every item, tokens of the non-system items)."""
        every, non_system = self.prefix_sums(items)
        return every[-1], non_system[-1]

    def prefix_sums(self, items: Sequence[Item]) -> tuple[list[int], list[int]]:
        """Cumulative tokens (length `len(items) + 1`) over every / non-system items.

        The lists returned belong to the cache: read them before the next count.
        """
        entries = self._entries
        if INCREMENTAL:
            # the newest entry that `items` extends (one C-speed comparison each) grows in place
            for i, entry in enumerate(entries):
                n = len(entry[0])
                if n > len(items):
                    continue
                same = min(shared(entry[3], items), n)
                if same == n or (items[n - 1] == entry[0][-1] and items[same:n] == entry[0][same:]):
                    if n < len(items):
                        self._extend(entry, items, n)
                    if i:
                        entries.insert(0, entries.pop(i))
                    self._last = (mark(items), entry)  # type: ignore[arg-type]
                    return entry[1], entry[2]
        # else a new entry, from the one sharing the longest prefix with `items`
        best_k, best = 0, None
        if INCREMENTAL:
            for entry in entries:
                k = common_prefix(entry[0], items, min(shared(entry[3], items), len(entry[0])))
                if k > best_k:
                    best_k, best = k, entry
                    if 2 * k >= len(items):
                        break  # most of it: do not pay more comparisons for the rest
        if best is None:
            entry = [[], [0], [0], None]
        else:
            entry = [best[0][:best_k], best[1][: best_k + 1], best[2][: best_k + 1], None]
        self._extend(entry, items, best_k)
        entries.insert(0, entry)
        del entries[self.KEEP :]
        self._last = (mark(items), entry)  # type: ignore[arg-type]
        return entry[1], entry[2]

    def _extend(self, entry: list[Any], items: Sequence[Item], start: int) -> None:
        """Grow `entry` by `items[start:]`: their tokens looked up in one pass, the sums
        accumulated in C (a compaction counts its whole new request here)."""
        every, non_system = entry[1], entry[2]
        new = items[start:]
        toks = self.tok.each(new)
        every.extend(itertools.accumulate(toks, initial=every.pop()))
        if any(it.kind == "system" for it in new):
            toks = [0 if it.kind == "system" else t for it, t in zip(new, toks, strict=True)]
        non_system.extend(itertools.accumulate(toks, initial=non_system.pop()))
        entry[0].extend(new)
        entry[3] = mark(items)  # type: ignore[arg-type]


def _is(seen: Sequence[Item] | Mark, items: Sequence[Item] | Mark) -> bool:
    """`items` is the list `seen` was taken of, unchanged since (or the same `Mark`)."""
    if isinstance(items, Mark):
        return seen == items
    if isinstance(seen, Mark):
        return isinstance(items, Grown) and items.serial == seen.serial and len(items) == seen.n
    return seen is items
