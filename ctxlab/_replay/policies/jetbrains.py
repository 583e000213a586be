"""The JetBrains "Complexity Trap" strategies (arXiv:2508.21433), on SWE-agent's processors.

* `JetBrainsLLMSummary`: `summarize_every_n_turns(n=21, keep_last_m_turns=10)`: a turn is an
  action (AIMessage) with its observations; the system and first user messages are never
  summarised; when at least `n + keep_last_m_turns` turns are unprocessed, the first `n` become
  one "Checkpoint for the last n turns:" message; `enable_static_checkpointing=True`, as in
  the paper's configs (see `EveryNTurnsStage` for what that flag did in the paper's code).
* `JetBrainsHybrid`: the paper's hybrid: that summary with N=43, M=10, then
  `last_n_observations(n=10)` masking on what remains.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from langchain_core.messages import AIMessage, HumanMessage

from ctxlab._messages import SUMMARY_SOURCE
from ctxlab._replay.policies._engine_counts import Mark, appended, mark
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
)
from ctxlab._replay.policies.masking import LastNStage

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ctxlab._replay.policies.counts_only import CallCounts
    from ctxlab._trace import Trace
    from ctxlab.summarizers import Summarizer

JETBRAINS_UPSTREAM_PROMPT = """You are maintaining a context-aware state summary for an interactive agent. You will be given a list of events corresponding to actions taken by the agent, and the most recent previous summary if one exists. Track:

USER_CONTEXT: (Preserve essential user requirements, goals, and clarifications in concise form)

COMPLETED: (Tasks completed so far, with brief results)
PENDING: (Tasks that still need to be done)
CURRENT_STATE: (Current variables, data structures, or relevant state)

