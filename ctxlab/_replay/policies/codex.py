"""OpenAI Codex CLI's local compaction (`codex-rs/core/src/codex/compact.rs`).

When: Codex checks after every model call that asks for a follow-up (tool calls; mid-turn,
`token_limit_reached && needs_follow_up` in `run_turn`, codex-rs/core/src/codex.rs, later
session/turn.rs) and before a turn starts (`run_pre_sampling_compact`), and compacts when
`get_total_token_usage()` reaches the limit. What: that total is the last response's
`total_tokens` (its input and output, reasoning output included), plus Codex's estimate of
the encrypted reasoning items before the last user message (`get_non_last_reasoning_items_tokens`:
the Responses API does not bill earlier turns' reasoning as input, Codex counts it anyway unless
the server says it did), plus the items added since the last model-generated item (tool
outputs, as their serialized JSON / 4), codex-rs/core/src/context_manager/history.rs
(`estimate_reasoning_length`: 3/4 of the base64 length less 650 bytes; read at
openai/codex@023fad268e08, which also discounts images to 7,373 bytes; Codex Desktop
0.104.0-alpha.1 did not: its post-compaction estimate of 940,499 tokens is the replacement
history with its 3.67M image characters counted whole). So a call of 209,950 input tokens can
trigger a 244,800 limit: on the LocalPush 0.104 rollout the check after it came to 212,134 +
33,320 reasoning + 80 = 245,534, the one before to 243,279 (tests/test_codex_rule.py).
The policy counts the next request (which holds the last input, output and tool outputs) and
adds the same reasoning estimate (`EarlierReasoning`, from the lengths the reader keeps).

Limit: `ModelInfo::auto_compact_token_limit` (codex-rs/protocol/src/openai_models.rs
@0d4367d0e6a9): the model's `auto_compact_token_limit` (models.json / the `/models` endpoint,
or the `model_auto_compact_token_limit` setting), else 90% of `context_window`; later versions
take `min(configured, 90%)`, which this preset applies to every version. gpt-5.3-codex sets no
limit: 90% of 272,000 = 244,800, reproduced to the call on that rollout. The window a rollout
records (`model_context_window` in `turn_context` and `token_count`) is the usable part,
`effective_context_window_percent` = 95% of it, so a recorded 258,400 is a 272,000 window
(`ctxlab._evaluate.check_replay.recorded_settings` reads both back). The rollout holds no tool
schemas; `counted_as` estimates what it lacks from its own usage.

The new history is the initial context (system prompt), then the user's own
messages, most recent first, up to `COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000` tokens (the one
that does not fit is cut in the middle), restored to chronological order, then the summary as
a user message prefixed with the "another language model started to solve this problem"
handoff. Assistant messages and tool calls and results are dropped.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from langchain_core.messages import HumanMessage

from ctxlab._cost.calibration import CountedAs, counted_as
from ctxlab._errors import UnsupportedSettingError
from ctxlab._ingest.formats.codex import ENCRYPTED_REASONING
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


def reasoning_tokens(encoded_chars: int) -> int:
    """Codex's estimate of one encrypted reasoning item: `estimate_reasoning_length` (3/4 of
    the base64 length, less 650 bytes) in tokens of 4 bytes, rounded up
    (`approx_tokens_from_byte_count`), codex-rs/core/src/context_manager/history.rs."""
    return -(-max(0, encoded_chars * 3 // 4 - 650) // 4)


class EarlierReasoning:
    """The reasoning tokens Codex adds to the last response's usage when it decides to
    compact (`get_non_last_reasoning_items_tokens`): every encrypted reasoning item before
    the last user message. The Responses API drops earlier turns' reasoning from the input it
    bills, so the recorded input lacks them, yet Codex counts them (`server_reasoning_included`
    false, as the 0.104 rollout shows)."""

    def __init__(self, trace: Trace) -> None:
        self.positions: list[int] = []
        self.sums = [0]
        for pos, message in enumerate(trace.messages):
            chars = (
                message.additional_kwargs.get(ENCRYPTED_REASONING) if message.type == "ai" else None
            )
            if chars:
                self.positions.append(pos)
                self.sums.append(self.sums[-1] + sum(reasoning_tokens(int(c)) for c in chars))

    def __bool__(self) -> bool:
        return bool(self.positions)

    def tokens(self, view: list[Item], first: int) -> int:
        """Reasoning tokens of the history messages at positions `first` on that come before
        the view's last user message (a message Codex keeps after a compaction has none)."""
        last = next((it.pos for it in reversed(view) if it.kind == "human"), None)
        if last is None or last <= first:
            return 0
        return (
            self.sums[bisect_left(self.positions, last)]
            - self.sums[bisect_left(self.positions, first)]
        )


class CodexStage(RebuildStage):
    """Summarise at the limit; keep user messages up to the budget."""

    def __init__(
        self, limit: int, user_budget: int, reasoning: EarlierReasoning | None = None
    ) -> None:
        super().__init__()
        self.limit, self.budget = limit, user_budget
        self.reasoning = reasoning if reasoning else None

    @property
    def capabilities(self) -> frozenset[str]:
        """`JUMPS` (acts only at `trigger_tokens`) only when no earlier reasoning is added to
        the count: with it, the stage may act below `trigger_tokens`."""
        return frozenset({KEEPS_MARKS} if self.reasoning else {KEEPS_MARKS, JUMPS})

    def counted(self, view: list[Item], ctx: Context) -> int:
        """The request as Codex counts it: the view, plus earlier turns' reasoning."""
        tokens = self.count(view, ctx)
        if self.reasoning is not None:
            tokens += self.reasoning.tokens(view, self.cut if self.prefix_n is not None else 0)
        return tokens

    @property
    def trigger_tokens(self) -> int:
        """The request size, as the policy counts it, at which this stage compacts."""
        return int(self.limit)

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        view = self.view(items)
        if self.counted(view, ctx) < self.limit:
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
                short = replaced(msg, ("codex-cut", budget), partial(_middle_cut, msg, budget))
                chosen.append(Item(it.pos, short, "human"))
            break
        chosen.reverse()
        path = "/conversation_history/codex_compacted.md"
        write_history(ctx, path, rest)
        text = ctx.summarizer.summarize([it.msg for it in rest], prompt=CODEX_COMPACT_PROMPT)
        after = [*system, *chosen, summary_item(f"{CODEX_SUMMARY_PREFIX}\n{text.strip()}")]
        reason = f">= {self.limit} tokens"
        return self.commit(ctx, view, after, "summarize", reason, path, summary=text.strip())


