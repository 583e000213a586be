"""OpenHands condensers (V0 `openhands/memory/condenser/impl/`), one message = one event.

* `OpenHandsLLMSummarizing` (`llm`, the default with `enable_default_condenser`): when the view
  exceeds `max_size` events, keep `keep_first` head events and the most recent ones so that
  head + summary + tail = `max_size // 2`, and replace the middle by a rolling summary (the
  previous summary is part of the summariser's input).
* `OpenHandsAmortized` (`amortized`): the same cut, without a summary.
* `OpenHandsRecent` (`recent`): every call, `keep_first` head events plus the most recent ones
  up to `max_events` (not rolling: nothing is remembered between calls).
* `OpenHandsConversationWindow` (`conversation_window`): on a context overflow, keep the system
  message and the first user message, then about half of the rest, starting at an action.

Condensations are persistent (they are events in OpenHands' log; the view is rebuilt from them).
Tool results whose call was forgotten are dropped from the view, as OpenHands' conversation
memory filters unmatched tool calls, so pairs are never split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from langchain_core.messages import BaseMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._errors import UnsupportedSettingError
from ctxlab._replay.policies._engine_rules import WINDOW, RuleStage
from ctxlab._replay.policies.cache_aligned import aligned, aligned_params
from ctxlab._replay.policies.engine import (
    AUTO,
    JUMPS,
    KEEPS_MARKS,
    Context,
    Item,
    RebuildStage,
    Stage,
    StagePolicy,
    first_user_index,
    message_text,
    safe_start,
    summary_item,
    write_history,
)

if TYPE_CHECKING:
    from ctxlab._trace import Trace

OPENHANDS_UPSTREAM_PROMPT = """You are maintaining a context-aware state summary for an interactive agent.
You will be given a list of events corresponding to actions taken by the agent, and the most recent previous summary if one exists.
If the events being summarized contain ANY task-tracking, you MUST include a TASK_TRACKING section to maintain continuity.
When referencing tasks make sure to preserve exact task IDs and statuses.

Track:

USER_CONTEXT: (Preserve essential user requirements, goals, and clarifications in concise form)

TASK_TRACKING: {Active tasks, their IDs and statuses - PRESERVE TASK IDs}

COMPLETED: (Tasks completed so far, with brief results)
PENDING: (Tasks that still need to be done)
CURRENT_STATE: (Current variables, data structures, or relevant state)

For code-specific tasks, also include:
CODE_STATE: {File paths, function signatures, data structures}
TESTS: {Failing cases, error messages, outputs}
CHANGES: {Code edits, variable updates}
DEPS: {Dependencies, imports, external calls}
VERSION_CONTROL_STATUS: {Repository state, current branch, PR status, commit history}

PRIORITIZE:
1. Adapt tracking format to match the actual task type
2. Capture key user requirements and goals
3. Distinguish between completed and pending tasks
4. Keep all sections concise and relevant

SKIP: Tracking irrelevant details for the current task type

Example formats:

For code tasks:
USER_CONTEXT: Fix FITS card float representation issue
COMPLETED: Modified mod_float() in card.py, all tests passing
PENDING: Create PR, update documentation
CODE_STATE: mod_float() in card.py updated
TESTS: test_format() passed
CHANGES: str(val) replaces f"{val:.16G}"
DEPS: None modified
VERSION_CONTROL_STATUS: Branch: fix-float-precision, Latest commit: a1b2c3d

For other tasks:
USER_CONTEXT: Write 20 haikus based on coin flip results
COMPLETED: 15 haikus written for results [T,H,T,H,T,H,T,T,H,T,H,T,H,T,H]
PENDING: 5 more haikus needed
CURRENT_STATE: Last flip: Heads, Haiku count: 15/20"""  # noqa: E501 (verbatim upstream text)
"""The summary prompt of OpenHands' `LLMSummarizingCondenser`, verbatim (MIT licence, "Copyright ©
2025" in the repository's LICENSE): the string literal in `get_condensation` of
openhands/memory/condenser/impl/llm_summarizing_condenser.py, OpenHands/OpenHands@76483ad8f5f5
(76483ad8f5f51b47b20f29acf2fa51c770a5aa67). Kept byte-exact so that LLM-summary replays are
prompted, and their summariser input counted, as OpenHands prompts them."""

OPENHANDS_SUMMARY_PROMPT = (
    OPENHANDS_UPSTREAM_PROMPT.replace("{", "{{").replace("}", "}}")
    + "\n\n{messages}\nNow summarize the events using the rules above."
)
"""`OPENHANDS_UPSTREAM_PROMPT` as a ctxlab template: braces escaped for `str.format`, then the
forgotten events and the closing line exactly where OpenHands appends them (`prompt + '\\n\\n'`,
events, `'Now summarize the events using the rules above.'`). Only the event rendering differs:
OpenHands writes `<PREVIOUS SUMMARY>` and one `<EVENT id=N>` per event; ctxlab renders the
previous summary and the events as LangChain's XML message buffer."""


