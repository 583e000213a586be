"""What a compaction policy lost on a trace: `evaluate(replay)` gives an `Evaluation`.

Tier 1 (always, offline, deterministic): the trace's facts (`ctxlab._evaluate.facts.extract`)
followed
through the replay (`ctxlab._evaluate.survival.follow`), and survival by category. Tier 2 (only
when a
chat model is given): probe questions asked of the replayed and of the uncompacted context
(`ctxlab._evaluate.probes`). Without a model the probes frame is empty, with the probe columns, so
code
reading it works the same either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.rate_limiters import BaseRateLimiter

    from ctxlab._evaluate.facts import Fact
    from ctxlab._evaluate.probes import ProbeCache
    from ctxlab._replay.replay import Replay
    from ctxlab._trace import Trace


@dataclass
class Evaluation:
    """One replay evaluated: its facts and where they went (`facts`,
    `ctxlab._evaluate.survival.follow`'s
    columns), survival by category (`survival`, `ctxlab._evaluate.survival.survival_table`) and
    probe
    results (`probes`: turn, kind, question, expected, answer, score, ceiling_score; empty
    without a model)."""

    trace_id: str
    policy: str
    params: dict[str, Any]
    facts: pl.DataFrame
    survival: pl.DataFrame
    probes: pl.DataFrame
    replay: Replay | None = field(default=None, repr=False)

    @property
    def needed_lost(self) -> int:
        """The headline: facts the recorded agent used again after eviction that were lost
        by then (summed over categories)."""
        if self.survival.height == 0:
            return 0
        return int(self.survival["needed_lost"].sum())

    def to_json(self) -> dict[str, Any]:
        """`{"trace_id", "policy", "facts": [...], "survival": {category: {"total", "context",
        "summary", "file", "lost", "needed", "needed_lost"}}, "probes": [...]}`."""
        survival = {
            row["category"]: {k: v for k, v in row.items() if k != "category"}
            for row in self.survival.iter_rows(named=True)
        }
        return {
            "trace_id": self.trace_id,
            "policy": self.policy,
            "facts": self.facts.to_dicts(),
            "survival": survival,
            "probes": self.probes.to_dicts(),
        }


_EXTRACTED: list[tuple[Trace, list[Fact]]] = []


def trace_facts(trace: Trace) -> list[Fact]:
    """`ctxlab._evaluate.facts.extract(trace)`, kept for the last few traces asked about: a sweep
    evaluates one trace under many policies, and extraction depends on the trace alone (`Trace`
    takes no weak references, so the last four are held)."""
    from ctxlab._evaluate.facts import extract

    for seen, facts in _EXTRACTED:
        if seen is trace:
            return facts
    facts = extract(trace)
    _EXTRACTED.insert(0, (trace, facts))
    del _EXTRACTED[4:]
    return facts


def empty_probes() -> pl.DataFrame:
    """The probes frame when no probe ran: the columns a run gives, no rows, so code reading
    it works the same with or without a model."""
    from ctxlab._evaluate.probes import EXTRA_COLUMNS, PROBE_COLUMNS

    return pl.DataFrame(schema={**PROBE_COLUMNS, **EXTRA_COLUMNS})


def evaluate(
    replay: Replay,
    model: BaseChatModel | None = None,
    judge: BaseChatModel | None = None,
    probes: str | Sequence[str] = "auto",
    *,
    turns: Sequence[int] | None = None,
    cache: ProbeCache | None = None,
    max_concurrency: int | None = None,
    rate_limiter: BaseRateLimiter | None = None,
) -> Evaluation:
    """Evaluate `replay` (which needs its trace): Tier 1 always; with `model`, Tier 2 probes of
    the kinds `probes` names ("auto": every kind the model and judge allow) at `turns` (default:
    each compaction event), scored against the same probes on the uncompacted context; `judge`
    scores free-text probes; `cache` keeps model answers between runs; `max_concurrency` and
    `rate_limiter` (LangChain's, e.g. `InMemoryRateLimiter`) pace the calls. Without a model,
    `ctxlab._evaluate.probes.SKIPPED` is the one line to tell the user."""
    from ctxlab._evaluate.survival import follow, survival_table

    if replay.trace is None:
        raise ValueError("evaluate needs the replay's trace (replay.trace)")
    facts = follow(replay, trace_facts(replay.trace))
    probe_frame = empty_probes()
    if model is not None:
        from ctxlab._evaluate import probes as tier2

        planned = tier2.plan(replay, facts, probes, turns)
        probe_frame = tier2.run(
            replay,
            planned,
            model,
            judge,
            cache,
            max_concurrency=max_concurrency,
            rate_limiter=rate_limiter,
        )
    return Evaluation(
        trace_id=replay.trace_id,
        policy=replay.policy,
        params=replay.params,
        facts=facts,
        survival=survival_table(facts),
        probes=probe_frame,
        replay=replay,
    )


__all__ = ["Evaluation", "empty_probes", "evaluate", "trace_facts"]
