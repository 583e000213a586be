"""Tier 2: probe questions and next-action checks with any LangChain chat model.

At each compaction (or at turns the user picks) the probes ask a model questions whose answers
the recorded run established before that turn, once on the replayed (compacted) request and once
on the uncompacted history (`trace.messages[:position]`), so every score has its ceiling beside
it:

* `recall`: one per fact Tier 1 found evicted since the previous probe turn ("what exact path
  came right after ...?"); scored 1 if the answer holds the fact
  (`ctxlab._evaluate.facts.mentions`), else 0;
* `artifact`: "which files did the agent change?"; scored by the share of changed paths evicted
  by then that the answer names;
* `next_action`: the request sent as is, with the trace's tools bound; 1.0 if the model's first
  tool call has the recorded call's tool and arguments, 0.5 the tool only, 0 otherwise (asked only
  at turns whose recorded output calls a tool);
* `continuation` ("what should the agent do next?") and `decision` ("the agent said X: why?",
  X the latest reasoned statement of the agent the request no longer holds verbatim, else the
  latest): free text graded 0-5 by a judge model (`ctxlab._evaluate.probe_judge`) against the
  full-context answer and what the recorded run did or said, divided by 5. Without a judge
  they are not asked: their rows stay, with null answers and scores (`NO_JUDGE` says so).

`plan` decides the probes (no model), `dry_run` prices their calls (no model call), `run` asks
them through a `ProbeCache`, so a rerun is free. Probe lists, questions and frames depend only on
the trace, the replay and the cache: same inputs, same frame, byte for byte.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache as memoize
from typing import TYPE_CHECKING, Any

import polars as pl
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._cost.pricing import rates_for
from ctxlab._evaluate import probe_questions as q
from ctxlab._evaluate.facts import Fact, mentions, mentions_normalised, normalise
from ctxlab._evaluate.probe_calls import (
    Call,
    Failed,
    MemoryProbeCache,
    ProbeCache,
    Reply,
    ask,
    model_name,
    with_rate_limiter,
)
from ctxlab._evaluate.probe_judge import judge_prompt, parse_grade, recorded
from ctxlab._messages import chars_per_token, message_text
from ctxlab._replay.model_calls import DEFAULT_CALLS, CallSettings
from ctxlab._replay.overflow import model_window
from ctxlab._replay.requests import Requests

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.rate_limiters import BaseRateLimiter

    from ctxlab._replay.replay import Replay
    from ctxlab._trace import Trace

PROBE_KINDS = ("recall", "artifact", "next_action", "continuation", "decision")

JUDGED = ("continuation", "decision")
"""Kinds only a judge model can score."""

PROBE_COLUMNS: dict[str, Any] = {
    "turn": pl.Int64,
    "kind": pl.Utf8,
    "question": pl.Utf8,
    "expected": pl.Utf8,
    "answer": pl.Utf8,
    "score": pl.Float64,
    "ceiling_score": pl.Float64,
}
"""The columns of a probes frame every consumer may rely on, in order, with their types."""

EXTRA_COLUMNS: dict[str, Any] = {
    "ceiling_answer": pl.Utf8,
    "fact": pl.Utf8,
    "category": pl.Utf8,
    "judged_by": pl.Utf8,
    "error": pl.Utf8,
    "ceiling_note": pl.Utf8,
    "judge_reply": pl.Utf8,
    "ceiling_judge_reply": pl.Utf8,
}
"""Columns `run` adds after `PROBE_COLUMNS`: the full-context answer, the probed fact and its
category (recall), the judge model's name (judged kinds), what failed (`error`: each failed
call as `answer_call: ...`, `ceiling_call: ...`, `judge: ...`; its score null), how the
ceiling context was cut or skipped (`ceiling_note`) and the judge's raw replies."""

SKIPPED = (
    "probes skipped: pass a LangChain chat model (--model provider:name, or model= in Python) "
    "to ask them"
)
"""The one line said when Tier 2 has no model."""

NO_JUDGE = (
    "continuation and decision probes not asked: pass --judge provider:name (any LangChain "
    "chat model) to grade them"
)
"""The one line said when probes run without a judge."""

NOT_COMPACTION = ("truncate_args", "overflow_error")
"""Event kinds that do not make a turn a probe turn: argument truncation is redone on every
request once it starts, and an overflow changes nothing."""

