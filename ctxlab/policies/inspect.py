"""Inspect AI's compaction strategies (`inspect_ai.model`, docs/compaction.qmd).

All trigger when the input reaches `threshold` (a float in (0, 1] is a share of the window, an
int a token count; default 0.9); unknown windows default to 128,000, as Inspect does. System
and input messages (the task: the user messages before the first assistant message) are always
kept. Compaction affects the input only; later compactions continue from the compacted input.

* `InspectEdit` (`CompactionEdit`): strip thinking blocks except in the last
  `keep_thinking_turns` assistant messages, then clear tool results except the last
  `keep_tool_uses` (with `keep_tool_inputs=False` the calls' arguments too).
* `InspectTrim` (`CompactionTrim`): keep the most recent `preserve` share of the conversation
  messages (never starting at a tool result).
* `InspectSummary` (`CompactionSummary`): replace the conversation with a summary message,
  incrementally (an earlier summary is part of the next summary's input).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from langchain_core.messages import AIMessage, ToolMessage

from ctxlab.policies._view import (
    AUTO,
    Context,
    Item,
    RebuildStage,
    Stage,
    StagePolicy,
    replaced,
    safe_start,
    summary_item,
    write_history,
)

if TYPE_CHECKING:
    from ctxlab.trace import Trace

INSPECT_DEFAULT_WINDOW = 128_000
"""Inspect's context window when its model database does not know the model."""
TOOL_RESULT_PLACEHOLDER = "(tool result removed to save context)"
"""ctxlab's placeholder for a cleared result (Inspect's own text is not in the docs read)."""
INSPECT_SUMMARY_PROMPT = """Summarize the conversation so far for an agent that will continue \
the task: the task overview, the current state, important discoveries, next steps, and context \
to preserve.

{messages}"""
"""After Inspect's documented default prompt contents; only LLM summarisers read it."""
_THINKING = frozenset({"thinking", "redacted_thinking", "reasoning"})


def _threshold(threshold: float | int, window: int) -> int:
    if isinstance(threshold, float) and 0 < threshold <= 1:
        return int(window * threshold)
    return int(threshold)


def _split(view: list[Item]) -> tuple[list[Item], list[Item]]:
    """(system + input messages, conversation)."""
    head_end = 0
    while head_end < len(view) and view[head_end].kind in {"system", "human"}:
        head_end += 1
    return view[:head_end], view[head_end:]


class InspectStage(RebuildStage):
    """Threshold check shared by the three strategies; `compact` is the strategy."""

    def __init__(self, threshold: int) -> None:
        super().__init__()
        self.threshold = threshold

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        view = self.view(items)
        if ctx.count(view) < self.threshold:
            return view
        after, kind, path = self.compact(view, ctx)
        if after is None:
            return view
        return self.commit(ctx, view, after, kind, f">= {self.threshold} tokens", path)

    def compact(self, view: list[Item], ctx: Context) -> tuple[list[Item] | None, str, str | None]:
        raise NotImplementedError


def _no_thinking(message: AIMessage) -> AIMessage:
    content = [
        b for b in message.content if not (isinstance(b, dict) and b.get("type") in _THINKING)
    ]
    return message.model_copy(update={"content": content})


def _cleared(message: ToolMessage, text: str) -> ToolMessage:
    return message.model_copy(update={"content": text, "artifact": None})


def _no_args(message: AIMessage, ids: frozenset[str]) -> AIMessage:
    calls = [{**c, "args": {}} if c.get("id") in ids else c for c in message.tool_calls]
    return message.model_copy(update={"tool_calls": calls})


class EditStage(InspectStage):
    def __init__(
        self,
        threshold: int,
        keep_thinking_turns: Any,
        keep_tool_uses: int,
        keep_tool_inputs: bool,
        exclude_tools: tuple[str, ...],
    ) -> None:
        super().__init__(threshold)
        self.keep_thinking = keep_thinking_turns
        self.keep_tool_uses = keep_tool_uses
        self.keep_inputs = keep_tool_inputs
        self.exclude = set(exclude_tools)

    def compact(self, view: list[Item], ctx: Context) -> tuple[list[Item] | None, str, str | None]:
        out = list(view)
        ais = [i for i, it in enumerate(out) if isinstance(it.msg, AIMessage)]
        if self.keep_thinking != "all":
            keep = int(self.keep_thinking)
            for i in ais[: max(0, len(ais) - keep)]:
                m = out[i].msg
                if isinstance(m.content, list) and any(
                    isinstance(b, dict) and b.get("type") in _THINKING for b in m.content
                ):
                    out[i] = Item(
                        out[i].pos, replaced(m, ("no-thinking",), lambda m=m: _no_thinking(m)), "ai"
                    )
        names = {c.get("id"): c.get("name") for i in ais for c in out[i].msg.tool_calls}
        results = [
            i
            for i, it in enumerate(out)
            if isinstance(it.msg, ToolMessage)
            and it.kind == "tool_results"
            and (it.msg.name or names.get(it.msg.tool_call_id)) not in self.exclude
        ]
        clear = results[: max(0, len(results) - self.keep_tool_uses)]
        cleared_ids: set[str] = set()
        for i in clear:
            m = out[i].msg
            out[i] = Item(
                out[i].pos,
                replaced(m, ("inspect-clear",), lambda m=m: _cleared(m, TOOL_RESULT_PLACEHOLDER)),
                "stubs",
            )
            cleared_ids.add(m.tool_call_id)
        if not self.keep_inputs and cleared_ids:
            for i in ais:
                m = out[i].msg
                ids = frozenset(c.get("id") for c in m.tool_calls if c.get("id") in cleared_ids)
                if ids:
                    out[i] = Item(
                        out[i].pos,
                        replaced(m, ("no-args", ids), lambda m=m, ids=ids: _no_args(m, ids)),
                        "ai",
                    )
        if [it.msg for it in out] == [it.msg for it in view]:
            return None, "", None
        return out, "clear_tool_uses", None