def _clip(message: BaseMessage, limit: int) -> BaseMessage | None:
    """`truncate_content(max_chars=max_event_length)` as OpenHands applies it to each forgotten
    event it renders for the summariser: the head and tail halves of a long event around the
    marker of openhands/events/serialization/event.py @76483ad8f5f5 (MIT); None where the event
    stays whole (a negative limit, or one within it)."""
    text = message_text(message)
    if limit < 0 or len(text) <= limit:
        return None
    half = limit // 2
    clipped = text[:half] + "\n[... Observation truncated due to length ...]\n" + text[-half:]
    return message.model_copy(update={"content": clipped})


class RollingStage(RebuildStage):
    """`LLMSummarizingCondenser` (with `summarize=True`) or `AmortizedForgettingCondenser`."""

    capabilities = frozenset({KEEPS_MARKS, JUMPS})  # acts only at `trigger_messages`

    def __init__(self, max_size: int, keep_first: int, summarize: bool, max_event_length: int):
        super().__init__()
        if keep_first >= max_size // 2:
            raise ValueError(
                f"keep_first ({keep_first}) must be less than half of max_size ({max_size})"
            )
        self.max_size, self.keep_first = max_size, keep_first
        self.summarize, self.max_event_length = summarize, max_event_length

    @property
    def trigger_messages(self) -> int:
        """The view length at which this stage condenses (more than `max_size` events)."""
        return self.max_size + 1

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        view = self.view(items)
        if len(view) <= self.max_size:
            return view
        head = view[: self.keep_first]
        target = self.max_size // 2
        from_tail = target - len(head) - (1 if self.summarize else 0)
        if from_tail <= 0 or len(view) <= len(head) + from_tail:
            return view
        tail_start = safe_start(view, len(view) - from_tail)
        tail = view[tail_start:]
        middle = view[self.keep_first : len(view) - from_tail]
        if not self.summarize:
            return self.commit(
                ctx, view, [*head, *tail], "forget", f"{len(view)} > {self.max_size} events"
            )
        previous = [it.msg for it in middle if it.kind == "summary"]
        limit = self.max_event_length
        events = [it.msg for it in middle if it.kind != "summary"]
        # memoised per message, the lookup inlined (`tokens.derived_each`); an event left
        # whole is remembered as None, as a memo entry must not refer to its own message
        clips = tk.derived_each(events, ("oh-clip", limit), lambda m: _clip(m, limit))
        forgotten = [m if c is None else c for m, c in zip(events, clips, strict=True)]
        text = ctx.summarizer.summarize(
            [*previous[-1:], *forgotten], prompt=OPENHANDS_SUMMARY_PROMPT
        ).strip()
        path = "/conversation_history/openhands_condensed.md"
        write_history(ctx, path, [it for it in middle if it.kind != "summary"])
        return self.commit(
            ctx,
            view,
            [*head, summary_item(text), *tail],
            "summarize",
            f"{len(view)} > {self.max_size} events",
            path,
            summary=text,
        )


class RecentStage(RuleStage):
    """`RecentEventsCondenser.condense`: head + the last `max_events - len(head)` events.

    Written as a rule (`ctxlab._replay.policies._engine_rules`): the span dropped is the
    input past its first `keep_first` items up to its last `max_events - keep_first`, the cut
    moved forward past tool results; it only moves forward as the history grows.
    """

    capabilities = frozenset({KEEPS_MARKS})
    drops = True
    past_results = True
    event = "forget"
    horizon = ("keep_first", "max_events")

    def __init__(self, keep_first: int, max_events: int) -> None:
        if keep_first < 0 or max_events < 0:
            raise ValueError("keep_first and max_events must not be negative")
        super().__init__(f"max_events={max_events}")
        self.keep_first, self.max_events = keep_first, max_events

    def observe(self, new: Sequence[Item]) -> list[int]:
        """Every event may be forgotten (the span is dropped whole)."""
        return [WINDOW] * len(new)

    def bounds(self, length: Any, ranked: Any) -> tuple[Any, Any]:
        """From past the head to the tail's start (the whole rest when no tail is left)."""
        head = np.minimum(self.keep_first, length)
        tail = np.maximum(0, self.max_events - head)
        return head, np.where(tail > 0, np.maximum(head, length - tail), length)