MAX_FACTS = 20
"""Recall probes per turn by default: facts the recorded agent used again first, then the
earliest; `plan(max_facts=None)` asks all."""

ANSWER_TOKENS = 200
"""Output tokens `dry_run` assumes per call (answers are short; the cost is mostly input)."""

WRITING_TOOLS = re.compile(
    r"write|edit|create|delete|remove|move|rename|patch|apply|insert|replace"
)
"""Tool names that change files (`write_file`, `edit_file`, `apply_patch`, ...)."""

NEXT_ACTION_PROMPT = "next_action"
"""The prompt part of a next-action call's cache key (the call adds no question)."""


@dataclass(frozen=True, slots=True)
class Probe:
    """One planned probe: asked at replay `turn`. `facts` are what a `recall` or `artifact`
    answer must hold; `action` is the recorded next tool call (`next_action`)."""

    turn: int
    kind: str
    question: str
    expected: str
    facts: tuple[Fact, ...] = ()
    action: tuple[str, dict[str, Any]] | None = None


def probe_turns(replay: Replay) -> list[int]:
    """Turns where the replay compacted (any event but `NOT_COMPACTION`), ascending."""
    return sorted(
        {e.turn for e in replay.event_list if e.turn is not None and e.kind not in NOT_COMPACTION}
    )


def plan(
    replay: Replay,
    facts: pl.DataFrame,
    probes: str | Sequence[str] = "auto",
    turns: Sequence[int] | None = None,
    *,
    max_facts: int | None = MAX_FACTS,
) -> list[Probe]:
    """The probes to ask, in order (turn, then `PROBE_KINDS` order, then fact order).

    `facts` is Tier 1's frame (`ctxlab._evaluate.survival.follow`); `probes` is "auto" (every kind)
    or
    some of `PROBE_KINDS`; `turns` are replay turn indices (default: `probe_turns`). At each turn,
    recall probes ask for the facts evicted since the previous probe turn, at most `max_facts`.
    """
    kinds = _kinds(probes)
    trace = _trace(replay)
    count = len(trace.turns)
    chosen = probe_turns(replay) if turns is None else sorted(set(turns))
    bad = [t for t in chosen if not 0 <= t < count]
    if bad:
        raise ValueError(f"turns {bad} out of range: the replay has turns 0-{count - 1}")
    evicted = facts.filter(pl.col("evicted_turn").is_not_null()).with_row_index("order")
    requests = Requests(replay)
    changed = _changed_paths(trace, evicted) if "artifact" in kinds else []
    out: list[Probe] = []
    previous = -1
    for turn in chosen:
        position = trace.turns[turn].position
        if "recall" in kinds:
            out += _recall(trace, evicted, previous, turn, max_facts)
        if "artifact" in kinds:
            out += _artifact(changed, turn, position)
        if "next_action" in kinds:
            out += _next_action(trace, turn)
        if "continuation" in kinds:
            output = trace.turns[turn].output
            did = Reply.of(output).shown() if output is not None else ""
            out.append(Probe(turn, "continuation", q.CONTINUATION, did))
        if "decision" in kinds:
            out += _decision(trace, requests, turn, position)
        previous = turn
    return out


def _kinds(probes: str | Sequence[str]) -> tuple[str, ...]:
    if probes == "auto":
        return PROBE_KINDS
    asked = (probes,) if isinstance(probes, str) else tuple(probes)
    unknown = [k for k in asked if k not in PROBE_KINDS]
    if unknown:
        raise ValueError(f"unknown probe kinds {unknown}: choose from {', '.join(PROBE_KINDS)}")
    return asked


def _trace(replay: Replay) -> Trace:
    if replay.trace is None:
        raise ValueError("probes need the replay's trace (replay.trace is None)")
    return replay.trace


def _fact(row: dict[str, Any]) -> Fact:
    return Fact(row["fact"], row["category"], row["message"])


def _recall(
    trace: Trace, evicted: pl.DataFrame, previous: int, turn: int, max_facts: int | None
) -> list[Probe]:
    rows = evicted.filter(
        (pl.col("evicted_turn") > previous) & (pl.col("evicted_turn") <= turn)
    ).sort([pl.col("needed_turn").is_null(), "message", "order"], maintain_order=True)
    if max_facts is not None:
        rows = rows.head(max_facts)
    out = []
    for row in rows.sort("order").iter_rows(named=True):
        fact = _fact(row)
        question = q.recall_question(fact.text, fact.category, trace.messages[fact.message])
        out.append(Probe(turn, "recall", question, fact.text, (fact,)))
    return out