For code-specific tasks, also include:
CODE_STATE: (File paths, function signatures, data structures)
TESTS: (Failing cases, error messages, outputs)
CHANGES: (Code edits, variable updates)
DEPS: (Dependencies, imports, external calls)
VERSION_CONTROL_STATUS: (Repository state, current branch, PR status, commit history)

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
VERSION_CONTROL_STATUS: Branch: fix-float-precision, Latest commit: a1b2c3d"""  # noqa: E501 (verbatim upstream text)
"""The paper's summariser system prompt, verbatim: `agent.templates.summary_system_template` of
config/default_no_demo_checkpoint_same_model_openhands_N=21_M=10.yaml (the LLM-Summary config)
in Recursive-Safeguarding/the-complexity-trap@adfaa1a18b8b
(adfaa1a18b8b3500abb7537101b2bdcefa31f22a), a fork of JetBrains-Research/the-complexity-trap;
the JetBrains repository itself is not in the stored index, so the text is as the fork carries
it. Licence: the fork's README says "MIT (same as upstream)" (its LICENSE file was not
available); the text is OpenHands' MIT-licensed condenser prompt without TASK_TRACKING and with
( ) for { }. SWE-agent sends it as the system message and the turns to summarise (after a
<PROBLEM_STATEMENT> or <PREVIOUS_CHECKPOINT>) as the user message."""

JETBRAINS_SUMMARY_PROMPT = (
    JETBRAINS_UPSTREAM_PROMPT.replace("{", "{{").replace("}", "}}") + "\n\n{messages}"
)
"""`JETBRAINS_UPSTREAM_PROMPT` as a ctxlab template (braces escaped, then the turns)."""


def checkpoint_item(turns: int, summary: str) -> Item:
    """The summary message SWE-agent inserts: an assistant message tagged as a summary."""
    return Item(
        None,
        AIMessage(
            content=f"Checkpoint for the last {turns} turns:\n{summary}",
            additional_kwargs={"lc_source": SUMMARY_SOURCE},
        ),
        "summary",
    )


def summary_context(head: Sequence[Item]) -> str:
    """What goes to the summariser ahead of the turns: the latest checkpoint in `head` as
    `<PREVIOUS_CHECKPOINT>`, else the task (its first user message) as `<PROBLEM_STATEMENT>`."""
    checkpoints = [it for it in head if it.kind == "summary"]
    if checkpoints:
        return f"<PREVIOUS_CHECKPOINT>\n{checkpoints[-1].msg.text}\n</PREVIOUS_CHECKPOINT>\n"
    task = next((it.msg.text for it in head if it.kind == "human"), "")
    return f"<PROBLEM_STATEMENT>\n{task}\n</PROBLEM_STATEMENT>\n"


def head_length(view: Sequence[Item]) -> int:
    """The protected head of `view`: system messages and the first user message, then earlier
    summaries (never summarised)."""
    head_end = 0
    seen_user = False
    while head_end < len(view):
        it = view[head_end]
        if it.kind == "system" or it.kind == "summary" or (it.kind == "human" and not seen_user):
            seen_user = seen_user or it.kind == "human"
            head_end += 1
            continue
        break
    return head_end


class EveryNTurnsStage(RebuildStage):
    """`SummarizeEveryNTurns` as the paper's code ran it (the-complexity-trap@adfaa1a18b8b).

    A turn is an action (AIMessage) with its observations; the system messages and the first
    user message are never summarised. When `n + keep_last_m_turns` turns are unprocessed, the
    first `n` go to the summariser after a `<PROBLEM_STATEMENT>` (first time) or the latest
    `<PREVIOUS_CHECKPOINT>`, and come back as one assistant message "Checkpoint for the last n
    turns:". Every checkpoint joins the processed prefix. With `enable_static_checkpointing`
    (true in the paper's configs) the call that summarises sends only the newest checkpoint;
    later calls send the processed prefix again, every checkpoint included, because that commit
    appends to the cache in both modes and only the summarising call's return differs. ctxlab
    reproduces that, quirk included.
    """

    capabilities = frozenset({KEEPS_MARKS, JUMPS})  # acts only at `trigger_turns`

    def __init__(self, n: int, keep_last_m_turns: int, static: bool = True) -> None:
        super().__init__()
        if n <= 0 or keep_last_m_turns < 0:
            raise ValueError("n must be positive and keep_last_m_turns non-negative")
        self.n, self.m, self.static = n, keep_last_m_turns, static
        # the AIMessages after the head of the view last scanned (`_turn_starts`)
        self._starts: list[int] = []
        self._scanned: list[Item] | Mark | None = None
        self._head = -1

    def _turn_starts(self, view: list[Item], head_end: int) -> list[int]:
        """Indices of the AIMessages (turn starts) after the head of `view`: while the view only
        grows, only its new items are scanned (a call between summaries would otherwise walk up
        to `n + keep_last_m_turns` turns)."""
        new = appended(self._scanned, view) if head_end == self._head else None
        if new is None:
            self._starts = [
                i for i in range(head_end, len(view)) if isinstance(view[i].msg, AIMessage)
            ]
        else:
            first = len(view) - len(new)
            self._starts += [first + j for j, it in enumerate(new) if isinstance(it.msg, AIMessage)]
        self._scanned, self._head = mark(view), head_end
        return self._starts

    @property
    def trigger_turns(self) -> int:
        """The turns after the head at which this stage summarises (`n + keep_last_m_turns`)."""
        return self.n + self.m

    def turns_in(self, view: list[Item]) -> int:
        """The turns (AIMessages) after the head of `view`: what `trigger_turns` is compared
        with (the count-only form counts a prefix with it, `threshold_counts`)."""
        return sum(isinstance(it.msg, AIMessage) for it in view[head_length(view) :])

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        view = self.view(items)
        head_end = head_length(view)
        starts = self._turn_starts(view, head_end)
        if len(starts) < self.n + self.m:
            return view
        # first message of the first kept turn (none kept when m = 0 and exactly n are there)
        end = starts[self.n] if self.n < len(starts) else len(view)
        head = view[:head_end]
        chunk = [HumanMessage(summary_context(head)), *(it.msg for it in view[head_end:end])]
        text = ctx.summarizer.summarize(chunk, prompt=JETBRAINS_SUMMARY_PROMPT)
        checkpoint = checkpoint_item(self.n, text)
        kept = view[end:]
        reason = f"{len(starts)} turns >= n+m"
        if not self.static:
            return self.commit(
                ctx, view, [*head, checkpoint, *kept], "summarize", reason, summary=text
            )
        sent = [*(it for it in head if it.kind != "summary"), checkpoint, *kept]
        out = self.commit(ctx, view, sent, "summarize", reason, summary=text)
        self._view = [*head, checkpoint, *kept]  # what later calls build on
        self.prefix_n = len(self._view)
        self._prefix_tokens = ctx.tools_tokens + sum(ctx.tok.each(self._view))
        return out


@dataclass(frozen=True)
class JetBrainsLLMSummary(StagePolicy):
    """`summarize_every_n_turns` with the paper's N=21, M=10."""

    name: ClassVar[str] = "jetbrains-llm-summary"
    source: ClassVar[str] = (
        "JetBrains-Research/the-complexity-trap SWE-agent fork, history_processors.py "
        "SummarizeEveryNTurns (trigger: unprocessed turns >= n + keep_last_m_turns); N=21, M=10 "
        "from the paper's LLM-Summary config (arXiv:2508.21433); summary prompt verbatim from "
        "summary_system_template in config/default_no_demo_checkpoint_same_model_openhands_"
        "N=21_M=10.yaml, fork Recursive-Safeguarding/the-complexity-trap@adfaa1a18b8b"
    )

    n: int = 21
    keep_last_m_turns: int = 10
    enable_static_checkpointing: bool = True
    window: int | None | Literal["auto"] = AUTO
    model: str | None = None
    cache_aligned: bool = False
    """Compact only at a call whose cache is cold anyway, or when the window forces it
    (`ctxlab._replay.policies.cache_aligned`)."""

    def params(self) -> dict[str, Any]:
        """Parameters as given; `cache_aligned` only when set."""
        return aligned_params(super().params())

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One summary stage."""
        stage = EveryNTurnsStage(
            int(self.n), int(self.keep_last_m_turns), bool(self.enable_static_checkpointing)
        )
        return aligned([stage], self, trace, window)

    def counts_only(self, trace: Trace, summarizer: Summarizer) -> CallCounts | None:
        """The counts and events without the requests, the summaries made where the turns
        say (`ctxlab._replay.policies.jetbrains_counts`); cache-aligned, the generic form."""
        from ctxlab._replay.policies.jetbrains_counts import jetbrains_counts

        return jetbrains_counts(self, trace, summarizer) or super().counts_only(trace, summarizer)


@dataclass(frozen=True)
class JetBrainsHybrid(StagePolicy):
    """Summary (N=43, M=10) followed by observation masking (n=10)."""

    name: ClassVar[str] = "jetbrains-hybrid"
    source: ClassVar[str] = (
        "JetBrains-Research/the-complexity-trap README and configs: Hybrid = "
        "summarize_every_n_turns(n=43, keep_last_m_turns=10) + last_n_observations(n=10); "
        "summary prompt as config/default_no_demo_checkpoint_same_model_openhands_"
        "N=43_M=10_masking_M=10.yaml (same text), fork "
        "Recursive-Safeguarding/the-complexity-trap@adfaa1a18b8b"
    )

    n: int = 43
    keep_last_m_turns: int = 10
    enable_static_checkpointing: bool = True
    observations_n: int = 10
    window: int | None | Literal["auto"] = AUTO
    model: str | None = None
    cache_aligned: bool = False
    """Compact only at a call whose cache is cold anyway, or when the window forces it
    (`ctxlab._replay.policies.cache_aligned`)."""

    def params(self) -> dict[str, Any]:
        """Parameters as given; `cache_aligned` only when set."""
        return aligned_params(super().params())

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """Summary, then masking of the summarised request."""
        summary = EveryNTurnsStage(
            int(self.n), int(self.keep_last_m_turns), bool(self.enable_static_checkpointing)
        )
        masking = LastNStage(
            int(self.observations_n),
            1,
            frozenset({"remove_output"}),
            frozenset({"keep_output"}),
        )
        return [*aligned([summary], self, trace, window), masking]

    def counts_only(self, trace: Trace, summarizer: Summarizer) -> CallCounts | None:
        """The counts and events without the requests, the summaries made where the turns
        say (`ctxlab._replay.policies.jetbrains_counts`); cache-aligned, the generic form."""
        from ctxlab._replay.policies.jetbrains_counts import jetbrains_counts

        return jetbrains_counts(self, trace, summarizer) or super().counts_only(trace, summarizer)


__all__ = [
    "EveryNTurnsStage",
    "JetBrainsHybrid",
    "JetBrainsLLMSummary",
    "checkpoint_item",
    "head_length",
    "summary_context",
]
