"""Claude Code's auto-compact, as users reverse-engineered it (the CLI is closed source).

When the request reaches the effective window (the model's window minus the output it
reserves, at most 20k) minus a 13,000-token buffer, 167,000 tokens of a 200k window, the whole
conversation is summarised and the next request is the system prompt plus one user message
that carries the summary. The window is 200,000 tokens unless the model id asks for the 1M
context (`claude-opus-4-6[1m]`), whatever the model's public profile says.
`CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` can only lower the threshold, `DISABLE_AUTO_COMPACT` turns it
off. Claude Code decides on the tokens it sends (system prompt and tool schemas included, as
the API counts them), which its transcript does not hold: `counted_as` estimates that part
from the transcript's own usage (`ctxlab._cost.calibration.counted_as`). Sources and measured
agreement: docs/check-replay.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ctxlab._cost.calibration import CountedAs, counted_as
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
    summary_item,
    write_history,
)

if TYPE_CHECKING:
    from ctxlab._trace import Trace

CONTINUATION = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)
"""The user message Claude Code starts a compacted session with, as seen in its transcripts
(the same one-sentence lead is in @anthropic-ai/claude-code 2.0.0's cli.js, followed by the
summary). Kept for token-count fidelity; Claude Code is proprietary, see the prompt below."""

CLAUDE_CODE_SUMMARY_PROMPT = """{messages}

Write a summary of the conversation above that lets the work go on once the earlier messages \
are gone. Reason first inside <analysis> tags, then give the summary inside <summary> tags, in \
these sections:

1. Primary Request and Intent: everything the user asked for, in detail.
2. Key Technical Concepts: the technologies, frameworks and ideas that came up.
3. Files and Code Sections: each file read, changed or created, why it matters, key code.
4. Errors and fixes: each error, how it was resolved, and what the user said about it.
5. Problem Solving: problems solved and troubleshooting still open.
6. All user messages: every message the user wrote, leaving out tool results.
7. Pending Tasks: work the user asked for that is not finished.
8. Current Work: what was being done just before this request.
9. Optional Next Step: the next step, only if it follows from the latest request."""
"""A PARAPHRASE, in ctxlab's own words, of Claude Code's `/compact` summary prompt. Claude Code is
proprietary ("© Anthropic PBC. All rights reserved.", package LICENSE.md), so its text is not
copied here. The original lives in the bundled `cli.js` of the npm package
`@anthropic-ai/claude-code` (read at version 2.0.0; version 2.1.332 ships a native binary
instead). Kept from it: the conversation-then-request order, the <analysis> then
<summary> answer, and the nine section names in order, so the offline `Extractive` summariser
fills the same nine sections. Token counts of summariser input differ from the original's."""


class AutoCompactStage(RebuildStage):
    """Summarise everything once the request reaches `threshold` tokens."""

    capabilities = frozenset({KEEPS_MARKS, JUMPS})  # acts only at `trigger_tokens`

    def __init__(self, threshold: int, prefix: str, prompt: str) -> None:
        super().__init__()
        self.threshold, self.lead, self.prompt = threshold, prefix, prompt

    @property
    def trigger_tokens(self) -> int:
        """The request size, as the policy counts it, at which this stage compacts."""
        return int(self.threshold)

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        view = self.view(items)
        if self.count(view, ctx) < self.threshold:
            return view
        system = [it for it in view if it.kind == "system"]
        rest = [it for it in view if it.kind != "system"]
        if not rest:
            return view
        path = "/conversation_history/compacted.md"
        write_history(ctx, path, rest)
        text = ctx.summarizer.summarize([it.msg for it in rest], prompt=self.prompt).strip()
        after = [*system, summary_item(self.lead + text)]
        reason = f">= {self.threshold} tokens"
        return self.commit(ctx, view, after, "summarize", reason, path, summary=text)


WINDOW = 200_000
"""The window Claude Code runs every model with unless the 1M context is switched on."""
WINDOW_1M = 1_000_000
"""The window of a model id with the `[1m]` suffix (`claude-opus-4-6[1m]`)."""