def _changed_paths(trace: Trace, evicted: pl.DataFrame) -> list[tuple[Fact, int, int]]:
    """Evicted path facts a writing tool was called with: (fact, its evicted turn, the
    position of the first such call), in the facts' order."""
    paths = [
        (_fact(row), row["evicted_turn"])
        for row in evicted.filter(pl.col("category") == "path").iter_rows(named=True)
    ]
    first: dict[int, int] = {}
    for p, m in enumerate(trace.messages):
        if not isinstance(m, AIMessage):
            continue
        for call in m.tool_calls:
            if not WRITING_TOOLS.search(call["name"]):
                continue
            args = normalise(json.dumps(call.get("args", {}), ensure_ascii=False))
            for i, (fact, _) in enumerate(paths):
                if i not in first and mentions_normalised(args, fact):
                    first[i] = p
    return [(fact, turn, first[i]) for i, (fact, turn) in enumerate(paths) if i in first]


def _artifact(changed: list[tuple[Fact, int, int]], turn: int, position: int) -> list[Probe]:
    paths = [fact for fact, evicted, written in changed if evicted <= turn and written < position]
    if not paths:
        return []
    expected = "\n".join(f.text for f in paths)
    return [Probe(turn, "artifact", q.ARTIFACT, expected, tuple(paths))]


def _next_action(trace: Trace, turn: int) -> list[Probe]:
    output = trace.turns[turn].output
    if output is None or not output.tool_calls:
        return []
    call = output.tool_calls[0]
    action = (call["name"], dict(call.get("args", {})))
    expected = Reply("", (action,)).shown()
    return [Probe(turn, "next_action", q.NEXT_ACTION, expected, action=action)]


def _decision(trace: Trace, requests: Requests, turn: int, position: int) -> list[Probe]:
    """The agent's latest reasoned statement ("X because Y") before `position`, preferring one
    the request at `turn` no longer holds as written; none if the agent never gave a reason."""
    found: tuple[str, str] | None = None
    for p in range(position - 1, -1, -1):
        message = trace.messages[p]
        if not isinstance(message, AIMessage):
            continue
        said = q.reasoned(message_text(message))
        if said is None:
            continue
        if requests.status(p, turn)[0] != "kept":
            found = said
            break
        found = found or said
    if found is None:
        return []
    claim, sentence = found
    return [Probe(turn, "decision", q.DECISION.format(claim=claim), sentence)]


def tool_schemas(trace: Trace) -> tuple[dict[str, Any], ...]:
    """The tools every probe call binds: the trace's schemas as sent, else one per tool the
    recorded agent called, with the argument names it passed. The request as the agent sent it
    offered them, a model cannot call a tool it is not offered (next action), and some
    providers refuse a history holding tool calls without tool definitions."""
    if trace.tools:
        return tuple(trace.tools)
    seen: dict[str, dict[str, None]] = {}
    for m in trace.messages:
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                seen.setdefault(call["name"], {}).update(dict.fromkeys(call.get("args", {})))
    return tuple(
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"The recorded agent's `{name}` tool (schema not recorded).",
                "parameters": {"type": "object", "properties": {k: {} for k in keys}},
            },
        }
        for name, keys in seen.items()
    )


class _Contexts:
    """The two contexts of each probe turn, built once: the replayed request
    (`ctxlab._replay.requests.Requests`, its event index made once for all turns) and the full
    history
    before the call."""

    def __init__(self, replay: Replay) -> None:
        self.trace = _trace(replay)
        self.requests = Requests(replay)
        self.compacted = memoize(self._compacted)
        self.full = memoize(self._full)

    def _compacted(self, turn: int) -> tuple[BaseMessage, ...]:
        return tuple(r.message for r in self.requests.at(turn))

    def _full(self, turn: int) -> tuple[BaseMessage, ...]:
        return tuple(self.trace.messages[: self.trace.turns[turn].position])