class TrimStage(InspectStage):
    def __init__(self, threshold: int, preserve: float) -> None:
        super().__init__(threshold)
        self.preserve = preserve

    def compact(self, view: list[Item], ctx: Context) -> tuple[list[Item] | None, str, str | None]:
        head, conv = _split(view)
        keep = int(len(conv) * self.preserve)
        start = safe_start(conv, len(conv) - keep)
        if start == 0:
            return None, "", None
        return [*head, *conv[start:]], "trim", None


class SummaryStage(InspectStage):
    def __init__(self, threshold: int, prompt: str) -> None:
        super().__init__(threshold)
        self.prompt = prompt

    def compact(self, view: list[Item], ctx: Context) -> tuple[list[Item] | None, str, str | None]:
        head, conv = _split(view)
        head = [it for it in head if it.kind != "summary"]
        previous = [it for it in view if it.kind == "summary"]
        if not conv:
            return None, "", None
        path = "/conversation_history/inspect_compacted.md"
        write_history(ctx, path, conv)
        text = ctx.summarizer.summarize(
            [it.msg for it in previous[-1:]] + [it.msg for it in conv],
            prompt=self.prompt,
        )
        return [*head, summary_item(text.strip())], "summarize", path


@dataclass(frozen=True)
class _Inspect(StagePolicy):
    threshold: float | int = 0.9
    window: int | None | Literal["auto"] = AUTO
    model: str | None = None

    def window_for(self, trace: Trace) -> int | None:
        """The profile window, else Inspect's 128k default."""
        return super().window_for(trace) or INSPECT_DEFAULT_WINDOW

    def _limit(self, window: int | None) -> int:
        return _threshold(self.threshold, window or INSPECT_DEFAULT_WINDOW)


@dataclass(frozen=True)
class InspectEdit(_Inspect):
    """`CompactionEdit(threshold=0.9, keep_thinking_turns=1, keep_tool_uses=3,
    keep_tool_inputs=True, exclude_tools=None)`."""

    name: ClassVar[str] = "inspect-edit"
    source: ClassVar[str] = (
        "UKGovernmentBEIS/inspect_ai docs/compaction.qmd CompactionEdit defaults"
    )

    keep_thinking_turns: int | Literal["all"] = 1
    keep_tool_uses: int = 3
    keep_tool_inputs: bool = True
    exclude_tools: tuple[str, ...] = ()

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One edit stage."""
        return [
            EditStage(
                self._limit(window),
                self.keep_thinking_turns,
                int(self.keep_tool_uses),
                self.keep_tool_inputs,
                tuple(self.exclude_tools),
            )
        ]


@dataclass(frozen=True)
class InspectTrim(_Inspect):
    """`CompactionTrim(threshold=0.9, preserve=0.8)`."""

    name: ClassVar[str] = "inspect-trim"
    source: ClassVar[str] = (
        "UKGovernmentBEIS/inspect_ai docs/compaction.qmd CompactionTrim defaults"
    )

    preserve: float = 0.8

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One trim stage."""
        return [TrimStage(self._limit(window), float(self.preserve))]


@dataclass(frozen=True)
class InspectSummary(_Inspect):
    """`CompactionSummary(threshold=0.9)` with the offline summariser unless one is given."""

    name: ClassVar[str] = "inspect-summary"
    source: ClassVar[str] = (
        "UKGovernmentBEIS/inspect_ai docs/compaction.qmd CompactionSummary defaults"
    )

    prompt: str | None = None
    instructions: str | None = None

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One summary stage (`prompt` replaces the default; `instructions` are added to it)."""
        prompt = self.prompt or INSPECT_SUMMARY_PROMPT
        if self.instructions:
            prompt = prompt.replace("{messages}", f"{self.instructions}\n\n{{messages}}")
        return [SummaryStage(self._limit(window), prompt)]


__all__ = ["INSPECT_DEFAULT_WINDOW", "InspectEdit", "InspectSummary", "InspectTrim"]
