"""OpenAI Codex CLI's local compaction (`codex-rs/core/src/codex/compact.rs`).

Auto-compaction fires when the request reaches `auto_compact_token_limit`, 90% of the model's
context window. The new history is the initial context (system prompt), then the user's own
messages, most recent first, up to `COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000` tokens (the one
that does not fit is cut in the middle), restored to chronological order, then the summary as
a user message prefixed with the "another language model started to solve this problem"
handoff. Assistant messages and tool calls and results are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from langchain_core.messages import HumanMessage

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
    message_text,
    replaced,
    summary_item,
    write_history,
)

if TYPE_CHECKING:
    from ctxlab._trace import Trace

CODEX_SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by that "
    "language model. Use this to build on the work that has already been done and avoid "
    "duplicating work. Here is the summary produced by the other language model, use the "
    "information in this summary to  assist with your own analysis:"
)
"""Verbatim `codex-rs/core/templates/compact/summary_prefix.md` at openai/codex@50a533337862
(50a53333786249f03284067b997c41d84365c7cd; Apache-2.0, Copyright 2025 OpenAI), 400 characters,
no trailing newline, including upstream's double space in "to  assist": `compact.rs` writes
`format!("{SUMMARY_PREFIX}\\n{summary}")`, so the exact bytes decide the summary's token count.
The file differs between Codex versions (at openai/codex@928a707f6a5e it reads "You are
resuming an in-progress task..."); ctxlab keeps the text that goes with the local compaction it
models (`compact.rs` keeping user messages, then prefix + summary)."""

CODEX_UPSTREAM_PROMPT = """You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.

Include:
- Goal / user objective
- Current progress and key decisions made
- Important context, constraints, or user preferences
- What remains to be done (clear next steps)
- Any critical data, examples, or references needed to continue

Be concise, structured, and focused on helping the next LLM seamlessly continue the work.
"""  # noqa: E501 (verbatim upstream text)
"""Verbatim `codex-rs/core/templates/compact/prompt.md` at openai/codex@11baefb5183c
(11baefb5183c7d61c631dee6c3fd6aa9cc93aa73; Apache-2.0, Copyright 2025 OpenAI), 450 characters
with its trailing newline: `compact.rs` sends it (`SUMMARIZATION_PROMPT`, `include_str!`) as the
last user input after the history. Other versions differ: third-party copies lack the "Goal /
user objective" line, and openai/codex@928a707f6a5e asks for an "Active task" handoff."""

CODEX_COMPACT_PROMPT = "{messages}\n\n" + CODEX_UPSTREAM_PROMPT
"""`CODEX_UPSTREAM_PROMPT` as a ctxlab template: the history first, then the prompt, the order
in which Codex sends them (the prompt has no braces to escape)."""


def _middle_cut(message: HumanMessage, budget_chars: int) -> HumanMessage:
    """Codex `truncate_text`: keep the head and tail, mark the tokens cut in the middle."""
    text = message_text(message)
    half = max(0, budget_chars // 2)
    cut = len(text) - 2 * half
    marked = f"{text[:half]}…{cut // 4} tokens truncated…{text[len(text) - half :]}"
    return message.model_copy(update={"content": marked})


class CodexStage(RebuildStage):
    """Summarise at the limit; keep user messages up to the budget."""

    capabilities = frozenset({KEEPS_MARKS, JUMPS})  # acts only at `trigger_tokens`

    def __init__(self, limit: int, user_budget: int) -> None:
        super().__init__()
        self.limit, self.budget = limit, user_budget

    @property
    def trigger_tokens(self) -> int:
        """The request size, as the policy counts it, at which this stage compacts."""
        return int(self.limit)

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        view = self.view(items)
        if self.count(view, ctx) < self.limit:
            return view
        system = [it for it in view if it.kind == "system"]
        rest = [it for it in view if it.kind != "system"]
        if not rest:
            return view
        remaining = self.budget
        chosen: list[Item] = []
        for it in reversed(rest):
            if it.kind != "human" or not isinstance(it.msg, HumanMessage):
                continue
            toks = ctx.tokens(it.msg)
            if toks <= remaining:
                chosen.append(it)
                remaining -= toks
                continue
            if remaining > 0:
                msg = it.msg
                budget = int(remaining * ctx.chars_per_token)
                short = replaced(
                    msg, ("codex-cut", budget), lambda m=msg, b=budget: _middle_cut(m, b)
                )
                chosen.append(Item(it.pos, short, "human"))
            break
        chosen.reverse()
        path = "/conversation_history/codex_compacted.md"
        write_history(ctx, path, rest)
        text = ctx.summarizer.summarize([it.msg for it in rest], prompt=CODEX_COMPACT_PROMPT)
        after = [*system, *chosen, summary_item(f"{CODEX_SUMMARY_PREFIX}\n{text.strip()}")]
        reason = f">= {self.limit} tokens"
        return self.commit(ctx, view, after, "summarize", reason, path, summary=text.strip())


@dataclass(frozen=True)
class Codex(StagePolicy):
    """`auto_compact_token_limit = 0.9 * window`; user messages kept up to 20,000 tokens."""

    name: ClassVar[str] = "codex"
    source: ClassVar[str] = (
        "openai/codex codex-rs/core/src/codex/compact.rs (COMPACT_USER_MESSAGE_MAX_TOKENS=20_000, "
        "build_compacted_history), model family auto_compact_token_limit = 90% of the context "
        "window; prompt and prefix verbatim (Apache-2.0) from "
        "codex-rs/core/templates/compact/prompt.md @11baefb5183c and "
        "codex-rs/core/templates/compact/summary_prefix.md @50a533337862"
    )

    window: int | None | Literal["auto"] = AUTO
    auto_compact_fraction: float = 0.9
    auto_compact_token_limit: int | None = None
    user_message_max_tokens: int = 20_000
    model: str | None = None
    cache_aligned: bool = False
    """Compact only at a call whose cache is cold anyway, or when the window forces it
    (`ctxlab._replay.policies.cache_aligned`)."""

    def params(self) -> dict[str, Any]:
        """Parameters as given; `cache_aligned` only when set."""
        return aligned_params(super().params())

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One compaction stage."""
        if self.auto_compact_token_limit is not None:
            limit = int(self.auto_compact_token_limit)
            if window is not None:
                limit = min(limit, int(window * self.auto_compact_fraction))
        elif window is not None:
            limit = int(window * self.auto_compact_fraction)
        else:
            raise ValueError(
                "codex: needs the model's window (window=N) or auto_compact_token_limit"
            )
        return aligned([CodexStage(limit, int(self.user_message_max_tokens))], self, trace, window)


__all__ = ["CODEX_COMPACT_PROMPT", "CODEX_SUMMARY_PREFIX", "Codex", "CodexStage"]
