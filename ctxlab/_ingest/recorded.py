"""The compactions a trace's own harness performed, whatever the loader could tell of them.

Loaders of formats that log their compactions (Claude Code, Codex, OpenHands) fill
`Trace.compactions`. Others (LangSmith exports of a deep agent) only show the effect: the
first call after a compaction gets inputs that do not extend the previous call's
(`Turn.compacted`), and the summary the harness inserted sits in `Trace.inserted`. Comparing a
replay with the recording (`ctxlab._evaluate.check_replay`) and overlaying the recording on a
replay's
chart (`ctxlab.plots`) both need one list of events, so this module derives the missing ones
from what the turns show, in the same `RecordedCompaction` shape.
"""

from __future__ import annotations

from ctxlab._trace import RecordedCompaction, Trace, Turn

EDIT = "edit"
"""Kind of a derived compaction that inserted no new summary: the harness rewrote earlier
messages instead (deepagents truncating old tool-call arguments, tool results cleared)."""


def recorded_compactions(trace: Trace) -> list[RecordedCompaction]:
    """Every recorded compaction of `trace`, by turn: `trace.compactions` as the loader read
    them, plus one derived event per turn marked `compacted` that none of them covers.

    A derived event is `trigger="auto"` (nothing in such files says a user asked),
    `pre_tokens` is the previous call's recorded input, `post_tokens` this call's, and
    `summary` the text of the inserted summary this call saw first (kind `"summarize"`); a
    compacted call with no new summary is kind `"edit"`.
    """
    known = {c.turn for c in trace.compactions}
    derived = [
        _derived(trace, turn) for turn in trace.turns if turn.compacted and turn.index not in known
    ]
    return sorted([*trace.compactions, *derived], key=lambda c: c.turn)


def _derived(trace: Trace, turn: Turn) -> RecordedCompaction:
    previous = trace.turns[turn.index - 1] if turn.index > 0 else None
    summary = _new_summary(trace, turn, previous)
    return RecordedCompaction(
        turn=turn.index,
        kind="summarize" if summary is not None else EDIT,
        trigger="auto",
        pre_tokens=previous.input_tokens if previous is not None else None,
        post_tokens=turn.input_tokens,
        summary=summary,
        started_at=turn.started_at,
    )


def _new_summary(trace: Trace, turn: Turn, previous: Turn | None) -> str | None:
    """Text of the first inserted message in `turn`'s inputs that the previous call did not
    already see (a summary carried over from an earlier compaction is not this one's)."""
    if not trace.inserted:
        return None
    inserted = {(m.type, m.text) for m in trace.inserted}
    seen = {(m.type, m.text) for m in previous.inputs} if previous is not None else set()
    for msg in turn.inputs:
        key = (msg.type, msg.text)
        if key in inserted and key not in seen:
            return msg.text
    return None


__all__ = ["EDIT", "recorded_compactions"]
