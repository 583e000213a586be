"""One Deep Agents call's `SummarizationMiddleware.wrap_model_call` (docs/deepagents.md §4,
§5): request-only argument truncation, the trigger clauses OR the input budget, the keep window
with the backward safe cutoff, the summary and history file, and `_call_with_budget`'s tail
clip with its `ContextOverflowError` rollback.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._messages import message_text, summary_message
from ctxlab._replay.policies.base import Call, Event, Files
from ctxlab._replay.policies.deepagents.effective import EffectiveList
from ctxlab._replay.policies.deepagents.message_edits import REASONING_SIZE, size_without_reasoning
from ctxlab._replay.policies.deepagents.state import EPOCH, SummaryEvent, Undo
from ctxlab._replay.policies.deepagents.texts import (
    history_section,
    read_file_clip,
    summary_message_text,
)
from ctxlab._replay.policies.langchain_rules import DEFAULT_MESSAGES_TO_KEEP, keep_search

if TYPE_CHECKING:
    from ctxlab._trace import Turn
    from ctxlab.summarizers import Summarizer


class SummarizationStep(EffectiveList):
    """The summarisation step of `DeepAgentsRun`, on the state it keeps; state edits, file
    writes and the recorded `Call` go through the run (`_set`, `_offload`, `_next_hex`,
    `_record`)."""

    summarizer: Summarizer
    files: Files
    kinds: list[str]
    window_kinds: dict[str, int]
    budget: int | None
    budget_per_call: bool
    truncate_when: tuple[bool, int | float] | None
    trigger: list[list[tuple[bool, float | None]]]
    session: str | None
    summaries: dict[str, HumanMessage]
    unreasoned: set[int]
    edited_until: int
    fixed: int
    """Tokens of the system prompt and tool schemas, in every request."""
    offset: int
    """1 when the trace starts with a system message (state position + offset = history
    position), else 0."""

    if TYPE_CHECKING:  # the run's own, declared here for the checker only: a definition in
        # this class would come before `RequestParts` in `DeepAgentsRun`'s method order

        def _record(self, turn: Turn, events: list[Event], trunc_stop: int, count: int) -> Call: ...

        def _set(self, index: int, message: BaseMessage, kind: str) -> None: ...

        def _offload(self, message: ToolMessage, text: str) -> tuple[ToolMessage, str]: ...

        def _next_hex(self) -> str: ...

        def _recount_window(self) -> None: ...

    def _summarization(self, turn: Turn, events: list[Event]) -> Call:
        s = self.settings
        self.budget = self.budget_for(turn.max_output_tokens)
        n_eff = self._eff_len()
        msgs = None
        total = self.fixed + self._suffix(0, 0)
        if s.use_usage_metadata:
            msgs = self._all(0)
            total = self._scaled(total, msgs, True)

        # Step 1: request-only argument truncation.
        trunc_stop = 0
        when = self.truncate_when
        if when is not None and (n_eff if when[0] else total) >= when[1]:
            assert s.truncate_trigger is not None  # `when` is made from it
            cut = self._truncate_cutoff(n_eff)
            if cut < n_eff and self._flags(0, cut):
                trunc_stop = cut
                before = total
                msgs = self._all(trunc_stop)
                total = self._scaled(self.fixed + self._suffix(0, trunc_stop), msgs, True)
                first = self.event.cutoff if self.event is not None else 0
                lo = bisect_left(self.tpos, first)
                hi = bisect_left(self.tpos, self._pos(cut - 1) + 1)
                touched = tuple(p + self.offset for p in self.tpos[lo:hi])
                events.append(
                    Event(
                        "truncate_args",
                        turn.index,
                        touched,
                        before,
                        total,
                        None,
                        f"{s.truncate_trigger[0]}:{s.truncate_trigger[1]}",
                    )
                )

        # Step 2: trigger clauses OR input budget.
        by_trigger = self._should_summarize(n_eff, total, msgs)
        by_budget = self.budget is not None and total > self.budget
        if not (by_trigger or by_budget):
            return self._record(turn, events, trunc_stop, total)

        # Step 3: summarise.
        cutoff = self._cutoff(n_eff, trunc_stop)
        if cutoff <= 0:
            return self._with_budget(turn, events, trunc_stop)
        reason = "+".join(r for r, on in (("trigger", by_trigger), ("budget", by_budget)) if on)
        return self._summarize(turn, events, cutoff, trunc_stop, total, reason)

    def budget_for(self, max_output: int | None) -> int | None:
        """The input budget of a call that recorded `max_output` tokens of output: the
        policy's (`Settings.budget`), or, when the output limit comes from the trace, the
        window's 95% less the call's own."""
        window = self.settings.window
        if self.budget_per_call and max_output is not None and window is not None:
            return max(0, int(window * 0.95) - max_output)
        return self.settings.budget

    def _metric(self, kind: str, value: float) -> tuple[bool, float | None]:
        """A trigger clause's metric as (counts messages?, limit); a None limit is never met."""
        return (True, value) if kind == "messages" else (False, self._threshold(kind, value))

    def _truncate_when(self) -> tuple[bool, int | float] | None:
        """The truncation trigger as (counts messages?, limit), or None if it never fires."""
        trigger = self.settings.truncate_trigger
        if trigger is None:
            return None
        kind, value = trigger
        if kind == "messages":
            return True, value
        if kind == "tokens":
            return False, value
        limit = self._threshold(kind, value) if kind == "fraction" else None
        return None if limit is None else (False, limit)

    def _truncate_cutoff(self, n_eff: int) -> int:
        kind, value = self.settings.truncate_keep
        if kind == "messages":
            return n_eff if n_eff <= value else int(n_eff - value)
        if kind == "fraction" and self.settings.window is None:
            return n_eff if n_eff <= 20 else n_eff - 20
        if kind not in {"tokens", "fraction"}:
            return n_eff
        target = self._threshold(kind, value)
        assert target is not None  # a token count, or a fraction of a known window
        # Walking back, the first i with suffix(i) > target gives i + 1; suffixes only grow.
        lo, hi = 0, n_eff  # smallest j with suffix(j) <= target (suffix(n_eff) = 0)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._suffix(mid, 0) <= target:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _should_summarize(self, n_eff: int, total: int, msgs: list[BaseMessage] | None) -> bool:
        for clause in self.trigger:
            for by_messages, limit in clause:
                if limit is None:  # never met
                    break
                if by_messages:
                    if n_eff < limit:
                        break
                elif not (total >= limit or self._reported(float(limit), msgs)):
                    break
            else:
                return True
        return False

    def _cutoff(self, n_eff: int, trunc_stop: int) -> int:
        """`_determine_cutoff_index` on the truncated effective list."""
        kind, value = self.settings.keep
        if kind == "messages" or (kind == "fraction" and self.settings.window is None):
            keep = int(value) if kind == "messages" else DEFAULT_MESSAGES_TO_KEEP
            if n_eff <= keep:
                return 0
            return self._safe(n_eff - keep, n_eff)
        if n_eff == 0:
            return 0
        target = self._threshold(kind, value)
        assert target is not None  # a token count, or a fraction of a known window
        msgs = self._all(trunc_stop)
        whole = self._scaled(self._suffix(0, trunc_stop), msgs, False)
        if whole <= target:
            return 0
        candidate = keep_search(n_eff, lambda i: self._suffix(i, trunc_stop) <= target)
        return 0 if candidate is None else self._safe(candidate, n_eff)

    def _safe(self, cutoff: int, n_eff: int) -> int:
        """`_find_safe_cutoff_point`: move back to the AIMessage owning a ToolMessage at cutoff."""
        if cutoff >= n_eff or not isinstance(self._raw(cutoff), ToolMessage):
            return cutoff
        ids: set[str] = set()
        j = cutoff
        while j < n_eff:
            m = self._raw(j)
            if not isinstance(m, ToolMessage):
                break
            if m.tool_call_id:
                ids.add(m.tool_call_id)
            j += 1
        for i in range(cutoff - 1, -1, -1):
            m = self._raw(i)
            if isinstance(m, AIMessage) and m.tool_calls:
                if ids & {c.get("id") for c in m.tool_calls if c.get("id")}:
                    return i
        return j

    def _summarize(
        self,
        turn: Turn,
        events: list[Event],
        cutoff: int,
        trunc_stop: int,
        total: int,
        reason: str,
    ) -> Call:
        old = self.event
        to_summarize = self._messages(0, cutoff, trunc_stop)
        session = self.session or f"session_{self._next_hex()[:32]}"
        path = f"/conversation_history/{session}.md"
        stamp = turn.started_at or EPOCH
        self.files.append(path, lambda: history_section(stamp, to_summarize))
        summary = self._summary_text(to_summarize)
        content = summary_message_text(path, summary)
        message = self.summaries.get(content)
        if message is None:  # one object per distinct text: built and measured once
            message = self.summaries[content] = summary_message(content)
        state_cutoff = old.cutoff + cutoff - 1 if old is not None else cutoff
        first = old.cutoff if old is not None else 0
        touched = tuple(range(first + self.offset, min(state_cutoff, len(self.view)) + self.offset))
        new = SummaryEvent(
            state_cutoff, message, tk.message_tokens(message, self.cpt), len(self.view), path
        )
        # The request: [summary, *drop_reasoning(preserved)]; preserved keeps truncated args,
        # which under the new event means state positions below `truncated_until`.
        truncated_until = self._pos(trunc_stop - 1) + 1 if trunc_stop > 0 else 0
        self.event = new
        self._recount_window()
        undo = self._drop_reasoning(new.cutoff, new.created_at)
        index = len(events)  # the summary's event goes before the budget's (tail clip, overflow)
        committed = self._with_budget(
            turn, events, max(0, truncated_until - new.cutoff + 1), (old, undo, session)
        )
        after = committed.context_tokens
        events.insert(
            index, Event("summarize", turn.index, touched, total, after, path, reason, summary)
        )
        return committed

    def _summary_text(self, messages: Sequence[BaseMessage]) -> str:
        s = self.settings
        if not messages:
            return "No previous conversation history."
        if s.trim_tokens_to_summarize is not None:
            from langchain_core.messages import trim_messages

            try:
                messages = trim_messages(
                    list(messages),
                    max_tokens=s.trim_tokens_to_summarize,
                    token_counter=lambda ms: tk.count_tokens(ms, chars_per_token=self.cpt),
                    start_on="human",
                    strategy="last",
                    allow_partial=True,
                    include_system=True,
                )
            except Exception:  # noqa: BLE001 - LangChain falls back the same way
                messages = messages[-15:]
            if not messages:
                return "Previous conversation was too long to summarize."
        return self.summarizer.summarize(messages, prompt=s.summary_prompt).strip()

    def _drop_reasoning(self, start: int, stop: int) -> tuple[int, list[tuple[int, int]]]:
        """Kept messages from before a summary lose reasoning bound to the dropped history.

        Returns what `_undo_drop` needs to restore the previous state.
        """
        view, cpt, reasoned = self.view, self.cpt, self.reasoned
        changed = []
        lo = bisect_left(reasoned, max(start, self.dropped_until))
        for p in reasoned[lo : bisect_left(reasoned, min(stop, len(view)))]:
            m = cast(AIMessage, view[p])  # as fed: a state never replaces an AIMessage
            size = tk.derived(m, REASONING_SIZE, partial(size_without_reasoning, m))
            changed.append((p, size.tokens(cpt)))
        undo = (self.dropped_until, [(p, self.etok.values[p]) for p, _ in changed])
        self.dropped_until = max(self.dropped_until, stop)
        if changed:
            self.unreasoned.update(p for p, _ in changed)
            self.edited_until = max(self.edited_until, changed[-1][0] + 1)
        self._retoken_ai(changed)
        return undo

    def _undo_drop(self, undo: tuple[int, list[tuple[int, int]]]) -> None:
        self.dropped_until, changed = undo
        self.unreasoned.difference_update(p for p, _ in changed)
        self._retoken_ai(changed)

    def _retoken_ai(self, changes: list[tuple[int, int]]) -> None:
        """New token counts for AIMessages at the given positions, in one prefix-sum pass."""
        start = self._window_start()
        for p, toks in changes:
            if p >= start:
                self.window_kinds["ai"] += toks - self.etok.values[p]
        self.etok.set_many(changes)

    def _with_budget(
        self, turn: Turn, events: list[Event], trunc_stop: int, summarized: Undo | None = None
    ) -> Call:
        """`_call_with_budget`: clip the trailing tool-result batch if the request is over budget.

        `summarized` is set when this call just summarised: what to restore if deepagents would
        raise `ContextOverflowError` (it then persists nothing: no event, no clipped results;
        files already written stay, as the backend wrote them).
        """
        n_eff = self._eff_len()
        msgs = self._all(trunc_stop)
        count = self._scaled(self.fixed + self._suffix(0, trunc_stop), msgs, True)
        if self.budget is None or count <= self.budget:
            if summarized:
                self.session = summarized[2]
            return self._record(turn, events, trunc_stop, count)
        # Trailing batch of ToolMessages in the request.
        start = n_eff
        while start > 0 and isinstance(self._raw(start - 1), ToolMessage):
            start -= 1
        replacements: dict[int, tuple[BaseMessage, str]] = {}
        paths = []
        for j in range(start, n_eff):
            p = self._pos(j)
            clipped, path = self._clip(p, start)
            replacements[p] = (clipped, "stubs")
            paths.append(path)
        saved = {p: (self.view[p], self.kinds[p]) for p in replacements}
        for p, (m, kind) in replacements.items():
            self._set(p, m, kind)
        reduced = self._scaled(
            self.fixed + self._suffix(0, trunc_stop), self._all(trunc_stop), True
        )
        if replacements:
            events.append(
                Event(
                    "tail_clip",
                    turn.index,
                    tuple(p + self.offset for p in replacements),
                    count,
                    reduced,
                    next((p for p in paths if p), None),
                    "over budget",
                )
            )
        if reduced > self.budget:
            result = self._record(turn, events, trunc_stop, reduced)
            events.append(
                Event(
                    "overflow_error",
                    turn.index,
                    (),
                    reduced,
                    None,
                    None,
                    "Context remains above the input budget after compaction",
                )
            )
            for p, (m, kind) in saved.items():
                self._set(p, m, kind)
            if summarized:
                self._undo_drop(summarized[1])
                self.event = summarized[0]
                self._recount_window()
            return result
        if summarized:
            self.session = summarized[2]
        return self._record(turn, events, trunc_stop, reduced)

    def _clip(self, p: int, batch_start: int) -> tuple[BaseMessage, str | None]:
        """`_clip_one_tail_message`: slice a read_file result, offload any other."""
        message = self.view[p]
        assert isinstance(message, ToolMessage)  # the request's trailing tool results
        call = None
        for j in range(batch_start - 1, -1, -1):
            m = self._raw(j)
            if isinstance(m, AIMessage):
                call = next((c for c in m.tool_calls if c.get("id") == message.tool_call_id), None)
                if call is not None:
                    break
        original = (
            call.get("args", {}).get("file_path")
            if call and call.get("name") == "read_file"
            else None
        )
        text = message_text(message)
        if isinstance(original, str) and original:
            return message.model_copy(update={"content": read_file_clip(text, original)}), None
        stub, path = self._offload(message, text)
        return stub, path