def _capped(
    context: tuple[BaseMessage, ...],
    extra: Sequence[BaseMessage],
    model: BaseChatModel,
    tools: tuple[dict[str, Any], ...],
    window: int | None,
) -> tuple[tuple[BaseMessage, ...], str | None]:
    """The full context cut to fit `window` with `extra` (the question) and the answer: the
    leading system messages and the most recent messages that fit (never starting on a tool
    result whose call was cut), with a note saying so; as it is when it fits or no window."""
    if window is None:
        return context, None
    budget = int((window - ANSWER_TOKENS) * CEILING_SHARE)
    total = _tokens(model, (*context, *extra), tools)
    if total <= budget:
        return context, None
    head = 0
    while head < len(context) and context[head].type == "system":
        head += 1
    used = _tokens(model, (*context[:head], *extra), tools)
    start = len(context)
    while start > head:
        size = _tokens(model, (context[start - 1],), ())
        if used + size > budget:
            break
        used += size
        start -= 1
    while start < len(context) and isinstance(context[start], ToolMessage):
        start += 1
    kept = (*context[:head], *context[start:])
    note = (
        f"ceiling context capped at the model's window ({window:,} tokens): kept the last "
        f"{len(context) - start} of {len(context) - head} messages (~{total:,} tokens in full)"
    )
    return kept, note


def _calls(
    probe: Probe,
    contexts: _Contexts,
    model: BaseChatModel,
    tools: tuple[dict[str, Any], ...],
    window: int | None = None,
    ceiling: str = "cap",
) -> tuple[Call, Call | None, str | None]:
    """The probe's call on the compacted context, its call on the full one (None when the
    ceiling is skipped; capped to `window` under `ceiling="cap"`) and the ceiling's note."""
    extra: tuple[BaseMessage, ...] = ()
    prompt = NEXT_ACTION_PROMPT
    if probe.kind != "next_action":
        extra, prompt = (HumanMessage(content=probe.question),), probe.question
    answer = Call(model, prompt, (*contexts.compacted(probe.turn), *extra), tools)
    if ceiling == "skip":
        return answer, None, "ceiling skipped (ceiling='skip')"
    full = contexts.full(probe.turn)
    note = None
    if ceiling == "cap":
        full, note = _capped(full, extra, model, tools, window)
    return answer, Call(model, prompt, (*full, *extra), tools), note


def _score(probe: Probe, reply: Reply) -> float:
    """Deterministic score of a fact or next-action probe."""
    if probe.kind == "next_action":
        if not reply.tool_calls or probe.action is None:
            return 0.0
        name, args = reply.tool_calls[0]
        if name != probe.action[0]:
            return 0.0
        return 1.0 if args == probe.action[1] else 0.5
    shown = reply.shown()
    return sum(mentions(shown, f) for f in probe.facts) / len(probe.facts)


CEILINGS = ("cap", "skip", "full")
"""What `run` does with the full-context (ceiling) call: cap it at the model's window, skip
it, or send it whole."""

CEILING_SHARE = 0.9
"""Share of the window (less the answer) a capped ceiling context fills by LangChain's
approximate count, leaving room for tokenizers that count more."""


@dataclass
class _Outcome:
    """What the calls of one probe gave."""

    answer: Reply | Failed | None = None
    ceiling: Reply | Failed | None = None
    note: str | None = None
    grades: tuple[Reply | Failed | None, Reply | Failed | None] = (None, None)


