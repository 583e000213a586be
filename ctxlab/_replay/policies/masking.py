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

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, cast

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from ctxlab._replay.policies._engine_counts import RunningCount, extended, mark
from ctxlab._replay.policies.base import Event
from ctxlab._replay.policies.engine import (
    AUTO,
    KEEPS_MARKS,
    Context,
    Item,
    Stage,
    StagePolicy,
    appended,
    message_text,
    replaced,
)

if TYPE_CHECKING:
    from ctxlab._replay.policies._engine_counts import Mark
    from ctxlab._replay.policies.counts_only import CallCounts
    from ctxlab._trace import Trace
    from ctxlab.summarizers import Summarizer

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


class LastNStage:
    """`LastNObservations`: observations are the task message plus every tool result; the first
    (the instance template) is never elided; all but the last `n` (give or take `polling`) are.

    `observations`: the history positions the recording's own SWE-agent treats as observations
    (`Trace.metadata["observations"]`, from the SWE-agent reader), which replace that default;
    with `old=True` (SWE-agent 0.x, whose observations are user turns) the elided text is
    0.x's.

    Fast path: when the input is the previous input plus new messages, the masked prefix only
    grows (`last_removed` never falls), so the previous output is extended and the observations
    that fell out of the last `n` are masked, in the time of what changed.
    """

    capabilities = frozenset({KEEPS_MARKS})

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
        self.n, self.polling = n, max(1, polling)
        self.remove_tags, self.keep_tags = remove_tags, keep_tags
        self.observations, self.old = observations, old
        self.masked: set[int] = set()
        self.stubs = MaskedCopies()
        self.counted = RunningCount()  # the inputs' tokens, for the events
        self.prev_in: list[Item] | Mark | None = None
        self.prev_out: list[Item] = []
        self.obs: list[int] = []  # input indices of the observations
        self.first: int | None = None  # input index of the first user message
        self.last_removed = 0
        self.saved = 0  # tokens the masked observations no longer cost

    def _stub(self, it: Item) -> Item:
        if self.old:
            return self.stubs.of(it, ("swe-mask-0.x",), _swe_0_placeholder)
        return self.stubs.of(it, ("swe-mask",), _swe_placeholder)

    def _observation(self, it: Item) -> bool:
        """Whether `it` is an observation after the first one (a tool result, or one of the
        recording's `observations`)."""
        if self.observations is not None:
            return it.pos is not None and it.pos in self.observations
        return isinstance(it.msg, ToolMessage) and it.kind == "tool_results"

    def _masks(self, it: Item, omitted: bool) -> bool:
        if self.observations is None and not isinstance(it.msg, ToolMessage):
            return False
        if self.observations is not None and not self._observation(it):
            return False
        tags = _tags(it.msg) if (self.keep_tags or self.remove_tags) else set()
        return (omitted and not tags & self.keep_tags) or bool(tags & self.remove_tags)

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        new = appended(self.prev_in, items)
        if new is None or self.first is None:
            out = self._full(items, ctx)
        else:
            out = self._extend(items, new, ctx)
        self.prev_in, self.prev_out = mark(items), out
        return out

    def _full(self, items: list[Item], ctx: Context) -> list[Item]:
        if self.observations is not None:
            obs = [i for i, it in enumerate(items) if self._observation(it)]
            first = obs[0] if obs else None
        else:
            first = next((i for i, it in enumerate(items) if it.kind == "human"), None)
            obs = [i for i, it in enumerate(items) if i == first or self._observation(it)]
        last_removed = max(0, (len(obs) // self.polling) * self.polling - self.n)
        omit = set(obs[1:last_removed])
        out = list(items)
        touched = []
        saved = 0
        for i in obs:
            it = items[i]
            if not self._masks(it, i in omit):
                continue
            out[i] = self._stub(it)
            saved += ctx.tokens(it.msg) - ctx.tokens(out[i].msg)
            if it.pos is not None:
                touched.append(it.pos)
        self.first, self.obs, self.last_removed, self.saved = first, obs, last_removed, saved
        new = [p for p in touched if p not in self.masked]
        if new or len(touched) != len(self.masked):
            self.masked = set(touched)
        _record(ctx, items, saved, new, f"last_n_observations n={self.n}", self.counted)
        return out

    def _extend(self, items: list[Item], new: list[Item], ctx: Context) -> list[Item]:
        base = len(self.prev_out)
        obs = self.obs
        obs.extend(base + j for j, it in enumerate(new) if self._observation(it))
        last_removed = max(0, (len(obs) // self.polling) * self.polling - self.n)
        # observations that fell out of the kept ones, then new ones masked by their tags
        candidates = obs[max(1, self.last_removed) : last_removed]
        omitted = set(candidates)
        candidates += [i for i in obs[max(1, last_removed) :] if i >= base and i not in omitted]
        self.last_removed = last_removed
        out = extended(self.prev_out, new, edits=True, owner=self)
        if candidates:  # edited from the first candidate on
            out.same = min(out.same, min(candidates))
        fresh = []
        for i in candidates:
            it = items[i]
            if out[i].kind == "stubs" or not self._masks(it, i in omitted):
                continue  # masked already (by its tags), or kept
            out[i] = self._stub(it)
            self.saved += ctx.tokens(it.msg) - ctx.tokens(out[i].msg)
            if it.pos is not None and it.pos not in self.masked:
                fresh.append(it.pos)
        self.masked.update(fresh)
        _record(ctx, items, self.saved, fresh, f"last_n_observations n={self.n}", self.counted)
        return out


def _record(
    ctx: Context,
    before: list[Item],
    saved: int,
    new: list[int],
    reason: str,
    counted: RunningCount,
) -> None:
    """One `mask_observations` event for the newly masked positions, if any: `before` is the
    unmasked request (counted by `counted`, the stage's count of its inputs) and `saved` what
    every masked item (old and new) no longer costs."""
    if new:
        total = counted(before, ctx.count, ctx.tok)
        ctx.events.append(
            Event(
                "mask_observations", ctx.turn.index, tuple(new), total, total - saved, None, reason
            )
        )


class WindowMaskStage:
    """`ObservationMaskingCondenser`: an observation outside the last `attention_window`
    events (messages) of the view is masked.

    Fast path as in `LastNStage`: with only new messages, the masked region grows by as many.
    """

    capabilities = frozenset({KEEPS_MARKS})

    def __init__(self, attention_window: int, placeholder: str) -> None:
        self.window = attention_window
        self.placeholder = placeholder
        self.masked: set[int] = set()
        self.stubs = MaskedCopies()
        self.counted = RunningCount()  # the inputs' tokens, for the events
        self.prev_in: list[Item] | Mark | None = None
        self.prev_out: list[Item] = []
        self.saved = 0

    def _mask(self, out: list[Item], i: int, ctx: Context) -> int | None:
        """Mask `out[i]` if it is an observation; its position if it was not masked before."""
        it = out[i]
        if it.kind != "tool_results" or not isinstance(it.msg, ToolMessage):
            return None
        msg = it.msg
        text = self.placeholder
        out[i] = self.stubs.of(it, ("mask", text), lambda _: text)
        self.saved += ctx.tokens(msg) - ctx.tokens(out[i].msg)
        return it.pos

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        new = appended(self.prev_in, items)
        limit = len(items) - self.window
        if new is None:
            out = list(items)
            self.saved = 0
            touched = [self._mask(out, i, ctx) for i in range(max(0, limit))]
            positions = [p for p in touched if p is not None]
            fresh = [p for p in positions if p not in self.masked]
            if fresh or len(positions) != len(self.masked):
                self.masked = set(positions)
        else:
            start = max(0, len(self.prev_out) - self.window)
            out = extended(self.prev_out, new, edits=True, owner=self)
            out.same = min(out.same, start)  # edited from `start` on
            touched = [self._mask(out, i, ctx) for i in range(start, max(0, limit))]
            fresh = [p for p in touched if p is not None and p not in self.masked]
            self.masked.update(fresh)
        self.prev_in, self.prev_out = mark(items), out
        _record(ctx, items, self.saved, fresh, f"attention_window={self.window}", self.counted)
        return out


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

    def counts_only(self, trace: Trace, summarizer: Summarizer) -> CallCounts | None:
        """This policy's per-call counts and events on `trace` by formula
        (`ctxlab._replay.policies.masking_counts`), for a chart that needs no requests; the
        full engine for a trajectory whose observations SWE-agent named itself."""
        from ctxlab._replay.policies.counts_only import single_stage
        from ctxlab._replay.policies.masking_counts import last_n_counts

        if swe_agent_observations(trace)[0] is not None:
            return None
        return single_stage(self, trace, LastNStage, last_n_counts)


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

    def counts_only(self, trace: Trace, summarizer: Summarizer) -> CallCounts | None:
        """This policy's per-call counts and events on `trace` by formula
        (`ctxlab._replay.policies.masking_counts`), for a chart that needs no requests."""
        from ctxlab._replay.policies.counts_only import single_stage
        from ctxlab._replay.policies.masking_counts import window_mask_counts

        return single_stage(self, trace, WindowMaskStage, window_mask_counts)


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
