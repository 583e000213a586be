"""Each Deep Agents call's request part by part (`Call.request`, for the prompt-cache
simulation): an edit of the previous call's request, fingerprinted by state position and
version, so a call without an event costs O(1) amortised.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate
from typing import TYPE_CHECKING

from ctxlab._replay.policies.base import Call, Event, Request
from ctxlab._replay.policies.deepagents.effective import EffectiveList

if TYPE_CHECKING:
    from ctxlab._trace import Turn


class RequestParts(EffectiveList):
    """The request-building part of `DeepAgentsRun`, on the state it keeps."""

    system_tokens: int
    window_kinds: dict[str, int]
    fed: int
    last_fingerprint: int
    named: dict[int, tuple[object, int]]
    versions: dict[int, int]
    fixed_parts: tuple[tuple[int, int], ...]
    request: Request | None
    request_event: object
    truncated_from: int
    truncated_to: int
    part_of: int
    dirty: int
    edited_until: int
    unreasoned: set[int]
    scaled: bool
    requests: bool

    if TYPE_CHECKING:  # the run's cached properties

        @property
        def baselines(self) -> list[int]: ...

    def _record(self, turn: Turn, events: list[Event], trunc_stop: int, count: int) -> Call:
        """This call as replayed: its count, tokens by kind, message count, events, the
        uncompacted baseline and the request part by part."""
        ev = self.event
        by_kind = self.window_kinds.copy()
        if trunc_stop > 0:
            start = min(self._window_start(), len(self.view))
            stop = self._pos(trunc_stop - 1) + 1
            if stop > start:
                by_kind["ai"] -= self._saved(start, stop)
        if ev is not None:
            by_kind["summary"] += ev.tokens
        by_kind["system"] += self.system_tokens
        by_kind["tools"] = self.settings.tools_tokens
        return Call(
            turn.index,
            turn.position,
            count,
            by_kind,
            self._eff_len(),
            events,
            self.baselines[self.fed],
            self._request(trunc_stop) if self.requests else None,
        )

    def _fingerprint(self, obj: object) -> int:
        """The fingerprint of an object sent outside the state (see `__post_init__`); the dict
        keeps each object alive, so its id cannot be reused by another within the run."""
        entry = self.named.get(id(obj))
        if entry is None:
            entry = self.named[id(obj)] = (obj, self._new_fingerprint())
        return entry[1]

    def _new_fingerprint(self) -> int:
        """A fingerprint no state position has (negative), with room for the flags."""
        self.last_fingerprint -= 4
        return self.last_fingerprint

    def _request(self, trunc_stop: int) -> Request:
        """This call's request part by part, as an edit of the previous call's.

        Parts: the tool schemas (one part: the counter measures them together), the system
        prompt, the summary message, then each state message from the event's cutoff as sent.
        A state message's fingerprint names its position and version (`__post_init__`), plus 2
        when its arguments are truncated in this request and 1 when its bound reasoning is
        dropped: the copies deepagents sends, told apart without being made. Tokens are those
        the count adds up, so the parts sum to the call's `context_tokens`. Usage scaling
        multiplies the whole count (`ceil(raw * scale)`): there the first k parts hold
        `ceil(raw_k * scale)` tokens (raw_k: their raw sum), so the parts still sum to the
        count, and the whole request is given each call (the factor moves with each call).

        Otherwise only what can differ from the previous request is visited: the state
        positions from `dirty` (appended, or edited in place by an offload or a tail clip) and
        from the first position whose truncation changed (the truncated range of `tpos` starts
        where the event does and grows or shrinks at its end); after a new summary event,
        everything after the fixed parts.
        """
        ev, n, first, previous = self.event, len(self.view), self.dirty, self.request
        if (
            ev is self.request_event
            and not trunc_stop
            and self.truncated_to == self.truncated_from
            and first >= self.edited_until
        ):  # the common call: messages appended, nothing else changed
            request = self.request = Request(
                previous,
                self.part_of + first,
                range(first << 2, n << 2, 4),
                self.etok.values[first:n],
            )
            self.dirty = n
            return request
        tpos = self.tpos
        head: list[tuple[int, int]] = []  # on a rebuild: the fixed parts, the summary
        edit = ev is self.request_event
        if edit:
            truncated_from = self.truncated_from
        else:
            first = 0 if ev is None else ev.cutoff
            truncated_from = self.truncated_from = bisect_left(tpos, first)
            kept = 0 if previous is None or self.scaled else len(self.fixed_parts)
            if not kept:
                head.extend(self.fixed_parts)
            if ev is not None:
                head.append((self._fingerprint(ev.message), ev.tokens))
            self.part_of = kept + len(head) - first
            if not self.scaled:
                self.request_event = ev
        # `tpos` indices [truncated_from, truncated_to) are truncated: effective indices below
        # `trunc_stop`, i.e. state positions below `_pos(trunc_stop - 1) + 1`
        truncated_to = truncated_from
        if trunc_stop:
            below = trunc_stop if ev is None else ev.cutoff + trunc_stop - 1
            truncated_to = bisect_left(tpos, below)
        if truncated_to != self.truncated_to:
            if edit:
                first = min(first, tpos[min(truncated_to, self.truncated_to)])
            self.truncated_to = truncated_to
        if edit:
            if ev is not None and first < ev.cutoff:
                first = ev.cutoff
            kept = self.part_of + first
        # the messages as fed, then the exceptions: edited in place or with their reasoning
        # dropped (both only below `edited_until`), arguments truncated
        fingerprints: Sequence[int] = range(first << 2, n << 2, 4)
        tokens = self.etok.values[first:n]
        truncating = truncated_to and tpos[truncated_to - 1] >= first
        if first < self.edited_until or truncating:
            fingerprints = list(fingerprints)
            versions, unreasoned = self.versions, self.unreasoned
            for p in range(first, min(n, self.edited_until)):
                if p in versions or p in unreasoned:
                    fingerprints[p - first] = versions.get(p, p << 2) + (p in unreasoned)
            if truncating:
                tsaved = self.tsaved
                for i in range(bisect_left(tpos, first), truncated_to):
                    fingerprints[tpos[i] - first] += 2
                    tokens[tpos[i] - first] -= tsaved[i + 1] - tsaved[i]
        if head:
            fingerprints = [*(f for f, _ in head), *fingerprints]
            tokens = [*(t for _, t in head), *tokens]
        if self.scaled:
            tokens = scaled_tokens(tokens, self.scale)
        request = self.request = Request(previous, kept, fingerprints, tokens)
        self.dirty = n
        return request


def scaled_tokens(tokens: list[int], scale: float) -> list[int]:
    """Token counts whose first k sum to `ceil(raw_k * scale)` (raw_k: their raw sum), the
    rounding LangChain applies to the whole count, so all of them sum to the scaled count."""
    out = []
    before = 0
    for raw in accumulate(tokens):
        now = math.ceil(raw * scale)
        out.append(now - before)
        before = now
    return out