def run(
    replay: Replay,
    planned: Sequence[Probe],
    model: BaseChatModel,
    judge: BaseChatModel | None = None,
    cache: ProbeCache | None = None,
    *,
    max_concurrency: int | None = None,
    rate_limiter: BaseRateLimiter | None = None,
    settings: CallSettings = DEFAULT_CALLS,
    window: int | None = None,
    ceiling: str = "cap",
) -> pl.DataFrame:
    """Ask the `planned` probes of `replay` with `model` (and `judge` for free-text kinds) and
    score them: one row per probe, `PROBE_COLUMNS` then `EXTRA_COLUMNS`.

    Answers come from `cache` when there (default: a fresh in-memory one), else from LangChain's
    `batch_as_completed` with `max_concurrency`, each call retried and timed by `settings`;
    `rate_limiter` (e.g. LangChain's `InMemoryRateLimiter`) is set on copies of both models.
    The ceiling call is capped at the model's window (`window`, else `model_window(model)`),
    skipped or sent whole as `ceiling` says (`CEILINGS`), noted in `ceiling_note`. A call that
    fails leaves its score null and says why in `error`; a judge reply without a grade leaves
    its score null, warned once, the reply kept in `judge_reply`. Without a judge,
    `continuation` and `decision` probes are not asked (`NO_JUDGE`)."""
    if ceiling not in CEILINGS:
        raise ValueError(f"ceiling {ceiling!r}: choose from {', '.join(CEILINGS)}")
    cache = cache if cache is not None else MemoryProbeCache()
    window = model_window(model, window)
    model = with_rate_limiter(model, rate_limiter)
    judge = with_rate_limiter(judge, rate_limiter) if judge is not None else None
    contexts = _Contexts(replay)
    tools = tool_schemas(contexts.trace)
    asked = [p for p in planned if judge is not None or p.kind not in JUDGED]
    outcomes = {id(p): _Outcome() for p in asked}
    calls: list[Call] = []
    slots: list[tuple[int, str]] = []
    for p in asked:
        answer, full, outcomes[id(p)].note = _calls(p, contexts, model, tools, window, ceiling)
        calls.append(answer)
        slots.append((id(p), "answer"))
        if full is not None:
            calls.append(full)
            slots.append((id(p), "ceiling"))
    for (pid, slot), reply in zip(
        slots, ask(calls, cache, max_concurrency=max_concurrency, settings=settings), strict=True
    ):
        setattr(outcomes[pid], slot, reply)
    _judge(asked, outcomes, judge, cache, max_concurrency, settings)
    rows = [_row(p, outcomes.get(id(p)), judge) for p in planned]
    _warn_ungraded(rows)
    return pl.DataFrame(rows, schema={**PROBE_COLUMNS, **EXTRA_COLUMNS}, orient="row")


def _row(probe: Probe, out: _Outcome | None, judge: BaseChatModel | None) -> dict[str, Any]:
    """One probe's row: answers, scores, and what failed."""
    row: dict[str, Any] = {
        "turn": probe.turn,
        "kind": probe.kind,
        "question": probe.question,
        "expected": probe.expected,
        "answer": None,
        "score": None,
        "ceiling_score": None,
        "ceiling_answer": None,
        "fact": probe.facts[0].text if probe.kind == "recall" else None,
        "category": probe.facts[0].category if probe.kind == "recall" else None,
        "judged_by": None,
        "error": None,
        "ceiling_note": None,
        "judge_reply": None,
        "ceiling_judge_reply": None,
    }
    if out is None:
        return row
    errors = []
    row["ceiling_note"] = out.note
    judged = probe.kind in JUDGED
    if judged and judge is not None:
        row["judged_by"] = model_name(judge)
    for slot, grade, column in (
        (out.answer, out.grades[0], "score"),
        (out.ceiling, out.grades[1], "ceiling_score"),
    ):
        prefix = "" if column == "score" else "ceiling_"
        if isinstance(slot, Failed):
            errors.append(f"{prefix or 'answer_'}call: {slot.error}")
            continue
        if slot is None:
            continue
        row[f"{prefix}answer" if prefix else "answer"] = slot.shown()
        if not judged:
            row[column] = _score(probe, slot)
        elif isinstance(grade, Failed):
            errors.append(f"{prefix}judge: {grade.error}")
        elif grade is not None:
            row[f"{prefix}judge_reply"] = grade.text
            row[column] = parse_grade(grade.text)
    row["error"] = "; ".join(errors) or None
    return row


def _warn_ungraded(rows: list[dict[str, Any]]) -> None:
    """One warning for the judge replies that gave no grade (their scores are null)."""
    ungraded = sum(
        row[f"{p}judge_reply"] is not None and row[score] is None
        for row in rows
        for p, score in (("", "score"), ("ceiling_", "ceiling_score"))
    )
    if ungraded:
        warnings.warn(
            f"{ungraded} judge repl{'y' if ungraded == 1 else 'ies'} had no 'GRADE: <0-5>' "
            "line: those scores are null; the raw replies are in the judge_reply and "
            "ceiling_judge_reply columns",
            UserWarning,
            stacklevel=3,
        )


