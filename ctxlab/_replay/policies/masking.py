"""Observation masking: old tool outputs replaced by a short placeholder, request-only.

* `ObservationMasking`: SWE-agent's `LastNObservations` history processor (the method of the
  JetBrains paper, which keeps the last M=10 observations; the SWE-agent paper used 5).
* `OpenHandsObservationMasking`: OpenHands' `ObservationMaskingCondenser`, which counts
  *events* (every message), not observations, and writes `<MASKED>`.

Reasoning and actions (AIMessages) are never touched, and a masked result keeps its
`tool_call_id`, so pairs stay valid. Both processors recompute the mask from the full history
on every call: masking the next observation rewrites the middle of the prompt, which is why
the SWE-agent docstring warns that it "will break prompt caching" (`polling` is its remedy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

import numpy as np
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from ctxlab._replay.policies._engine_rules import ALWAYS, NEVER, RANKED, WINDOW, RuleStage
from ctxlab._replay.policies.engine import (
    AUTO,
    KEEPS_MARKS,
    Item,
    Stage,
    StagePolicy,
    message_text,
    replaced,
)

if TYPE_CHECKING:
    from ctxlab._trace import Trace

SWE_AGENT_PLACEHOLDER = "Old environment output: ({lines} lines omitted)"
"""`LastNObservations.__call__` (SWE-agent `sweagent/agent/history_processors.py`)."""
SWE_AGENT_0_PLACEHOLDER = "Old output omitted ({lines} lines)"
"""`last_n_history` in SWE-agent 0.x (`sweagent/agent/history_processors.py` at v0.7.0): what
its `LastNObservations` puts in place of an elided user turn."""
OPENHANDS_PLACEHOLDER = "<MASKED>"
"""`ObservationMaskingCondenser.condense` (OpenHands `memory/condenser/impl/`)."""


def _tags(message: BaseMessage) -> set[str]:
    tags = message.additional_kwargs.get("tags") or message.response_metadata.get("tags") or []
    return set(tags)


def _masked(message: ToolMessage, text: str) -> ToolMessage:
    if not isinstance(message, ToolMessage):  # a SWE-agent 0.x observation: a user turn
        return message.model_copy(update={"content": text})
    return message.model_copy(update={"content": text, "artifact": None})


def _swe_placeholder(message: ToolMessage) -> str:
    """SWE-agent's text: line count of the text blocks, plus images if any."""
    lines = len(message_text(message).splitlines())
    images = (
        sum(
            1
            for b in message.content
            if isinstance(b, dict) and b.get("type") in {"image", "image_url"}
        )
        if isinstance(message.content, list)
        else 0
    )
    text = SWE_AGENT_PLACEHOLDER.format(lines=lines)
    return text + (f" ({images} images omitted)" if images else "")


def _swe_0_placeholder(message: BaseMessage) -> str:
    """SWE-agent 0.x's text: the line count of the content (`len(content.splitlines())`)."""
    return SWE_AGENT_0_PLACEHOLDER.format(lines=len(message_text(message).splitlines()))