def claude_code_window(model: str | None) -> int:
    """The window Claude Code uses for `model`: 1M only when the id says `[1m]`, else 200k
    (a 1M-capable model such as claude-opus-4-6 still runs 200k by default)."""
    return WINDOW_1M if model and model.lower().endswith("[1m]") else WINDOW


@dataclass(frozen=True)
class ClaudeCode(StagePolicy):
    """Auto-compact at `window - min(max_output_tokens, 20_000) - autocompact_buffer`, counted
    as Claude Code counts (`counted_as`).

    `window`: `"auto"` = Claude Code's own rule (`claude_code_window`: 200,000, or 1,000,000 for
    a `[1m]` model id), not the public model profile. `autocompact_pct_override`: the
    `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` setting (percent of the effective window; it can only
    lower the threshold). `auto_compact=False`: `DISABLE_AUTO_COMPACT` / `autoCompactEnabled:
    false`. `counted_as`: how the parts the transcript lacks are counted, one of
    `ctxlab._cost.calibration.COUNTED_AS` (`file` turns the estimate off).
    """

    name: ClassVar[str] = "claude-code"
    source: ClassVar[str] = (
        "reverse-engineered threshold 'effective window - 13,000' with effective window = "
        "window - min(max output, 20,000), override clamped by Math.min: anthropics/claude-code "
        "issue #31806 (v2.1.x); 200k unless the model id ends in [1m]: issues #36014, #42375 "
        "(claude-opus-4-6[1m]) [secondary; closed source]; summary prompt is a paraphrase "
        "(licence forbids copying) of the /compact prompt in package/cli.js of the npm package "
        "@anthropic-ai/claude-code 2.0.0"
    )

    window: int | None | Literal["auto"] = AUTO
    max_output_tokens: int = 20_000
    autocompact_buffer: int = 13_000
    autocompact_pct_override: float | None = None
    auto_compact: bool = True
    counted_as: str = "usage"
    model: str | None = None
    cache_aligned: bool = False
    """Compact only at a call whose cache is cold anyway, or when the window forces it
    (`ctxlab._replay.policies.cache_aligned`)."""

    def params(self) -> dict[str, Any]:
        """Parameters as given; `cache_aligned` only when set."""
        return aligned_params(super().params())

    def window_for(self, trace: Trace) -> int | None:
        """Claude Code's window for the model (`claude_code_window`), or the one given."""
        if self.window == AUTO:
            return claude_code_window(self.model or trace.model)
        return super().window_for(trace) or WINDOW

    def threshold(self, window: int | None) -> int:
        """The request size, as Claude Code counts it, at which it auto-compacts."""
        effective = int(window or WINDOW) - min(int(self.max_output_tokens), 20_000)
        threshold = effective - int(self.autocompact_buffer)
        if self.autocompact_pct_override is not None and 0 < self.autocompact_pct_override <= 100:
            threshold = min(threshold, int(effective * self.autocompact_pct_override / 100))
        return threshold

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One auto-compact stage (none with `auto_compact=False`), its threshold moved into
        the policy's own count by `counted_as`."""
        if not self.auto_compact:
            return []
        threshold = self.harness_count(trace).policy(self.threshold(window))
        stages: list[Stage] = [
            AutoCompactStage(threshold, CONTINUATION, CLAUDE_CODE_SUMMARY_PROMPT)
        ]
        return aligned(stages, self, trace, window)

    def harness_count(self, trace: Trace) -> CountedAs:
        """How this policy's decisions on `trace` counted what the file lacks."""
        return counted_as(trace, self.counter_chars_per_token(trace), self.counted_as)


__all__ = [
    "CLAUDE_CODE_SUMMARY_PROMPT",
    "CONTINUATION",
    "WINDOW",
    "WINDOW_1M",
    "AutoCompactStage",
    "ClaudeCode",
    "claude_code_window",
]
