"""Bookkeeping of one stage run's requests: totals, buckets and tool-call pairing, updated
by the edits between consecutive requests.

Private speed-up machinery behind `ctxlab._replay.policies.engine.StageRun`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from itertools import islice
from typing import TYPE_CHECKING

from langchain_core.messages import BaseMessage

from ctxlab._replay.policies._engine_counts import Mark, common_prefix, mark, shared
from ctxlab._replay.policies._engine_facts import Meta

if TYPE_CHECKING:
    from ctxlab._replay.policies.engine import Item


class RequestTotals:
    """Running totals over the previous call's request, brought to the new request by the
    edits between them, so the bookkeeping of a call costs what changed, not the request.

    The edits it recognises: a shared prefix (kept), like-for-like replacements (a result
    masked or cleared, arguments truncated: same tool-call pairing, swapped in place), one
    removed block (a sliding window's oldest messages, a forgotten middle: dropped without
    touching what follows, when no tool result outside it answers a call inside it), and a
    new tail. Anything else is rewound: each item pushed leaves an undo record, so popping
    restores the exact state (tokens, buckets, tool-call pairing) of the shorter request.
    """

    def __init__(
        self, tools_tokens: int, metas: dict[int, Meta], meta: Callable[[BaseMessage], Meta]
    ) -> None:
        # `meta(message)` looks `metas` up (and adds what it lacks): the hot loops look the
        # dict up themselves first
        self.metas, self.meta = metas, meta
        # The previous request as this object's own copy (a stage may grow or edit its list in
        # place once nobody holds it: `extended`), and what is known of the list it was: a
        # `Mark` of a `Grown` (never the list itself), or a plain list.
        self.copy: list[Item] = []
        self.seen: list[Item] | Mark = []
        self.n = 0  # the request's length
        # the request's parts (tool schemas, then messages): fingerprints and tokens
        self.fps: list[int] = [0] if tools_tokens else []
        self.toks: list[int] = [tools_tokens] if tools_tokens else []
        self.base = len(self.fps)
        self.kept = 0  # parts this request shares with the previous one (a common prefix)
        # per item: (kind, tokens, calls it added, its tool_call_id if a result,
        # 1 if an orphan result / 2 if an answered one / 0)
        self.undo: list[tuple[str, int, frozenset[str] | None, str | None, int]] = []
        self.total = tools_tokens
        self.by_kind: dict[str, int] = {"tools": tools_tokens}
        self.n_kind: dict[str, int] = {}
        self.called: dict[str, int] = {}
        self.answered: dict[str, int] = {}
        self.results: dict[str, int] = {}  # tool results in the request, by tool_call_id
        self.orphan_results = 0

    def _drop(self, rec: tuple[str, int, frozenset[str] | None, str | None, int]) -> None:
        """Take one item's contribution out (the caller guarantees pairing stays exact)."""
        kind, toks, calls, tool_id, status = rec
        by_kind, n_kind = self.by_kind, self.n_kind
        self.total -= toks
        by_kind[kind] -= toks
        n_kind[kind] -= 1
        if not n_kind[kind]:
            del by_kind[kind], n_kind[kind]
        if calls:
            called = self.called
            for c in calls:
                called[c] -= 1
                if not called[c]:
                    del called[c]
        elif tool_id is not None:
            self.results[tool_id] -= 1
            if not self.results[tool_id]:
                del self.results[tool_id]
            if status == 1:
                self.orphan_results -= 1
            elif status == 2:
                self.answered[tool_id] -= 1
                if not self.answered[tool_id]:
                    del self.answered[tool_id]

    def _push(self, items: Iterable[Item]) -> None:
        """Add `items` at the end of the request (one loop, names bound once: most calls push
        the messages fed since the previous one)."""
        metas, meta = self.metas, self.meta
        by_kind, n_kind = self.by_kind, self.n_kind
        called, results, answered = self.called, self.results, self.answered
        fps, toks_of, undo = self.fps.append, self.toks.append, self.undo.append
        total, orphans = self.total, self.orphan_results
        for it in items:
            msg = it.msg
            entry = metas.get(id(msg))
            if entry is None or entry[0] is not msg:
                entry = meta(msg)
            _, (fp, toks), calls, tool_id = entry
            kind = it.kind
            total += toks
            by_kind[kind] = by_kind.get(kind, 0) + toks
            n_kind[kind] = n_kind.get(kind, 0) + 1
            fps(fp)
            toks_of(toks)
            status = 0
            if calls:
                for c in calls:
                    called[c] = called.get(c, 0) + 1
            elif tool_id is not None:
                results[tool_id] = results.get(tool_id, 0) + 1
                if tool_id in called:
                    status = 2
                    answered[tool_id] = answered.get(tool_id, 0) + 1
                else:
                    status = 1
                    orphans += 1
            undo((kind, toks, calls, tool_id, status))
        self.total, self.orphan_results = total, orphans

    def _closed(self, start: int, stop: int) -> bool:
        """No tool result outside `undo[start:stop]` answers a call made inside it, so the
        block can leave without changing any other result's pairing."""
        inside: dict[str, int] = {}
        calls: set[str] = set()
        for _, _, c, tool_id, _ in self.undo[start:stop]:
            if c:
                calls |= c
            elif tool_id is not None:
                inside[tool_id] = inside.get(tool_id, 0) + 1
        return all(self.results.get(c, 0) == inside.get(c, 0) for c in calls)

    def update(self, items: list[Item]) -> None:
        """Make `items` the current request."""
        # Always by comparison (not under INCREMENTAL): a part equal to the previous request's
        # keeps its fingerprint, as a provider's cache matches content, not objects.
        prev, m = self.copy, self.n  # m: the previous request's length
        k = start = common_prefix(prev, items, shared(self.seen, items))
        self.kept = self.base + k
        undo = self.undo
        by_kind, n_kind = self.by_kind, self.n_kind
        meta = self.meta
        while k < m and k < len(items):
            kind0, toks0, calls0, tool_id0, status = undo[k]
            _, pair, calls, tool_id = meta(items[k].msg)
            if calls != calls0 or tool_id != tool_id0:
                break
            kind, toks = items[k].kind, pair[1]
            self.total += toks - toks0
            by_kind[kind0] -= toks0
            n_kind[kind0] -= 1
            if not n_kind[kind0]:
                del by_kind[kind0], n_kind[kind0]
            by_kind[kind] = by_kind.get(kind, 0) + toks
            n_kind[kind] = n_kind.get(kind, 0) + 1
            self.fps[self.base + k], self.toks[self.base + k] = pair
            undo[k] = (kind, toks, calls, tool_id, status)
            k += 1
            k = common_prefix(prev, items, k)
        if k < m and k < len(items):
            try:  # C-speed scan for a removed block prev[k:b]; `indexOf`, not `list.index`,
                # whose miss formats the repr of the whole message into its ValueError
                b = k + 1 + operator.indexOf(islice(prev, k + 1, None), items[k])
            except ValueError:
                b = -1
            if b > 0:
                kept = common_prefix(prev[b:], items[k:])
                if self._closed(k, b):
                    for rec in reversed(undo[b + kept :]):
                        self._drop(rec)
                    for rec in undo[k:b]:
                        self._drop(rec)
                    del undo[b + kept :], undo[k:b]
                    for parts in (self.fps, self.toks):
                        del parts[self.base + b + kept :], parts[self.base + k : self.base + b]
                    k += kept
        for rec in reversed(undo[k:]):
            self._drop(rec)
        del undo[k:]
        del self.fps[self.base + k :], self.toks[self.base + k :]
        self._push(items[k:])
        del prev[start:]
        prev.extend(items[start:])
        self.seen = mark(items)
        self.n = len(items)

    @property
    def orphans(self) -> int:
        """Results without an earlier call, plus calls never answered (`count_orphans`)."""
        return self.orphan_results + len(self.called) - len(self.answered)
