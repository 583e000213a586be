"""The effective message list a Deep Agents call sees, read from the run's state without
building it (docs/deepagents.md §5): the latest summary message followed by the state from the
event's cutoff, its token suffix sums with argument truncation applied below a point, the
thresholds its sizes resolve to, and LangChain's usage scaling where enabled.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import TYPE_CHECKING

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab._cost import tokens as tk
from ctxlab._replay.policies.deepagents.state import Prefix, Sent, SummaryEvent
from ctxlab._replay.policies.langchain_rules import size_threshold

if TYPE_CHECKING:
    from ctxlab._replay.policies.deepagents.settings import Settings


class EffectiveList:
    """Index `j` of the effective list <-> state position; `DeepAgentsRun` holds the state."""

    settings: Settings
    cpt: float
    view: list[BaseMessage]
    etok: Prefix
    event: SummaryEvent | None
    tpos: list[int]
    tsaved: list[int]
    dropped_until: int
    scale: float

    if TYPE_CHECKING:  # the run's cached property

        @property
        def reasoned(self) -> list[int]: ...

    def _window_start(self) -> int:
        """The state position the effective list's messages start at."""
        return self.event.cutoff if self.event is not None else 0

    def _eff_len(self) -> int:
        n = len(self.view)
        ev = self.event
        if ev is None:
            return n
        return 1 if ev.cutoff > n else 1 + n - ev.cutoff

    def _pos(self, j: int) -> int:
        """State position of effective index `j` (-1 for the summary message)."""
        ev = self.event
        if ev is None:
            return j
        return -1 if j == 0 else ev.cutoff + j - 1

    def _suffix(self, j: int, trunc_stop: int) -> int:
        """Tokens of effective[j:], with truncation applied to effective indices < trunc_stop.

        The state positions are `_pos` inlined: binary searches call this ~log(n) times.
        """
        n = len(self.view)
        ev = self.event
        if ev is None:
            start, stop = j, trunc_stop
            total = self.etok.total(start, n)
        else:
            stop = ev.cutoff + trunc_stop - 1 if trunc_stop > 1 else 0
            if j == 0:
                start = ev.cutoff
                total = ev.tokens + (self.etok.total(start, n) if start <= n else 0)
            else:
                start = ev.cutoff + j - 1
                total = self.etok.total(start, n)
        if stop > start:
            total -= self._saved(start, stop)
        return total

    def _flags(self, j: int, trunc_stop: int) -> int:
        start = self.event.cutoff if (self.event is not None and j == 0) else self._pos(j)
        stop = self._pos(trunc_stop - 1) + 1 if trunc_stop > 0 else 0
        if stop <= start:
            return 0
        return bisect_left(self.tpos, stop) - bisect_left(self.tpos, start)

    def _saved(self, start: int, stop: int) -> int:
        """Tokens truncation saves over state positions [start, stop)."""
        return (
            self.tsaved[bisect_left(self.tpos, stop)] - self.tsaved[bisect_left(self.tpos, start)]
        )

    def _raw(self, j: int) -> BaseMessage:
        """Effective message `j` before the request-only edits (truncated arguments, dropped
        reasoning). Those keep a message's type and its tool calls' ids and names, which is all
        the cutoff and tail-clip searches read, so they need no copies."""
        p = self._pos(j)
        if p < 0:
            assert self.event is not None  # position -1 is its summary
            return self.event.message
        return self.view[p]

    def _messages(self, start: int, stop: int, trunc_stop: int) -> Sent:
        """Effective messages [start, stop) as the request holds them (arguments truncated
        below `trunc_stop`, bound reasoning dropped), copied only when first read."""
        summary = None
        if self.event is not None and start == 0 and stop > 0:
            summary, start = self.event.message, 1
        first = self._pos(start) if start < stop else 0
        last = self._pos(stop - 1) + 1 if start < stop else 0
        cut_below = self._pos(trunc_stop - 1) + 1 if trunc_stop > 0 else 0
        cut = self.tpos[bisect_left(self.tpos, first) : bisect_left(self.tpos, cut_below)]
        reasoned = self.reasoned
        dropped = reasoned[
            bisect_left(reasoned, first) : bisect_left(reasoned, min(last, self.dropped_until))
        ]
        s = self.settings
        return Sent(
            summary,
            self.view[first:last],
            first,
            frozenset(cut),
            dropped,
            (s.max_arg_length, s.truncation_text),
        )

    def _scaled(self, raw: int, msgs: list[BaseMessage] | None, with_fixed: bool) -> int:
        """Apply LangChain's usage-metadata scaling (only when enabled). The factor of a whole
        request's count (`with_fixed`) is kept in `scale`: the last one taken before a call is
        recorded is that call's, which its request's parts are scaled by."""
        if not self.settings.use_usage_metadata or msgs is None:
            return raw
        fixed_msgs = [self.settings.system] if with_fixed else []
        counted = fixed_msgs + msgs
        per = [tk.message_tokens(m, self.cpt) for m in counted]
        scale = tk.usage_scale(counted, per, self.settings.tools_tokens if with_fixed else 0)
        if with_fixed:
            self.scale = scale
        return math.ceil(raw * scale)

    def _all(self, trunc_stop: int) -> list[BaseMessage] | None:
        if not self.settings.use_usage_metadata:
            return None
        return list(self._messages(0, self._eff_len(), trunc_stop))

    def _threshold(self, kind: str, value: float) -> int | None:
        return size_threshold(kind, value, self.settings.window)

    def _reported(self, threshold: float, msgs: list[BaseMessage] | None) -> bool:
        """LangChain's reported-usage trigger (only with `use_usage_metadata`)."""
        if msgs is None:
            return False
        last = next((m for m in reversed(msgs) if isinstance(m, AIMessage)), None)
        if last is None or last.usage_metadata is None:
            return False
        reported = last.usage_metadata.get("total_tokens", -1)
        provider = last.response_metadata.get("model_provider")
        return bool(reported) and reported >= threshold and provider == self.settings.provider
