"""What a compaction policy lost on a trace: `evaluate(replay)` gives an `Evaluation`.

Tier 1 (always, offline, deterministic): the trace's facts (`ctxlab.facts.extract`) followed
through the replay (`ctxlab.survival.follow`), and survival by category. Tier 2 (only when a
chat model is given): probe questions asked of the replayed and of the uncompacted context
(`ctxlab.probes`). Without a model the probes frame is empty, with the probe columns, so code
reading it works the same either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ctxlab.facts import Fact
    from ctxlab.probes import ProbeCache
    from ctxlab.replay import Replay
    from ctxlab.trace import Trace

PROBE_SCHEMA = {
    "turn": pl.Int64,
    "kind": pl.String,
    "question": pl.String,
    "expected": pl.String,
    "answer": pl.String,
    "score": pl.Float64,
    "ceiling_score": pl.Float64,
}
"""The probes frame's leading columns (`ctxlab.probes.PROBE_COLUMNS`), and the whole frame when
no probe ran."""

TIER2_HINT = "probes skipped: pass model= (any LangChain chat model) to run Tier 2"
"""The one line saying how to enable probes, for callers that print one."""


@dataclass
class Evaluation:
    """One replay evaluated: its facts and where they went (`facts`, `ctxlab.survival.follow`'s
    columns), survival by category (`survival`, `ctxlab.survival.survival_table`) and probe
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
    """`ctxlab.facts.extract(trace)`, kept for the last few traces asked about: a sweep
    evaluates one trace under many policies, and extraction depends on the trace alone (`Trace`
    takes no weak references, so the last four are held)."""
    from ctxlab.facts import extract

    for seen, facts in _EXTRACTED:
        if seen is trace:
            return facts
    facts = extract(trace)
    _EXTRACTED.insert(0, (trace, facts))
    del _EXTRACTED[4:]
    return facts


def empty_probes() -> pl.DataFrame:
    """The probes frame when no probe ran."""
    return pl.DataFrame(schema=PROBE_SCHEMA)


def evaluate(
    replay: Replay,
    model: BaseChatModel | None = None,
    judge: BaseChatModel | None = None,
    probes: str | Sequence[str] = "auto",
    *,
    turns: Sequence[int] | None = None,
    cache: ProbeCache | None = None,
) -> Evaluation:
    """Evaluate `replay` (which needs its trace): Tier 1 always; with `model`, Tier 2 probes of
    the kinds `probes` names ("auto": every kind the model and judge allow) at `turns` (default:
    each compaction event), scored against the same probes on the uncompacted context; `judge`
    scores free-text probes; `cache` keeps model answers between runs."""
    from ctxlab.survival import follow, survival_table

    if replay.trace is None:
        raise ValueError("evaluate needs the replay's trace (replay.trace)")
    facts = follow(replay, trace_facts(replay.trace))
    probe_frame = empty_probes()
    if model is not None:
        from ctxlab import probes as tier2

        planned = tier2.plan(replay, facts, probes, turns)
        probe_frame = tier2.run(replay, planned, model, judge, cache)
    return Evaluation(
        trace_id=replay.trace_id,
        policy=replay.policy,
        params=replay.params,
        facts=facts,
        survival=survival_table(facts),
        probes=probe_frame,
        replay=replay,
    )


__all__ = ["PROBE_SCHEMA", "TIER2_HINT", "Evaluation", "empty_probes", "evaluate", "trace_facts"]