def _judge(
    asked: Sequence[Probe],
    outcomes: dict[int, _Outcome],
    judge: BaseChatModel | None,
    cache: ProbeCache,
    max_concurrency: int | None,
    settings: CallSettings,
) -> None:
    """The judge's replies grading each judged probe's answer and ceiling answer, set on its
    outcome (a graded answer must have come; the reference is the ceiling answer, or a note
    that there is none)."""
    if judge is None:
        return
    calls: list[Call] = []
    slots: list[tuple[int, int]] = []
    for probe in (p for p in asked if p.kind in JUDGED):
        out = outcomes[id(probe)]
        reference = out.ceiling.shown() if isinstance(out.ceiling, Reply) else NO_REFERENCE
        for i, graded in enumerate((out.answer, out.ceiling)):
            if not isinstance(graded, Reply):
                continue
            prompt = judge_prompt(probe.question, reference, graded.shown(), recorded(probe))
            calls.append(Call(judge, prompt, (HumanMessage(content=prompt),)))
            slots.append((id(probe), i))
    replies = ask(calls, cache, max_concurrency=max_concurrency, settings=settings)
    for (pid, i), reply in zip(slots, replies, strict=True):
        grades = list(outcomes[pid].grades)
        grades[i] = reply
        outcomes[pid].grades = (grades[0], grades[1])


NO_REFERENCE = "(none: the full-context answer was not asked or failed)"
"""The judge's reference answer when the ceiling call gave none."""


def limit_calls(
    planned: Sequence[Probe], max_calls: int, judge: bool, ceiling: str = "cap"
) -> list[Probe]:
    """The first probes of `planned` whose calls (answer, ceiling unless skipped, and two
    judge calls for judged kinds) add up to at most `max_calls`."""
    per = 1 if ceiling == "skip" else 2
    out, used = [], 0
    for probe in planned:
        judged = probe.kind in JUDGED
        if judged and not judge:
            out.append(probe)
            continue
        cost = per + (per if judged else 0)
        if used + cost > max_calls:
            break
        out.append(probe)
        used += cost
    return out


DRY_RUN_COLUMNS: dict[str, Any] = {
    "turn": pl.Int64,
    "kind": pl.Utf8,
    "call": pl.Utf8,
    "model": pl.Utf8,
    "input_tokens": pl.Int64,
    "output_tokens": pl.Int64,
    "cached": pl.Boolean,
    "cost_usd": pl.Float64,
    "price": pl.Utf8,
    "full_tokens": pl.Int64,
    "window": pl.Int64,
    "fits": pl.Boolean,
}
"""`dry_run`'s frame: one row per call `run` would make. `input_tokens` is what is sent (a
capped ceiling's size after the cap), `full_tokens` its size uncapped, `window` the model's
window (null: unknown) and `fits` whether input and answer fit it (null: unknown)."""


def dry_run(
    replay: Replay,
    planned: Sequence[Probe],
    model: BaseChatModel,
    judge: BaseChatModel | None = None,
    *,
    cache: ProbeCache | None = None,
    window: int | None = None,
    judge_window: int | None = None,
    ceiling: str = "cap",
) -> pl.DataFrame:
    """The calls `run` would make, priced, without calling a model: per call its turn, kind,
    `call` (`answer` on the compacted context, `ceiling` on the full one, `judge` and
    `judge_ceiling` grading them), model, input tokens (LangChain's approximate count), the
    `ANSWER_TOKENS` assumed output, whether `cache` already holds it (then it costs nothing;
    null for judge calls, whose input depends on the answers), the estimated cost in USD (null
    with `price` "no price" when `ctxlab._cost.pricing` has none for the model: `--price` /
    `set_price` gives one), and whether it fits the model's window (`window`, else
    `model_window`; the judge's `judge_window`)."""
    contexts = _Contexts(replay)
    tools = tool_schemas(contexts.trace)
    window = model_window(model, window)
    judge_window = model_window(judge, judge_window) if judge is not None else None
    rows = []
    for probe in planned:
        if probe.kind in JUDGED and judge is None:
            continue
        answer, full, _ = _calls(probe, contexts, model, tools, window, ceiling)
        for label, call in (("answer", answer), ("ceiling", full)):
            if call is None:
                continue
            hit = cache is not None and cache.get(call.key) is not None
            tokens = _tokens(model, call.messages, call.tools)
            whole = tokens
            if label == "ceiling" and ceiling == "cap":
                extra = call.messages[len(contexts.full(probe.turn)) :][-1:]
                whole = _tokens(model, (*contexts.full(probe.turn), *extra), call.tools)
            rows.append(_priced(probe, label, model, tokens, hit, whole, window))
        if probe.kind in JUDGED and judge is not None:
            filler = "x" * int(ANSWER_TOKENS * tk.CHARS_PER_TOKEN)
            prompt = judge_prompt(probe.question, filler, filler, recorded(probe))
            tokens = _tokens(judge, (HumanMessage(content=prompt),), ())
            rows += [
                _priced(probe, label, judge, tokens, None, tokens, judge_window)
                for label in ("judge", "judge_ceiling")
            ]
    return pl.DataFrame(rows, schema=DRY_RUN_COLUMNS, orient="row")


