"""What the replay engines know of a trace's own messages at one characters-per-token: their
tokens, buckets, tool-call ids and request fingerprints, measured once per trace.

Private speed-up machinery behind `ctxlab._replay.policies.engine.StageRun` (and the token counts
behind `DeepAgentsRun`). A slider move replays the same trace again, and every run looked each
history message up afresh (its tokens through the memo, its bucket, its tool-call ids): a third
of a 1,000-turn replay under `raw` (2,667 messages). A run now starts from copies of these
tables and only measures the messages its stages make (masked copies, summaries).

The tables are by position (the history is compared with the one measured at every run's
start; the tokens are measured at once, the rest on first use) and by message identity, like
`ctxlab._cost.tokens`' memo (messages are treated as immutable); they hold the messages they
describe, so an `id` is never reused while they live, and leave with the trace.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._messages import kind_of
from ctxlab._weak_memo import WeakMemo

if TYPE_CHECKING:
    from ctxlab._trace import Trace, Turn

T = TypeVar("T")

Meta = tuple[BaseMessage, tuple[int, int], "frozenset[str] | None", "str | None"]
"""What a run knows of a message: the message itself (keeping its `id` unique), its
`(fingerprint, tokens)` request part, the ids of the tool calls it makes (None if not an
AIMessage) and the call it answers (`result_of`)."""


class TraceFacts:
    """One trace's messages at one characters-per-token (`facts`): their tokens measured at
    once, every other table on first use (a Deep Agents run reads only the tokens, and the
    identity tables cost seven times the counting: 3.2 against 0.46 ms at 2,667 messages)."""

    def __init__(self, messages: tuple[BaseMessage, ...], chars_per_token: float) -> None:
        self.messages = messages
        """The history as measured (`facts` measures again when it changed)."""
        self.chars_per_token = chars_per_token
        self.counts: tuple[int, ...] = tuple(tk.tokens_list(messages, chars_per_token))
        """Each message's tokens (`ctxlab._cost.tokens.tokens_list`)."""
        self.built: dict[Hashable, Any] = {}
        """Tables an engine builds from these facts on first use (the stage engine's history
        as its `Item`s), kept as long as the facts are (`kept`)."""

    def kept(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()` the first time `key` is asked for, the same table every time after: what
        an engine derives from the history alone is built once per trace and counter."""
        if key not in self.built:
            self.built[key] = make()
        return self.built[key]

    @cached_property
    def kinds(self) -> tuple[str, ...]:
        """Each message's token bucket (`kind_of`)."""
        return tuple(map(kind_of, self.messages))

    @cached_property
    def metas(self) -> dict[int, Meta]:
        """id -> `Meta`; a message's fingerprint is its first position + 1, so the
        fingerprints a run gives the messages its stages make start at `len(messages) + 1`
        (`first_free`). A message object met twice keeps its first position."""
        metas: dict[int, Meta] = {}
        for pos, (message, toks) in enumerate(zip(self.messages, self.counts, strict=True)):
            if id(message) not in metas:
                metas[id(message)] = meta_of(message, pos + 1, toks)
        return metas

    @cached_property
    def tokens(self) -> dict[int, tuple[BaseMessage, int]]:
        """id -> (message, tokens): the seed of a run's `TokenCache`."""
        return {key: (meta[0], meta[1][1]) for key, meta in self.metas.items()}

    @property
    def first_free(self) -> int:
        """The first fingerprint no history message has."""
        return len(self.messages) + 1


_FACTS: WeakMemo[dict[float, TraceFacts]] = WeakMemo()
"""Per live trace: {chars per token: facts}."""


def calls_of(message: BaseMessage) -> frozenset[str] | None:
    """The ids of the tool calls `message` makes (None if it is not an AIMessage)."""
    if isinstance(message, AIMessage):
        return frozenset(i for c in message.tool_calls if (i := c.get("id")))
    return None


def result_of(message: BaseMessage) -> str | None:
    """The id of the tool call `message` answers (None if it is not a ToolMessage)."""
    return message.tool_call_id if isinstance(message, ToolMessage) else None


def meta_of(message: BaseMessage, fingerprint: int, tokens: int) -> Meta:
    """The `Meta` of `message` with the given request part."""
    return (message, (fingerprint, tokens), calls_of(message), result_of(message))


def facts(trace: Trace, chars_per_token: float) -> TraceFacts:
    """The facts of `trace`'s history at `chars_per_token`, measured on first use and again
    when the history changed since (a trace still being built, a message swapped): a
    C-speed comparison of the history with the one measured, identity first."""
    known = _FACTS.setdefault(trace, dict)
    found = known.get(chars_per_token)
    history = tuple(trace.messages)
    if found is None or found.messages != history:
        found = known[chars_per_token] = TraceFacts(history, chars_per_token)
    return found


@dataclass(frozen=True, slots=True)
class TurnTable:
    """A trace's model calls as columns (read-only arrays), for the count-only forms and the
    frames they fill: every move read them off the `Turn` objects again (0.1 ms a move)."""

    turns: tuple[Turn, ...]
    """The calls described (the table is made again when `trace.turns` changed)."""
    index: np.ndarray
    """Each call's `Turn.index`."""
    position: np.ndarray
    """Each call's `Turn.position`."""
    fed: np.ndarray
    """The history length a replay holds at each call (`counts_only.fed_lengths`)."""
    recorded: list[int | None]
    """Each call's recorded input tokens (None where the trace has none)."""


_TURNS: WeakMemo[TurnTable] = WeakMemo()
"""Per live trace: its `TurnTable`."""


def turn_table(trace: Trace) -> TurnTable:
    """`trace`'s `TurnTable`, made on first use and again when its calls changed since."""
    turns = tuple(trace.turns)
    known = _TURNS.get(trace)
    if known is not None and known.turns == turns:
        return known
    n = len(turns)
    at = np.fromiter((t.position for t in turns), dtype=np.int64, count=n)
    after = at + np.fromiter((t.output is not None for t in turns), dtype=bool, count=n)
    # a replay feeds up to a call's position, and past its recorded output once it is made
    fed_before = np.maximum.accumulate(np.concatenate(([0], after[:-1]))) if n else at
    index = np.fromiter((t.index for t in turns), dtype=np.int64, count=n)
    fed = np.maximum(at, fed_before)
    for column in (at, index, fed):
        column.flags.writeable = False
    table = TurnTable(turns, index, at, fed, [t.input_tokens for t in turns])
    return _TURNS.put(trace, table)
