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
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache as memoize
from typing import TYPE_CHECKING, Any

import polars as pl
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxlab._cost import tokens as tk
from ctxlab._cost.pricing import rates_for
from ctxlab._evaluate import probe_questions as q
from ctxlab._evaluate.facts import Fact, mentions, mentions_normalised, normalise
from ctxlab._evaluate.probe_calls import (
    Call,
    MemoryProbeCache,
    ProbeCache,
    ProbeCallError,
    Reply,
    ask,
    model_name,
    with_rate_limiter,
)
from ctxlab._evaluate.probe_judge import judge_prompt, parse_grade, recorded
from ctxlab._messages import chars_per_token, message_text
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
}
"""Columns `run` adds after `PROBE_COLUMNS`: the full-context answer, the probed fact and its
category (recall), and the judge model's name (judged kinds)."""

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


def _calls(
    probe: Probe, contexts: _Contexts, model: BaseChatModel, tools: tuple[dict[str, Any], ...]
) -> tuple[Call, Call]:
    """The probe's call on the compacted context, then on the full one."""
    pair = []
    for context in (contexts.compacted(probe.turn), contexts.full(probe.turn)):
        if probe.kind == "next_action":
            pair.append(Call(model, NEXT_ACTION_PROMPT, context, tools))
        else:
            question = HumanMessage(content=probe.question)
            pair.append(Call(model, probe.question, (*context, question), tools))
    return pair[0], pair[1]


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


def run(
    replay: Replay,
    planned: Sequence[Probe],
    model: BaseChatModel,
    judge: BaseChatModel | None = None,
    cache: ProbeCache | None = None,
    *,
    max_concurrency: int | None = None,
    rate_limiter: BaseRateLimiter | None = None,
) -> pl.DataFrame:
    """Ask the `planned` probes of `replay` with `model` (and `judge` for free-text kinds) and
    score them: one row per probe, `PROBE_COLUMNS` then `EXTRA_COLUMNS`.

    Answers come from `cache` when there (default: a fresh in-memory one), else from LangChain's
    `batch_as_completed` with `max_concurrency`; `rate_limiter` (e.g. LangChain's
    `InMemoryRateLimiter`) is set on copies of both models. Without a judge, `continuation` and
    `decision` probes are not asked (`NO_JUDGE`)."""
    cache = cache if cache is not None else MemoryProbeCache()
    model = with_rate_limiter(model, rate_limiter)
    judge = with_rate_limiter(judge, rate_limiter) if judge is not None else None
    contexts = _Contexts(replay)
    tools = tool_schemas(contexts.trace)
    asked = [p for p in planned if judge is not None or p.kind not in JUDGED]
    calls = [c for p in asked for c in _calls(p, contexts, model, tools)]
    replies = ask(calls, cache, max_concurrency=max_concurrency)
    answers = {id(p): (replies[2 * i], replies[2 * i + 1]) for i, p in enumerate(asked)}
    grades = _judge(asked, answers, judge, cache, max_concurrency)
    rows = []
    for probe in planned:
        row = {
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
        }
        if id(probe) in answers:
            answer, ceiling = answers[id(probe)]
            row["answer"], row["ceiling_answer"] = answer.shown(), ceiling.shown()
            if probe.kind in JUDGED:
                row["score"], row["ceiling_score"] = grades[id(probe)]
                row["judged_by"] = model_name(judge) if judge is not None else None
            else:
                row["score"], row["ceiling_score"] = _score(probe, answer), _score(probe, ceiling)
        rows.append(row)
    return pl.DataFrame(rows, schema={**PROBE_COLUMNS, **EXTRA_COLUMNS}, orient="row")


