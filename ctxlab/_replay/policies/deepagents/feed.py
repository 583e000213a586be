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

from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._messages import kind_of, message_text
from ctxlab._replay.policies._engine_facts import facts
from ctxlab._replay.policies.deepagents.filesystem import (
    TOOLS_EXCLUDED_FROM_EVICTION,
    rejected_result,
    text_len,
    truncated_human_message,
)
from ctxlab._replay.policies.deepagents.message_edits import (
    CALL_FACTS,
    NONE_REJECTED,
    call_facts,
    truncation_growth,
)

if TYPE_CHECKING:
    from ctxlab._trace import Trace

KEPT_FEEDS = 4
"""Feeds kept per trace and characters-per-token: a slider through tool-result limits or
argument lengths makes one per value; the last few are what a user returns to."""


@dataclass(frozen=True, slots=True, weakref_slot=True)  # count tables leave with it
class Feed:
    """The state entries of the recorded history (`feed_of`), by state position.

    `view`, `kinds` and `tokens` are what the feed appends (None, "stubs" and 0 where a result
    is offloaded: see `offloads`). `tpos` lists the AIMessages argument truncation would
    shorten, ascending, and `tsaved[k]` the tokens truncation saves over the first k of them.
    `tagged` holds the human messages already evicted. `offloads` gives each oversized result
    as (state position, message, its text, its tokens), in order. The lists are shared by every
    run that uses the feed and must not be changed.

    What another feed of the same history is made from (`_derived`): `results`, each result
    the tool-result limit decides, as (state position, message, its tokens, its length in
    characters, None when its tool is never evicted); `cuttable`, each AIMessage with
    arguments truncation may cut, as (state position, message, its tokens, those arguments).
    """

    view: list[BaseMessage | None]
    kinds: list[str]
    tokens: list[int]
    tpos: list[int]
    tsaved: list[int]
    tagged: frozenset[int]
    offloads: list[tuple[int, ToolMessage, str, int]]
    results: list[tuple[int, ToolMessage, int, int | None]]
    cuttable: list[tuple[int, AIMessage, int, tuple[str, ...]]]


def feed_of(
    trace: Trace,
    offset: int,
    chars_per_token: float,
    tool_evict_chars: int | None,
    ai_key: tuple[str, int, str],
) -> Feed:
    """The feed of `trace.messages[offset:]` (the history after the system prompt) under the
    given limit and argument truncation (`ai_key`: its max length and text), kept with the
    trace's facts (`ctxlab._replay.policies._engine_facts`), the last `KEPT_FEEDS` of them. A new
    one
    is derived from a kept one when there is one (`_derived`: a slider through limits or
    lengths changes a few entries), else built in one pass over the history."""
    found = facts(trace, chars_per_token)
    feeds: dict[tuple, Feed] = found.built.setdefault("deepagents-feeds", {})
    key = (offset, tool_evict_chars, ai_key)
    feed = feeds.get(key)
    if feed is None:
        other = next(((k, f) for k, f in reversed(feeds.items()) if k[0] == offset), None)
        if other is None:
            source = found.messages[offset:]
            feed = _build(source, found.counts[offset:], chars_per_token, tool_evict_chars, ai_key)
        else:
            (_, limit, truncation), base = other
            feed = _derived(base, limit, truncation, tool_evict_chars, ai_key, chars_per_token)
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
    tagged: set[int] = set()
    results: list[tuple[int, ToolMessage, int, int | None]] = []
    cuttable: list[tuple[int, AIMessage, int, tuple[str, ...]]] = []
    calls: dict = {}  # the latest AIMessage's calls by id
    rejected = NONE_REJECTED  # ids of those deepagents rejects
    excluded = TOOLS_EXCLUDED_FROM_EVICTION
    for i, message in enumerate(source):
        toks = counts[i]
        entry: BaseMessage | None = message
        kind = "ai"
        if isinstance(message, ToolMessage):
            call = calls.get(message.tool_call_id)
            kind = "tool_results"
            if call is not None and rejected and message.tool_call_id in rejected:
                entry = tk.derived(
                    message,
                    ("deepagents-rejected", call["name"]),
                    partial(rejected_result, call),
                )
                toks = tk.message_tokens(entry, cpt)
            else:
                name = call["name"] if call is not None else message.name
                results.append((i, message, toks, None if name in excluded else text_len(message)))
        elif isinstance(message, AIMessage):
            if message.tool_calls:
                calls, rejected, args = tk.derived(
                    message, CALL_FACTS, partial(call_facts, message)
                )
                if args:
                    cuttable.append((i, message, toks, args))
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
    tpos, tsaved = _truncation(cuttable, ai_key, cpt)
    empty = Feed(view, kinds, tokens, tpos, tsaved, frozenset(tagged), [], results, cuttable)
    return _offloaded(empty, limit)


def _derived(
    base: Feed,
    base_limit: int | None,
    base_truncation: tuple[str, int, str],
    limit: int | None,
    ai_key: tuple[str, int, str],
    cpt: float,
) -> Feed:
    """The feed of `base`'s history under another limit or argument truncation: the results
    the limit decides are decided again, and the truncated calls found again, from `base`'s
    `results` and `cuttable`; everything else is the same."""
    if ai_key != base_truncation:
        tpos, tsaved = _truncation(base.cuttable, ai_key, cpt)
        base = replace(base, tpos=tpos, tsaved=tsaved)
    if limit == base_limit:
        return base
    return _offloaded(base, limit)


def _offloaded(feed: Feed, limit: int | None) -> Feed:
    """`feed` with each result over `limit` offloaded (None, "stubs", 0: the run makes its
    stub) and every other one as it is."""
    view, kinds, tokens = list(feed.view), list(feed.kinds), list(feed.tokens)
    offloads: list[tuple[int, ToolMessage, str, int]] = []
    for i, message, toks, length in feed.results:
        if limit is None or length is None or length <= limit:
            view[i], kinds[i], tokens[i] = message, "tool_results", toks
        else:
            offloads.append((i, message, message_text(message), toks))
            view[i], kinds[i], tokens[i] = None, "stubs", 0
    return replace(feed, view=view, kinds=kinds, tokens=tokens, offloads=offloads)


def _truncation(
    cuttable: list[tuple[int, AIMessage, int, tuple[str, ...]]],
    ai_key: tuple[str, int, str],
    cpt: float,
) -> tuple[list[int], list[int]]:
    """`tpos` and `tsaved` (see `Feed`) under the argument truncation `ai_key`."""
    _, max_length, text = ai_key
    tpos: list[int] = []
    tsaved = [0]
    for i, message, toks, args in cuttable:
        grown = truncation_growth(message, args, max_length, text)
        if grown is not None:
            saved = 0
            if grown:
                size = tk.cached_size(message)
                saved = toks - tk.Size(size.chars + grown, size.images).tokens(cpt)
            tpos.append(i)
            tsaved.append(tsaved[-1] + saved)
    return tpos, tsaved