class MaskedCopies:
    """The masked copy of each observation, made once per message object.

    Keyed by `id()` and checked by identity (a freed message's id may be reused), so a stage
    that masks the same observation at every call pays for its copy and its count once."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[ToolMessage, Item]] = {}

    def of(self, it: Item, key: tuple, text: Callable[[ToolMessage], str]) -> Item:
        """`it` masked: a copy of its message with `text(message)` as content, at its position."""
        msg = it.msg
        hit = self._by_id.get(id(msg))
        if hit is None or hit[0] is not msg:
            tool = cast(ToolMessage, msg)  # masking edits tool results only
            stub = replaced(tool, key, lambda: _masked(tool, text(tool)))
            hit = self._by_id[id(msg)] = (tool, Item(it.pos, stub, "stubs"))
        return hit[1] if hit[1].pos == it.pos else Item(it.pos, hit[1].msg, "stubs")


class LastNStage(RuleStage):
    """`LastNObservations`: observations are the task message plus every tool result; the first
    (the instance template) is never elided; all but the last `n` (give or take `polling`) are.

    `observations`: the history positions the recording's own SWE-agent treats as observations
    (`Trace.metadata["observations"]`, from the SWE-agent reader), which replace that default;
    with `old=True` (SWE-agent 0.x, whose observations are user turns) the elided text is
    0.x's.

    Written as a rule (`ctxlab._replay.policies._engine_rules`): the observations rank, the
    horizon is the observations past the last `n` (polled), which never falls as the history
    grows, and tags force removal (at once) or keeping; the engine makes the requests and the
    count-only form from it.
    """

    capabilities = frozenset({KEEPS_MARKS})
    ranks = True
    horizon = ("n", "polling")

    def __init__(
        self,
        n: int,
        polling: int,
        remove_tags: frozenset[str],
        keep_tags: frozenset[str],
        observations: frozenset[int] | None = None,
        old: bool = False,
    ) -> None:
        if n <= 0:
            raise ValueError("n must be a positive integer")
        super().__init__(f"last_n_observations n={n}")
        self.n, self.polling = n, max(1, polling)
        self.remove_tags, self.keep_tags = remove_tags, keep_tags
        self.observations, self.old = observations, old
        self._stubs = MaskedCopies()
        self._first_seen = False  # the first user message (an observation) is in the input

    def restart(self) -> None:
        """The first user message is looked for again."""
        self._first_seen = False

    def observe(self, new: Sequence[Item]) -> list[int]:
        """Observations rank (the first user message, then every tool result, or the
        recording's own); tags decide which are removed at once or kept; the first user
        message, not a tool result, is never edited."""
        out = []
        for it in new:
            if self.observations is not None:
                if it.pos is None or it.pos not in self.observations:
                    out.append(NEVER)
                    continue
            elif isinstance(it.msg, ToolMessage) and it.kind == "tool_results":
                pass
            elif it.kind == "human" and not self._first_seen:
                self._first_seen = True
                out.append(NEVER + RANKED)
                continue
            else:
                out.append(NEVER)
                continue
            tags = _tags(it.msg) if (self.keep_tags or self.remove_tags) else set()
            if tags & self.remove_tags:
                out.append(ALWAYS + RANKED)
            else:
                out.append((NEVER if tags & self.keep_tags else WINDOW) + RANKED)
        return out

    def bounds(self, length: Any, ranked: Any) -> tuple[Any, Any]:
        """Every observation but the first, up to the last `n` (the count polled)."""
        return 1, np.maximum(0, (ranked // self.polling) * self.polling - self.n)

    def edit(self, it: Item) -> Item:
        """SWE-agent's placeholder (0.x's for `old`)."""
        if self.old:
            return self._stubs.of(it, ("swe-mask-0.x",), _swe_0_placeholder)
        return self._stubs.of(it, ("swe-mask",), _swe_placeholder)


class WindowMaskStage(RuleStage):
    """`ObservationMaskingCondenser`: an observation outside the last `attention_window`
    events (messages) of the view is masked.

    Written as a rule (`ctxlab._replay.policies._engine_rules`): tool results are edited once
    the horizon, the input less its last `attention_window` items, passes them.
    """

    capabilities = frozenset({KEEPS_MARKS})
    horizon = ("window",)

    def __init__(self, attention_window: int, placeholder: str) -> None:
        super().__init__(f"attention_window={attention_window}")
        self.window = attention_window
        self.placeholder = placeholder
        self._stubs = MaskedCopies()

    def observe(self, new: Sequence[Item]) -> list[int]:
        """Tool results are masked once old enough; nothing else is."""
        return [
            WINDOW if it.kind == "tool_results" and isinstance(it.msg, ToolMessage) else NEVER
            for it in new
        ]

    def bounds(self, length: Any, ranked: Any) -> tuple[Any, Any]:
        """The input but its last `attention_window` items."""
        return 0, length - self.window

    def edit(self, it: Item) -> Item:
        """The placeholder text."""
        text = self.placeholder
        return self._stubs.of(it, ("mask", text), lambda _: text)


def swe_agent_observations(trace: Trace) -> tuple[frozenset[int] | None, bool]:
    """The history positions a SWE-agent trajectory's own SWE-agent masks as observations, and
    whether it is 0.x (user-turn observations, 0.x's placeholder); `(None, False)` for any
    other trace, and for a trajectory whose observations are the default ones (the first
    user message and the tool results: a function-calling 1.x run), which keep the formula
    of `masking_counts`."""
    positions = trace.metadata.get("observations") if trace.format == "swe-agent" else None
    if not isinstance(positions, list):
        return None, False
    old = trace.metadata.get("swe_agent") == "0.x"
    messages = trace.messages
    first = next((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), None)
    default = {i for i, m in enumerate(messages) if i == first or isinstance(m, ToolMessage)}
    if not old and set(positions) == default:  # a function-calling 1.x run: the default rule
        return None, False
    return frozenset(positions), old


@dataclass(frozen=True)
class ObservationMasking(StagePolicy):
    """SWE-agent `last_n_observations` with the JetBrains setting (M=10).

    `n`: observations kept verbatim; `polling`: re-mask only every `polling` observations (so
    between n and n+polling are kept; fewer cache breaks); tags from `tags` in a tool result's
    `additional_kwargs` force removal or keeping.
    """

    name: ClassVar[str] = "observation-masking"
    source: ClassVar[str] = (
        "SWE-agent sweagent/agent/history_processors.py LastNObservations (placeholder, polling, "
        "tags; first observation never elided); n=10 from JetBrains 'The Complexity Trap' "
        "(arXiv:2508.21433) config"
    )

    n: int = 10
    polling: int = 1
    always_remove_output_for_tags: tuple[str, ...] = ("remove_output",)
    always_keep_output_for_tags: tuple[str, ...] = ("keep_output",)
    window: int | None | Literal["auto"] = AUTO
    model: str | None = None

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One masking stage; on a SWE-agent trajectory, over the entries that SWE-agent
        itself treats as observations (`swe_agent_observations`)."""
        observations, old = swe_agent_observations(trace)
        return [
            LastNStage(
                int(self.n),
                int(self.polling),
                frozenset(self.always_remove_output_for_tags),
                frozenset(self.always_keep_output_for_tags),
                observations,
                old,
            )
        ]


@dataclass(frozen=True)
class SWEAgentMasking(ObservationMasking):
    """The original SWE-agent setting, `last_n_observations n=5`."""

    name: ClassVar[str] = "swe-agent-masking"
    source: ClassVar[str] = (
        "SWE-agent sweagent/agent/history_processors.py LastNObservations docstring ('used in the "
        "original paper to elide but the last 5 observations')"
    )

    n: int = 5


@dataclass(frozen=True)
class OpenHandsObservationMasking(StagePolicy):
    """OpenHands `observation_masking` condenser with the config default `attention_window=100`
    (the class itself defaults to 5); counts every message as an event."""

    name: ClassVar[str] = "openhands-observation-masking"
    source: ClassVar[str] = (
        "OpenHands openhands/memory/condenser/impl/observation_masking_condenser.py ('<MASKED>'); "
        "attention_window=100 from openhands/core/config/condenser_config.py"
    )

    attention_window: int = 100
    placeholder: str = OPENHANDS_PLACEHOLDER
    window: int | None | Literal["auto"] = AUTO
    model: str | None = None

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One masking stage."""
        return [WindowMaskStage(int(self.attention_window), self.placeholder)]


__all__ = [
    "OPENHANDS_PLACEHOLDER",
    "SWE_AGENT_0_PLACEHOLDER",
    "SWE_AGENT_PLACEHOLDER",
    "LastNStage",
    "ObservationMasking",
    "OpenHandsObservationMasking",
    "SWEAgentMasking",
    "WindowMaskStage",
    "swe_agent_observations",
]
