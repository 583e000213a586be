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

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from langchain_core.messages import ToolMessage

from ctxlab.policies._view import AUTO, Context, Item, Stage, StagePolicy, replaced, text_of
from ctxlab.policies.base import Event

if TYPE_CHECKING:
    from ctxlab.trace import Trace

SWE_AGENT_PLACEHOLDER = "Old environment output: ({lines} lines omitted)"
"""`LastNObservations.__call__` (SWE-agent `sweagent/agent/history_processors.py`)."""
OPENHANDS_PLACEHOLDER = "<MASKED>"
"""`ObservationMaskingCondenser.condense` (OpenHands `memory/condenser/impl/`)."""


def _tags(message: ToolMessage) -> set[str]:
    tags = message.additional_kwargs.get("tags") or message.response_metadata.get("tags") or []
    return set(tags)


def _masked(message: ToolMessage, text: str) -> ToolMessage:
    return message.model_copy(update={"content": text, "artifact": None})


def _swe_placeholder(message: ToolMessage) -> str:
    """SWE-agent's text: line count of the text blocks, plus images if any."""
    lines = len(text_of(message).splitlines())
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


class LastNStage:
    """`LastNObservations`: observations are the task message plus every tool result; the first
    (the instance template) is never elided; all but the last `n` (give or take `polling`) are."""

    def __init__(
        self, n: int, polling: int, remove_tags: frozenset[str], keep_tags: frozenset[str]
    ) -> None:
        if n <= 0:
            raise ValueError("n must be a positive integer")
        self.n, self.polling = n, max(1, polling)
        self.remove_tags, self.keep_tags = remove_tags, keep_tags
        self.masked: set[int] = set()
        self.stubs: dict[int, tuple[ToolMessage, Item]] = {}  # id(original) -> masked item

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        first = next((i for i, it in enumerate(items) if it.kind == "human"), None)
        obs = [
            i
            for i, it in enumerate(items)
            if (i == first) or isinstance(it.msg, ToolMessage) and it.kind == "tool_results"
        ]
        last_removed = max(0, (len(obs) // self.polling) * self.polling - self.n)
        omit = set(obs[1:last_removed])
        out = list(items)
        touched = []
        stubs = self.stubs
        for i in obs:
            it = items[i]
            msg = it.msg
            if not isinstance(msg, ToolMessage):
                continue
            tags = _tags(msg) if (self.keep_tags or self.remove_tags) else set()
            if (i not in omit or tags & self.keep_tags) and not (tags & self.remove_tags):
                continue
            hit = stubs.get(id(msg))
            if hit is None or hit[0] is not msg:
                stub = replaced(msg, ("swe-mask",), lambda m=msg: _masked(m, _swe_placeholder(m)))
                hit = stubs[id(msg)] = (msg, Item(it.pos, stub, "stubs"))
            out[i] = hit[1] if hit[1].pos == it.pos else Item(it.pos, hit[1].msg, "stubs")
            if it.pos is not None:
                touched.append(it.pos)
        return _record(self, ctx, items, out, touched, f"last_n_observations n={self.n}")


def _record(
    stage: LastNStage | WindowMaskStage,
    ctx: Context,
    before: list[Item],
    out: list[Item],
    touched: list[int],
    reason: str,
) -> list[Item]:
    masked = stage.masked
    new = [p for p in touched if p not in masked]
    if len(new) or len(touched) != len(masked):
        stage.masked = set(touched)
    if new:
        total = ctx.count(before)
        # `before` is the unmasked request: every item replaced here counts.
        saved = sum(
            ctx.tokens(b.msg) - ctx.tokens(o.msg)
            for b, o in zip(before, out, strict=True)
            if b is not o
        )
        ctx.events.append(
            Event(
                "mask_observations",
                ctx.turn.index,
                tuple(new),
                total,
                total - saved,
                None,
                reason,
            )
        )
    return out


class WindowMaskStage:
    """`ObservationMaskingCondenser`: an observation outside the last `attention_window`
    events (messages) of the view is masked."""

    def __init__(self, attention_window: int, placeholder: str) -> None:
        self.window = attention_window
        self.placeholder = placeholder
        self.masked: set[int] = set()
        self.stubs: dict[int, tuple[ToolMessage, Item]] = {}  # id(original) -> masked item

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        out = list(items)
        limit = len(items) - self.window
        touched = []
        stubs = self.stubs
        text = self.placeholder
        for i in range(max(0, limit)):
            it = items[i]
            if it.kind == "tool_results" and isinstance(it.msg, ToolMessage):
                msg = it.msg
                hit = stubs.get(id(msg))
                if hit is None or hit[0] is not msg:
                    stub = replaced(msg, ("mask", text), lambda m=msg: _masked(m, text))
                    hit = stubs[id(msg)] = (msg, Item(it.pos, stub, "stubs"))
                out[i] = hit[1] if hit[1].pos == it.pos else Item(it.pos, hit[1].msg, "stubs")
                if it.pos is not None:
                    touched.append(it.pos)
        return _record(self, ctx, items, out, touched, f"attention_window={self.window}")


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
        """One masking stage."""
        return [
            LastNStage(
                int(self.n),
                int(self.polling),
                frozenset(self.always_remove_output_for_tags),
                frozenset(self.always_keep_output_for_tags),
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
    "SWE_AGENT_PLACEHOLDER",
    "LastNStage",
    "ObservationMasking",
    "OpenHandsObservationMasking",
    "SWEAgentMasking",
    "WindowMaskStage",
]