def _judge(
    asked: Sequence[Probe],
    answers: dict[int, tuple[Reply, Reply]],
    judge: BaseChatModel | None,
    cache: ProbeCache,
    max_concurrency: int | None,
) -> dict[int, tuple[float | None, float | None]]:
    """The judge's scores of each judged probe's (answer, ceiling answer)."""
    judged = [p for p in asked if p.kind in JUDGED]
    if judge is None or not judged:
        return {}
    calls = []
    for probe in judged:
        answer, ceiling = answers[id(probe)]
        for graded in (answer, ceiling):
            prompt = judge_prompt(probe.question, ceiling.shown(), graded.shown(), recorded(probe))
            calls.append(Call(judge, prompt, (HumanMessage(content=prompt),)))
    replies = ask(calls, cache, max_concurrency=max_concurrency)
    return {
        id(p): (parse_grade(replies[2 * i].text), parse_grade(replies[2 * i + 1].text))
        for i, p in enumerate(judged)
    }


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
}
"""`dry_run`'s frame: one row per call `run` would make."""


def dry_run(
    replay: Replay,
    planned: Sequence[Probe],
    model: BaseChatModel,
    judge: BaseChatModel | None = None,
    *,
    cache: ProbeCache | None = None,
) -> pl.DataFrame:
    """The calls `run` would make, priced, without calling a model: per call its turn, kind,
    `call` (`answer` on the compacted context, `ceiling` on the full one, `judge` and
    `judge_ceiling` grading them), model, input tokens (LangChain's approximate count), the
    `ANSWER_TOKENS` assumed output, whether `cache` already holds it (then it costs nothing;
    null for judge calls, whose input depends on the answers) and the estimated cost in USD,
    null with `price` "unknown" when `ctxlab._cost.pricing` has no price for the model."""
    contexts = _Contexts(replay)
    tools = tool_schemas(contexts.trace)
    rows = []
    for probe in planned:
        if probe.kind in JUDGED and judge is None:
            continue
        for label, call in zip(
            ("answer", "ceiling"), _calls(probe, contexts, model, tools), strict=True
        ):
            hit = cache is not None and cache.get(call.key) is not None
            tokens = _tokens(model, call.messages, call.tools)
            rows.append(_priced(probe, label, model, tokens, hit))
        if probe.kind in JUDGED and judge is not None:
            filler = "x" * int(ANSWER_TOKENS * tk.CHARS_PER_TOKEN)
            prompt = judge_prompt(probe.question, filler, filler, recorded(probe))
            tokens = _tokens(judge, (HumanMessage(content=prompt),), ())
            rows += [
                _priced(probe, label, judge, tokens, None) for label in ("judge", "judge_ceiling")
            ]
    return pl.DataFrame(rows, schema=DRY_RUN_COLUMNS, orient="row")


def _tokens(
    model: BaseChatModel, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]
) -> int:
    anthropic = type(model).__module__.startswith("langchain_anthropic")
    cpt = chars_per_token(model_name(model), "anthropic" if anthropic else None)
    return tk.count_tokens(messages, tools=tools, chars_per_token=cpt)


def _priced(
    probe: Probe, label: str, model: BaseChatModel, tokens: int, cached: bool | None
) -> dict[str, Any]:
    name = model_name(model)
    rates = rates_for(name)
    cost = None
    if cached:
        cost = 0.0
    elif rates is not None:
        price = rates.price.at(tokens)
        cost = (tokens * price.input + ANSWER_TOKENS * price.output) / 1e6
    return {
        "turn": probe.turn,
        "kind": probe.kind,
        "call": label,
        "model": name,
        "input_tokens": tokens,
        "output_tokens": ANSWER_TOKENS,
        "cached": cached,
        "cost_usd": cost,
        "price": rates.price.source if rates is not None else "unknown",
    }


def cost_line(calls: pl.DataFrame) -> str:
    """One line summing a `dry_run` frame: calls, cached, input tokens, estimated cost."""
    cached = int(calls["cached"].fill_null(False).sum())
    tokens = int(calls["input_tokens"].sum())
    unpriced = calls.filter(pl.col("cost_usd").is_null())["model"].unique(maintain_order=True)
    cost = float(calls["cost_usd"].fill_null(0.0).sum())
    text = f"{calls.height} calls ({cached} cached), {tokens:,} input tokens, estimated ${cost:.4f}"
    if unpriced.len():
        text += f" (no price for {', '.join(unpriced.to_list())}: their calls not counted)"
    return text


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
    "ProbeCallError",
    "cost_line",
    "dry_run",
    "plan",
    "probe_turns",
    "run",
    "tool_schemas",
]
