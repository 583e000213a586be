"""What the replay engines know of a trace's own messages at one characters-per-token: their
tokens, buckets, tool-call ids and request fingerprints, measured once per trace.

Private speed-up machinery behind `ctxlab.policies.engine.StageRun` (and the token counts
behind `DeepAgentsRun`). A slider move replays the
same trace again, and every run looked each history message up afresh (its tokens through
the memo, its bucket, its tool-call ids): a third of a 1,000-turn replay under `raw`
(2,667 messages). A run now starts from copies of these tables and only measures the messages
its stages make (masked copies, summaries).

The tables are by position (the history is compared with the one measured at every run's start)
and by message identity, like `ctxlab.tokens`' memo (messages are treated as immutable); they
hold the messages they describe, so an `id` is never reused while they live, and leave with
the trace.
"""

from __future__ import annotations

import weakref
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab import tokens as tk
from ctxlab.message_facts import kind_of

if TYPE_CHECKING:
    from ctxlab.trace import Trace

Meta = tuple[BaseMessage, tuple[int, int], "frozenset[str] | None", "str | None"]
"""What a run knows of a message: the message itself (keeping its `id` unique), its
`(fingerprint, tokens)` request part, the ids of the tool calls it makes (None if not an
AIMessage) and the call it answers (`result_of`)."""


class TraceFacts(NamedTuple):
    """One trace's messages at one characters-per-token (`facts`)."""

    messages: tuple[BaseMessage, ...]
    """The history as measured (`facts` measures again when it changed)."""
    kinds: tuple[str, ...]
    """Each message's token bucket (`kind_of`)."""
    counts: tuple[int, ...]
    """Each message's tokens (`ctxlab.tokens.tokens_list`)."""
    tokens: dict[int, tuple[BaseMessage, int]]
    """id -> (message, tokens): the seed of a run's `TokenCache`."""
    metas: dict[int, Meta]
    """id -> `Meta`; a message's fingerprint is its first position + 1, so the fingerprints a
    run gives the messages its stages make start at `len(messages) + 1` (`first_free`)."""
    built: dict[str, Any]
    """Tables an engine builds from these facts on first use (the stage engine's history as
    its `Item`s), kept as long as the facts are."""

    @property
    def first_free(self) -> int:
        """The first fingerprint no history message has."""
        return len(self.messages) + 1


_FACTS: dict[int, tuple[weakref.ref, dict[float, TraceFacts]]] = {}
"""id(trace) -> (weakref to it, {chars per token: facts}); an entry leaves with its trace."""


def _forget(key: int, ref: weakref.ref, memo: dict = _FACTS) -> None:
    """Weakref callback (reads no module globals: it may run at interpreter shutdown)."""
    entry = memo.get(key)
    if entry is not None and entry[0] is ref:
        del memo[key]


def calls_of(message: BaseMessage) -> frozenset[str] | None:
    """The ids of the tool calls `message` makes (None if it is not an AIMessage)."""
    if isinstance(message, AIMessage):
        return frozenset(c["id"] for c in message.tool_calls if c.get("id"))
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
    key = id(trace)
    entry = _FACTS.get(key)
    if entry is None or entry[0]() is not trace:
        entry = _FACTS[key] = (weakref.ref(trace, partial(_forget, key)), {})
    found = entry[1].get(chars_per_token)
    if found is None or found.messages != tuple(trace.messages):
        found = entry[1][chars_per_token] = _measure(trace.messages, chars_per_token)
    return found


def _measure(history: list[BaseMessage], chars_per_token: float) -> TraceFacts:
    messages = tuple(history)
    counts = tuple(tk.tokens_list(messages, chars_per_token))
    tokens: dict[int, tuple[BaseMessage, int]] = {}
    metas: dict[int, Meta] = {}
    for pos, (message, toks) in enumerate(zip(messages, counts, strict=True)):
        if id(message) not in metas:  # a message object met twice keeps its first position
            tokens[id(message)] = (message, toks)
            metas[id(message)] = meta_of(message, pos + 1, toks)
    return TraceFacts(messages, tuple(map(kind_of, messages)), counts, tokens, metas, {})
