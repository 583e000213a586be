"""The incremental state a Deep Agents run keeps between calls (docs/deepagents.md §5.6):
prefix sums of token counts, the latest summarisation event, the messages a summary is made
from (copied only when read).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import cast, overload

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxlab._messages import KINDS
from ctxlab._replay.policies.deepagents.message_edits import dropped, truncated

STATE_KINDS = tuple(k for k in KINDS if k != "tools")
"""Token buckets of state messages (tool schemas are not in the state)."""

EPOCH = "1970-01-01T00:00:00+00:00"
"""The history file's timestamp for a turn with no recorded start."""


def deterministic_hex(*parts: object) -> str:
    """A hex digest standing in for deepagents' random uuids (session ids, human-message file
    names), so the same trace replays to the same paths."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


class Prefix:
    """Values with prefix sums, extended lazily: appending (once per message) is a bare
    `list.append`; a query extends the sums (in C, with `accumulate`) only as far as it reads;
    an edit drops the sums after it."""

    __slots__ = ("values", "sums")

    def __init__(self) -> None:
        self.values: list[int] = []
        self.sums: list[int] = [0]  # sums[k] = sum(values[:k]), for k < len(sums)

    def set(self, index: int, value: int) -> None:
        self.set_many([(index, value)])

    def set_many(self, changes: list[tuple[int, int]]) -> None:
        for index, value in changes:
            self.values[index] = value
        if changes:
            del self.sums[min(index for index, _ in changes) + 1 :]

    def total(self, start: int, stop: int) -> int:
        """sum(values[start:stop])."""
        sums = self.sums
        if len(sums) <= stop:
            known = len(sums) - 1
            sums[known:] = accumulate(self.values[known:stop], initial=sums[known])
        return sums[stop] - sums[start]


Undo = tuple["SummaryEvent | None", tuple[int, list[tuple[int, int]]], str]
"""What a summarisation that ends in `ContextOverflowError` restores: the previous event, the
reasoning drop to undo, the session id it would have taken."""

REBUILD = object()
"""`DeepAgentsRun.request_event` when the next request must be built whole."""


@dataclass
class SummaryEvent:
    """The latest summarisation: the state position of its cutoff, the summary message and its
    tokens, the state length when it was made, the history file."""

    cutoff: int
    message: HumanMessage
    tokens: int
    created_at: int
    file_path: str | None


class Sent(Sequence[BaseMessage]):
    """Messages of a request as sent, copied on first read (`EffectiveList._messages`).

    A summarisation hands what it summarises to the summariser and to the history file.
    Decisions never read it, and neither does a `Fixed` summariser, so the copies with
    truncated arguments and dropped reasoning are only made for whoever looks. Everything is
    captured when the sequence is taken (state messages, which positions are cut, which lose
    their bound reasoning), so a late read gives what an immediate one would have.
    """

    def __init__(
        self,
        summary: BaseMessage | None,
        messages: list[BaseMessage],
        first: int,
        cut: frozenset[int],
        dropped: list[int],
        truncation: tuple[int, str],
    ) -> None:
        self._summary = summary
        self._messages = messages
        self._first = first
        self._cut = cut
        self._dropped = dropped
        self._truncation = truncation
        self._built: list[BaseMessage] | None = None

    def _list(self) -> list[BaseMessage]:
        if self._built is None:
            built = [] if self._summary is None else [self._summary]
            at = len(built) - self._first  # list index of state position p: p + at
            stop = self._first + len(self._messages)
            built += self._messages
            for p in self._cut:
                if self._first <= p < stop:
                    # `_cut` holds the positions of AIMessages argument truncation shortens
                    built[p + at] = truncated(cast(AIMessage, built[p + at]), *self._truncation)
            for p in self._dropped:
                built[p + at] = dropped(built[p + at])
            self._built = built
        return self._built

    def __len__(self) -> int:
        return len(self._messages) + (self._summary is not None)

    @overload
    def __getitem__(self, index: int) -> BaseMessage: ...

    @overload
    def __getitem__(self, index: slice) -> list[BaseMessage]: ...

    def __getitem__(self, index: int | slice) -> BaseMessage | list[BaseMessage]:
        return self._list()[index]

    def __iter__(self) -> Iterator[BaseMessage]:
        return iter(self._list())