EFFECTIVE_PERCENT = 95
"""`default_effective_context_window_percent()` in codex-rs/protocol/src/openai_models.rs: the
share of the window a rollout reports as `model_context_window`."""


def window_from_recorded(recorded: int) -> int:
    """The model's window behind a rollout's `model_context_window`: Codex versions with
    `effective_context_window_percent` record 95% of it (258,400 for 272,000); a value that is
    not 95% of a whole thousand was recorded whole (older versions)."""
    whole, rest = divmod(recorded * 100, EFFECTIVE_PERCENT)
    return whole if rest == 0 and whole % 1000 == 0 else recorded


@dataclass(frozen=True)
class Codex(StagePolicy):
    """`auto_compact_token_limit = min(configured, 0.9 * window)`, reached by the request plus
    earlier turns' reasoning as Codex estimates it (`earlier_reasoning`); user messages kept up
    to 20,000 tokens; counted as Codex counts (`counted_as`, one of
    `ctxlab._cost.calibration.COUNTED_AS`; `file` turns the estimate off)."""

    name: ClassVar[str] = "codex"
    source: ClassVar[str] = (
        "openai/codex codex-rs/core/src/codex/compact.rs (COMPACT_USER_MESSAGE_MAX_TOKENS=20_000, "
        "build_compacted_history); ModelInfo::auto_compact_token_limit = configured, else 90% "
        "of context_window, and effective_context_window_percent = 95 in "
        "codex-rs/protocol/src/openai_models.rs @0d4367d0e6a9 (later: min(configured, 90%)); "
        "counted as get_total_token_usage = last total_tokens + earlier turns' encrypted "
        "reasoning (get_non_last_reasoning_items_tokens, estimate_reasoning_length) + items "
        "since the last model item, codex-rs/core/src/context_manager/history.rs @023fad268e08, "
        "checked after each follow-up call and before each turn (run_turn, codex.rs); "
        "reproduced on a Codex Desktop 0.104.0-alpha.1 gpt-5.3-codex rollout; prompt and prefix "
        "verbatim (Apache-2.0) from codex-rs/core/templates/compact/prompt.md @11baefb5183c and "
        "codex-rs/core/templates/compact/summary_prefix.md @50a533337862"
    )

    window: int | None | Literal["auto"] = AUTO
    auto_compact_fraction: float = 0.9
    auto_compact_token_limit: int | None = None
    user_message_max_tokens: int = 20_000
    counted_as: str = "usage"
    earlier_reasoning: bool = True
    """Count earlier turns' encrypted reasoning as Codex does (`EarlierReasoning`); False
    decides on the request alone."""
    model: str | None = None
    cache_aligned: bool = False
    """Compact only at a call whose cache is cold anyway, or when the window forces it
    (`ctxlab._replay.policies.cache_aligned`)."""

    def params(self) -> dict[str, Any]:
        """Parameters as given; `cache_aligned` only when set."""
        return aligned_params(super().params())

    def window_for(self, trace: Trace) -> int | None:
        """`"auto"`: the window the rollout records (`window_from_recorded`), else the model's
        profile; else the one given."""
        recorded = trace.metadata.get("model_context_window")
        if self.window == AUTO and isinstance(recorded, int) and recorded > 0:
            return window_from_recorded(recorded)
        return super().window_for(trace)

    def limit(self, window: int | None, recorded: int | None = None) -> int:
        """The auto-compact limit as Codex counts: the configured one (else the one the
        rollout `recorded`), at most 90% of the window."""
        configured = self.auto_compact_token_limit
        configured = recorded if configured is None else configured
        if configured is not None:
            limit = int(configured)
            if window is not None:
                limit = min(limit, int(window * self.auto_compact_fraction))
            return limit
        if window is not None:
            return int(window * self.auto_compact_fraction)
        raise UnsupportedSettingError(
            "codex: needs the model's window (window=N) or auto_compact_token_limit"
        )

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One compaction stage, its limit moved into the policy's own count by `counted_as`."""
        recorded = trace.metadata.get("model_auto_compact_token_limit")
        limit = self.limit(window, recorded if isinstance(recorded, int) else None)
        reasoning = EarlierReasoning(trace) if self.earlier_reasoning else None
        stage = CodexStage(
            self.harness_count(trace).policy(limit), self.user_message_max_tokens, reasoning
        )
        return aligned([stage], self, trace, window)

    def harness_count(self, trace: Trace) -> CountedAs:
        """How this policy's decisions on `trace` counted what the file lacks."""
        return counted_as(trace, self.counter_chars_per_token(trace), self.counted_as)


__all__ = [
    "CODEX_COMPACT_PROMPT",
    "CODEX_SUMMARY_PREFIX",
    "EFFECTIVE_PERCENT",
    "Codex",
    "CodexStage",
    "EarlierReasoning",
    "reasoning_tokens",
    "window_from_recorded",
]