class WindowStage(RebuildStage):
    """`ConversationWindowCondenser.get_condensation`, run when the request overflows."""

    capabilities = frozenset({KEEPS_MARKS})

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        view = self.view(items)
        if ctx.window is None:
            raise UnsupportedSettingError(
                "openhands-conversation-window needs the model's window (window=N)"
            )
        if self.count(view, ctx) <= ctx.window:
            return view
        first = first_user_index(view)
        if first is None:
            return view
        essential = [i for i, it in enumerate(view) if it.kind == "system"][:1] + [first]
        rest = len(view) - len(essential)
        keep = max(1, rest // 2)
        start = max(0, len(view) - keep)
        while start < len(view) and isinstance(view[start].msg, ToolMessage):
            start += 1
        kept_idx = sorted(set(essential) | set(range(start, len(view))))
        after = [view[i] for i in kept_idx]
        return self.commit(ctx, view, after, "forget", f"context > window {ctx.window}")


@dataclass(frozen=True)
class OpenHandsLLMSummarizing(StagePolicy):
    """`LLMSummarizingCondenser(max_size=100, keep_first=1, max_event_length=10_000)`."""

    name: ClassVar[str] = "openhands-llm-summarizing"
    source: ClassVar[str] = (
        "OpenHands openhands/memory/condenser/impl/llm_summarizing_condenser.py and "
        "openhands/core/config/condenser_config.py LLMSummarizingCondenserConfig defaults "
        "(OpenHands@d6fab190bf); summary prompt verbatim from "
        "OpenHands/OpenHands@76483ad8f5f5 openhands/memory/condenser/impl/"
        "llm_summarizing_condenser.py (MIT)"
    )

    max_size: int = 100
    keep_first: int = 1
    max_event_length: int = 10_000
    window: int | None | Literal["auto"] = AUTO
    model: str | None = None
    cache_aligned: bool = False
    """Compact only at a call whose cache is cold anyway, or when the window forces it
    (`ctxlab._replay.policies.cache_aligned`)."""

    def params(self) -> dict[str, Any]:
        """Parameters as given; `cache_aligned` only when set."""
        return aligned_params(super().params())

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One rolling-summary stage."""
        stage = RollingStage(
            int(self.max_size), int(self.keep_first), True, int(self.max_event_length)
        )
        return aligned([stage], self, trace, window)


@dataclass(frozen=True)
class OpenHandsAmortized(StagePolicy):
    """`AmortizedForgettingCondenser` with the config defaults `max_size=100, keep_first=1`."""

    name: ClassVar[str] = "openhands-amortized"
    source: ClassVar[str] = (
        "OpenHands openhands/memory/condenser/impl/amortized_forgetting_condenser.py; defaults "
        "from openhands/core/config/condenser_config.py AmortizedForgettingCondenserConfig; "
        "inserts no text (checked at OpenHands/OpenHands@279652689eed)"
    )

    max_size: int = 100
    keep_first: int = 1
    window: int | None | Literal["auto"] = AUTO
    model: str | None = None

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One forgetting stage."""
        return [RollingStage(int(self.max_size), int(self.keep_first), False, 0)]


@dataclass(frozen=True)
class OpenHandsRecent(StagePolicy):
    """`RecentEventsCondenser` with the config defaults `keep_first=1, max_events=100`."""

    name: ClassVar[str] = "openhands-recent"
    source: ClassVar[str] = (
        "OpenHands openhands/memory/condenser/impl/recent_events_condenser.py; defaults from "
        "openhands/core/config/condenser_config.py RecentEventsCondenserConfig"
    )

    keep_first: int = 1
    max_events: int = 100
    window: int | None | Literal["auto"] = AUTO
    model: str | None = None

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One recency stage."""
        return [RecentStage(int(self.keep_first), int(self.max_events))]


@dataclass(frozen=True)
class OpenHandsConversationWindow(StagePolicy):
    """`ConversationWindowCondenser` (OpenHands' default agent condenser): it acts on a context
    overflow; offline, when the request exceeds `window` tokens."""

    name: ClassVar[str] = "openhands-conversation-window"
    source: ClassVar[str] = (
        "OpenHands openhands/memory/condenser/impl/conversation_window_condenser.py "
        "(essentials: system + first user message; keep half of the rest; no dangling "
        "observations; inserts no text, checked at OpenHands/OpenHands@76483ad8f5f5)"
    )

    window: int | None | Literal["auto"] = AUTO
    model: str | None = None

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One window stage."""
        return [WindowStage()]


__all__ = [
    "OPENHANDS_SUMMARY_PROMPT",
    "OpenHandsAmortized",
    "OpenHandsConversationWindow",
    "OpenHandsLLMSummarizing",
    "OpenHandsRecent",
]
