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

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from ctxlab._evaluate.probe_calls import MemoryProbeCache, ProbeCache
from ctxlab._replay.model_calls import DEFAULT_CALLS, CallSettings
from ctxlab._weak_memo import WeakMemo

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.rate_limiters import BaseRateLimiter

    from ctxlab._evaluate.facts import Fact
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
    def failed(self) -> int:
        """Probes with a failed model call (their `error` says which; scores null)."""
        if "error" not in self.probes.columns:
            return 0
        return int(self.probes["error"].is_not_null().sum())

    def failed_line(self) -> str:
        """One line on the failed probes: how many, the first error, and what a rerun does."""
        first = self.probes.filter(pl.col("error").is_not_null())["error"][0]
        return (
            f"{self.trace_id}: {self.failed} of {self.probes.height} probes had a failed model "
            f"call (first: {first}); their scores are null, the other answers are cached, so "
            "running again asks only the failed calls"
        )

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
            "failed": self.failed,
        }


_EXTRACTED: WeakMemo[list[Fact]] = WeakMemo()
"""Per live trace: its extracted facts (a sweep evaluates one trace under many policies, and
extraction depends on the trace alone)."""


def trace_facts(trace: Trace) -> list[Fact]:
    """`ctxlab._evaluate.facts.extract(trace)`, remembered per live trace."""
    from ctxlab._evaluate.facts import extract

    return _EXTRACTED.setdefault(trace, lambda: extract(trace))


def empty_probes() -> pl.DataFrame:
    """The probes frame when no probe ran: the columns a run gives, no rows, so code reading
    it works the same with or without a model."""
    from ctxlab._evaluate.probes import EXTRA_COLUMNS, PROBE_COLUMNS

    return pl.DataFrame(schema={**PROBE_COLUMNS, **EXTRA_COLUMNS})


MEMORY_CACHE = MemoryProbeCache()
"""Where `evaluate` keeps probe answers when given no cache: for the life of this process, so a
rerun in the same session asks only the calls that failed (said once, `IN_MEMORY`)."""

IN_MEMORY = (
    "probe answers are cached in memory only (this Python process): pass cache=ctxlab.Store(path) "
    "(or a store's path) to keep them on disk, so a rerun in another session asks nothing twice"
)


def probe_cache(cache: Any) -> ProbeCache:
    """The `ProbeCache` `cache` names: a cache as it is, a `ctxlab.Store` or a store's path (its
    `probe_cache()`), or None: `MEMORY_CACHE`, said once (`IN_MEMORY`)."""
    if cache is None:
        if not _SAID:
            _SAID.append(True)
            warnings.warn(IN_MEMORY, UserWarning, stacklevel=3)
        return MEMORY_CACHE
    if isinstance(cache, str | os.PathLike):
        from ctxlab._store.store import Store

        cache = Store(os.fspath(cache))
    if hasattr(cache, "probe_cache"):
        return cache.probe_cache()
    return cache


_SAID: list[bool] = []


def evaluate(
    replay: Replay,
    model: BaseChatModel | None = None,
    judge: BaseChatModel | None = None,
    probes: str | Sequence[str] = "auto",
    *,
    turns: Sequence[int] | None = None,
    cache: Any = None,
    max_concurrency: int | None = None,
    rate_limiter: BaseRateLimiter | None = None,
    retries: int = DEFAULT_CALLS.retries,
    backoff: float = DEFAULT_CALLS.backoff,
    timeout: float | None = DEFAULT_CALLS.timeout,
    window: int | None = None,
    ceiling: str = "cap",
    max_calls: int | None = None,
) -> Evaluation:
    """Evaluate `replay` (which needs its trace): Tier 1 always; with `model`, Tier 2 probes of
    the kinds `probes` names ("auto": every kind the model and judge allow) at `turns` (default:
    each compaction event), scored against the same probes on the uncompacted context; `judge`
    scores free-text probes. Without a model, `ctxlab._evaluate.probes.SKIPPED` is the one line
    to tell the user.

    Model calls never lose what they had: a call that fails after `retries` (waiting
    `backoff`, doubling, between tries; `timeout` seconds each) leaves its row's score null with
    the reason in `error`, and every answer that came is in `cache` (a `ProbeCache`, a
    `ctxlab.Store` or its path; default: in memory for this process, said once), so a rerun
    asks only the failed calls. The ceiling context is capped at the model's window (`window`,
    else its profile's) keeping the most recent messages, or skipped, or sent whole
    (`ceiling`: "cap", "skip", "full"); `max_calls` keeps the first probes whose calls fit
    that many. `max_concurrency` and `rate_limiter` (LangChain's `InMemoryRateLimiter`) pace
    the calls."""
    from ctxlab._evaluate.survival import follow, survival_table

    if replay.trace is None:
        raise ValueError("evaluate needs the replay's trace (replay.trace)")
    facts = follow(replay, trace_facts(replay.trace))
    probe_frame = empty_probes()
    if model is not None:
        from ctxlab._evaluate import probes as tier2

        planned = tier2.plan(replay, facts, probes, turns)
        if max_calls is not None:
            kept = tier2.limit_calls(planned, max_calls, judge is not None, ceiling)
            if len(kept) < len(planned):
                warnings.warn(
                    f"{replay.trace_id}: max_calls={max_calls} asks {len(kept)} of "
                    f"{len(planned)} probes (the first ones, in turn order)",
                    UserWarning,
                    stacklevel=2,
                )
            planned = kept
        answers = probe_cache(cache)
        try:
            probe_frame = tier2.run(
                replay,
                planned,
                model,
                judge,
                answers,
                max_concurrency=max_concurrency,
                rate_limiter=rate_limiter,
                settings=CallSettings(retries, backoff, timeout),
                window=window,
                ceiling=ceiling,
            )
        finally:  # the answers that came are written even if something else failed
            flush = getattr(answers, "flush", None)
            if callable(flush):
                flush()
    evaluation = Evaluation(
        trace_id=replay.trace_id,
        policy=replay.policy,
        params=replay.params,
        facts=facts,
        survival=survival_table(facts),
        probes=probe_frame,
        replay=replay,
    )
    if evaluation.failed:
        warnings.warn(evaluation.failed_line(), UserWarning, stacklevel=2)
    return evaluation


__all__ = ["IN_MEMORY", "Evaluation", "empty_probes", "evaluate", "probe_cache", "trace_facts"]
