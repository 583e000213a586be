"""Claude Code's auto-compact, as users reverse-engineered it (the CLI is closed source).

When the request reaches the effective window (the model's window minus the output it
reserves, at most 20k) minus a 13,000-token buffer, about 83.5% of a 200k window, the whole
conversation is summarised and the next request is the system prompt plus one user message
that carries the summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from ctxlab.policies._view import (
    AUTO,
    Context,
    Item,
    RebuildStage,
    Stage,
    StagePolicy,
    summary_item,
    write_history,
)

if TYPE_CHECKING:
    from ctxlab.trace import Trace

CONTINUATION = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)
"""The user message Claude Code starts a compacted session with, as seen in its transcripts."""

CLAUDE_CODE_SUMMARY_PROMPT = """Your task is to create a detailed summary of the conversation \
so far, paying close attention to the user's explicit requests and your previous actions. First \
think in <analysis> tags, then write a <summary> with: primary request and intent, key technical \
concepts, files and code sections, errors and fixes, problem solving, all user messages, pending \
tasks, current work, and an optional next step.

{messages}"""
"""A paraphrase of the 9-section `/compact` prompt users have extracted; only LLM summarisers
read it."""


class AutoCompactStage(RebuildStage):
    """Summarise everything once the request reaches `threshold` tokens."""

    def __init__(self, threshold: int, prefix: str, prompt: str) -> None:
        super().__init__()
        self.threshold, self.lead, self.prompt = threshold, prefix, prompt

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        view = self.view(items)
        if ctx.count(view) < self.threshold:
            return view
        system = [it for it in view if it.kind == "system"]
        rest = [it for it in view if it.kind != "system"]
        if not rest:
            return view
        path = "/conversation_history/compacted.md"
        write_history(ctx, path, rest)
        text = ctx.summarizer.summarize([it.msg for it in rest], prompt=self.prompt).strip()
        after = [*system, summary_item(self.lead + text)]
        return self.commit(ctx, view, after, "summarize", f">= {self.threshold} tokens", path)


@dataclass(frozen=True)
class ClaudeCode(StagePolicy):
    """Auto-compact at `window - min(max_output_tokens, 20_000) - autocompact_buffer`.

    `window`: `"auto"` = the model's profile, else 200,000 (every Claude model Claude Code
    ships with has at least that).
    """

    name: ClassVar[str] = "claude-code"
    source: ClassVar[str] = (
        "reverse-engineered threshold 'effective window - 13,000' (~83.5% of 200k): "
        "anthropics/claude-code issues #31806 and #5385 [secondary; closed source]"
    )

    window: int | None | Literal["auto"] = AUTO
    max_output_tokens: int = 20_000
    autocompact_buffer: int = 13_000
    model: str | None = None

    def window_for(self, trace: Trace) -> int | None:
        """The profile window, else 200k."""
        return super().window_for(trace) or 200_000

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One auto-compact stage."""
        effective = int(window or 200_000) - min(int(self.max_output_tokens), 20_000)
        threshold = effective - int(self.autocompact_buffer)
        return [AutoCompactStage(threshold, CONTINUATION, CLAUDE_CODE_SUMMARY_PROMPT)]


__all__ = ["CLAUDE_CODE_SUMMARY_PROMPT", "CONTINUATION", "AutoCompactStage", "ClaudeCode"]