def _tokens(
    model: BaseChatModel, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]
) -> int:
    anthropic = type(model).__module__.startswith("langchain_anthropic")
    cpt = chars_per_token(model_name(model), "anthropic" if anthropic else None)
    return tk.count_tokens(messages, tools=tools, chars_per_token=cpt)


def _priced(
    probe: Probe,
    label: str,
    model: BaseChatModel,
    tokens: int,
    cached: bool | None,
    whole: int,
    window: int | None,
) -> dict[str, Any]:
    name = model_name(model)
    rates = rates_for(name)
    cost = None
    if cached:
        cost = 0.0
    elif rates is not None:
        at = rates.price.at(tokens)
        cost = (tokens * at.input + ANSWER_TOKENS * at.output) / 1e6
    return {
        "turn": probe.turn,
        "kind": probe.kind,
        "call": label,
        "model": name,
        "input_tokens": tokens,
        "output_tokens": ANSWER_TOKENS,
        "cached": cached,
        "cost_usd": cost,
        "price": rates.price.source if rates is not None else NO_PRICE,
        "full_tokens": whole,
        "window": window,
        "fits": None if window is None else tokens + ANSWER_TOKENS <= window,
    }


NO_PRICE = "no price"
"""What a call of a model without a known price is priced at (never `$0`)."""


def cost_line(calls: pl.DataFrame) -> str:
    """One line summing a `dry_run` frame: calls, cached, input tokens, estimated cost ("no
    price" for models without one, never `$0`)."""
    cached = int(calls["cached"].fill_null(False).sum())
    tokens = int(calls["input_tokens"].sum())
    unpriced = calls.filter(pl.col("cost_usd").is_null())["model"].unique(maintain_order=True)
    priced = calls.filter(pl.col("cost_usd").is_not_null())
    text = f"{calls.height} calls ({cached} cached), {tokens:,} input tokens, "
    if calls.height == 0:
        return f"{calls.height} calls"
    if priced.height == 0:
        return text + f"{NO_PRICE} (pass --price INPUT,OUTPUT in USD per million tokens)"
    text += f"estimated ${float(priced['cost_usd'].sum()):.4f}"
    if unpriced.len():
        text += f" ({NO_PRICE} for {', '.join(unpriced.to_list())}: their calls not counted)"
    return text


def window_table(calls: pl.DataFrame) -> pl.DataFrame:
    """Per probe kind and call, of a `dry_run` frame: calls, how many would exceed the model's
    window uncapped (`over_window_full`) and as sent (`over_window`: after the ceiling cap),
    and the window. Empty when no model's window is known."""
    known = calls.filter(pl.col("window").is_not_null())
    if known.height == 0:
        return pl.DataFrame()
    return (
        known.group_by("kind", "call", "window", maintain_order=True)
        .agg(
            pl.len().alias("calls"),
            (pl.col("full_tokens") + pl.col("output_tokens") > pl.col("window"))
            .sum()
            .alias("over_window_full"),
            (~pl.col("fits")).sum().alias("over_window"),
        )
        .select("kind", "call", "calls", "over_window_full", "over_window", "window")
    )


__all__ = [
    "EXTRA_COLUMNS",
    "JUDGED",
    "NO_JUDGE",
    "PROBE_COLUMNS",
    "PROBE_KINDS",
    "SKIPPED",
    "MemoryProbeCache",
    "Probe",
    "ProbeCache",
    "CEILINGS",
    "NO_PRICE",
    "cost_line",
    "limit_calls",
    "window_table",
    "dry_run",
    "plan",
    "probe_turns",
    "run",
    "tool_schemas",
]
