"""The recorded history as `FilesystemMiddleware.wrap_tool_call` leaves it in a Deep Agents
state, worked out once per trace and feed settings (`feed_of`), so a run's feed is slices.

What the tool node leaves in the state depends on the history and three settings only (the
tool-result limit, the argument truncation length and text), never on the summarisation
between calls: each recorded message becomes one state entry (itself, the error deepagents
answers a refused same-path mutation with, the stub of an already evicted human message, or an
offload stub). A slider moving the trigger, keep or window replays the same trace with the
same feed, and the per-message walk (its classification, the calls by id each result answers,
the size of each truncated call) was about a third of a 1,000-turn replay at the default
settings; a run now extends its state by slices of these lists (`DeepAgentsRun._feed`).

Offloaded results are the exception: their stubs, files and events are made by the run when
the feed reaches them, because a result without a tool-call id is named by the run's own
counter (shared with session ids and human-message files), which depends on the calls before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxlab import tokens as tk
from ctxlab.message_facts import kind_of, message_text
from ctxlab.policies._engine_facts import facts
from ctxlab.policies.deepagents.filesystem import (
    TOOLS_EXCLUDED_FROM_EVICTION,
    rejected_result,
    text_len,
    truncated_human_message,
)
from ctxlab.policies.deepagents.message_edits import NONE_REJECTED, ai_facts

if TYPE_CHECKING:
    from ctxlab.trace import Trace

KEPT_FEEDS = 4
"""Feeds kept per trace and characters-per-token: a slider through tool-result limits or
argument lengths makes one per value; the last few are what a user returns to."""


@dataclass(frozen=True, slots=True)
class Feed:
    """The state entries of the recorded history (`feed_of`), by state position.

    `view`, `kinds` and `tokens` are what the feed appends (None, "stubs" and 0 where a result
    is offloaded: see `offloads`). `tpos` lists the AIMessages argument truncation would
    shorten, ascending, and `tsaved[k]` the tokens truncation saves over the first k of them.
    `tagged` holds the human messages already evicted. `offloads` gives each oversized result
    as (state position, message, its text, its tokens), in order. The lists are shared by every
    run that uses the feed and must not be changed.
    """

    view: list[BaseMessage | None]
    kinds: list[str]
    tokens: list[int]
    tpos: list[int]
    tsaved: list[int]
    tagged: frozenset[int]
    offloads: list[tuple[int, ToolMessage, str, int]]


def feed_of(
    trace: Trace,
    offset: int,
    chars_per_token: float,
    tool_evict_chars: int | None,
    ai_key: tuple[str, int, str],
) -> Feed:
    """The feed of `trace.messages[offset:]` (the history after the system prompt) under the
    given limit and argument truncation (`ai_key`: the memo key of `ai_facts`), built on first
    use and kept with the trace's facts (`ctxlab.policies._engine_facts`), the last
    `KEPT_FEEDS` of them."""
    found = facts(trace, chars_per_token)
    feeds: dict[tuple, Feed] = found.built.setdefault("deepagents-feeds", {})
    key = (offset, tool_evict_chars, ai_key)
    feed = feeds.get(key)
    if feed is None:
        feed = _build(
            found.messages[offset:],
            found.counts[offset:],
            chars_per_token,
            tool_evict_chars,
            ai_key,
        )
        if len(feeds) >= KEPT_FEEDS:
            del feeds[next(iter(feeds))]
        feeds[key] = feed
    return feed


def _build(
    source: tuple[BaseMessage, ...],
    counts: tuple[int, ...],
    cpt: float,
    limit: int | None,
    ai_key: tuple[str, int, str],
) -> Feed:
    """One pass over the history as the tool node and `FilesystemMiddleware` see it."""
    view: list[BaseMessage | None] = []
    kinds: list[str] = []
    tokens: list[int] = []
    tpos: list[int] = []
    tsaved = [0]
    tagged: set[int] = set()
    offloads: list[tuple[int, ToolMessage, str, int]] = []
    calls: dict = {}  # the latest AIMessage's calls by id
    rejected = NONE_REJECTED  # ids of those deepagents rejects
    excluded = TOOLS_EXCLUDED_FROM_EVICTION
    for i, message in enumerate(source):
        toks = counts[i]
        entry: BaseMessage | None = message
        kind = "ai"
        if isinstance(message, ToolMessage):
            call = calls.get(message.tool_call_id)
            if call is not None and rejected and message.tool_call_id in rejected:
                entry = tk.derived(
                    message,
                    ("deepagents-rejected", call["name"]),
                    lambda c=call: rejected_result(c),
                )
                kind, toks = "tool_results", tk.message_tokens(entry, cpt)
            else:
                name = call["name"] if call is not None else message.name
                kind = "tool_results"
                if not (limit is None or name in excluded or text_len(message) <= limit):
                    offloads.append((i, message, message_text(message), toks))
                    entry, kind, toks = None, "stubs", 0
        elif isinstance(message, AIMessage):
            if message.tool_calls:
                calls, rejected, grown = tk.derived(
                    message, ai_key, lambda m=message: ai_facts(m, *ai_key[1:])
                )
                if grown is not None:
                    saved = 0
                    if grown:
                        size = tk.cached_size(message)
                        saved = toks - tk.Size(size.chars + grown, size.images).tokens(cpt)
                    tpos.append(i)
                    tsaved.append(tsaved[-1] + saved)
            elif calls:
                calls, rejected = {}, NONE_REJECTED
        elif isinstance(message, HumanMessage) and message.additional_kwargs.get("lc_evicted_to"):
            tagged.add(i)
            entry = truncated_human_message(message, message.additional_kwargs["lc_evicted_to"])
            kind, toks = "stubs", tk.message_tokens(entry, cpt)
        else:
            kind = kind_of(message)
        view.append(entry)
        kinds.append(kind)
        tokens.append(toks)
    return Feed(view, kinds, tokens, tpos, tsaved, frozenset(tagged), offloads)
