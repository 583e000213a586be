"""What a tuning study minimises: measures ctxlab already takes of one replay, per trace.

Every objective is a number per trace, lower is better, and a study's value of it over a set
of traces is the mean per trace (sets of different sizes, tuning and held out, compare):

* `cost`: USD the trace's calls would cost under the setting, prompt cache simulated (reads
  and writes priced, `ctxlab._evaluate.metrics.cache_frame`, input at the billed tokens where
  the bill is known), plus the summariser's calls (`metrics.summarizer_tokens`) at the same
  model's prices: a setting that compacts more pays for the summaries it writes;
* `needed_lost`: facts the recorded agent used again after the setting evicted them and lost
  by then (Tier 1 of `ctxlab.evaluate`); `needed_lost:CATEGORY` counts one category
  (`ctxlab._evaluate.facts.CATEGORIES`: `path`, `error`, ...);
* `peak`, `cumulative`: the largest request and the input summed over the calls, in tokens;
* `late_triggers`: calls whose policy count stayed under its trigger while the bill passed it;
* `overflows`: calls over the window (the billed tokens where known, else the policy's count,
  against the window the setting ran with, else the model's): a provider would refuse them.
  Every study has the constraint "no overflow on any tuning trace".
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxlab._errors import TuneError
from ctxlab._evaluate.facts import CATEGORIES

if TYPE_CHECKING:
    from ctxlab._trace import Trace
    from ctxlab.policies import Policy
    from ctxlab.summarizers import Summarizer

BASE = {
    "cost": "USD per trace, prompt cache simulated, billed input, summariser calls included",
    "needed_lost": "facts the agent needed again after eviction, lost by then",
    "peak": "largest request, tokens",
    "cumulative": "input summed over the calls, tokens",
    "late_triggers": "calls whose bill passed the trigger the policy's count did not",
    "overflows": "calls over the window",
}
"""The objectives, each with what it counts (the CLI's help and docs/tune.md list them)."""

MEASURES = ("cost", "needed_lost", "peak", "cumulative", "late_triggers", "overflows")
"""The per-trace numbers stored for every replay (`tune_results` columns)."""


def check_objectives(objectives: Sequence[str]) -> tuple[str, ...]:
    """The objectives as given, each a known name (`BASE`, or `needed_lost:CATEGORY`), none
    twice, at least one."""
    if isinstance(objectives, str):
        objectives = (objectives,)
    out = tuple(objectives)
    if not out:
        raise TuneError("no objective: give at least one of " + ", ".join(BASE))
    for name in out:
        base, _, category = name.partition(":")
        if base not in BASE or (category and (base != "needed_lost" or category not in CATEGORIES)):
            raise TuneError(
                f"unknown objective {name!r}; known: {', '.join(BASE)}, or needed_lost:CATEGORY "
                f"with CATEGORY one of {', '.join(CATEGORIES)}"
            )
    if len(set(out)) < len(out):
        raise TuneError(f"an objective given twice: {', '.join(out)}")
    return out


@dataclass(frozen=True, slots=True)
class Measure:
    """What one replay of one trace measured (`MEASURES`), the needed-but-lost facts by
    category, and the seconds its replay and evaluation took."""

    trace_id: str
    cost: float | None
    needed_lost: int
    peak: int
    cumulative: int
    late_triggers: int
    overflows: int
    lost_by_category: dict[str, int]
    seconds: float

    def get(self, objective: str) -> float | None:
        """This trace's value of `objective` (None: cost of a model without a price)."""
        base, _, category = objective.partition(":")
        if category:
            return float(self.lost_by_category.get(category, 0))
        value = getattr(self, base)
        return None if value is None else float(value)


def measure(trace: Trace, policy: Policy, summarizer: Summarizer) -> Measure:
    """Replay `trace` under `policy` and measure it (runs in a worker)."""
    from ctxlab._cost.billing import cost_inputs, levels
    from ctxlab._cost.pricing import rates_for
    from ctxlab._cost.profiles import profile
    from ctxlab._evaluate.evaluation import evaluate
    from ctxlab._evaluate.metrics import cache_frame, model_of, summarizer_tokens
    from ctxlab._replay.replay import replay

    start = time.perf_counter()
    result = replay(trace, policy, summarizer=summarizer)
    facts = evaluate(result).facts
    lost = facts.filter(facts["status_when_needed"] == "lost")["category"].to_list()
    by_category = {c: lost.count(c) for c in CATEGORIES if c in lost}
    frame = result.turns
    counted = frame["context_tokens"].to_list()
    model = model_of(trace)
    rates = rates_for(model, None)
    cost = None
    if rates is not None:
        cache = cache_frame(result, trace)
        summ_in, summ_out = summarizer_tokens(result)
        cost = float(cache["cost_usd_with_cache"].sum()) if cache.height else 0.0
        cost += (summ_in * rates.price.input + summ_out * rates.price.output) / 1e6
    window = levels(result, trace).get("window") or profile(model, trace.provider).max_input_tokens
    sent, _ = cost_inputs(result)
    late = [flag for flag in result.billing.late_trigger if flag]
    return Measure(
        trace_id=trace.trace_id,
        cost=cost,
        needed_lost=len(lost),
        peak=max(counted, default=0),
        cumulative=sum(counted),
        late_triggers=len(late),
        overflows=sum(1 for tokens in sent if window and tokens > window),
        lost_by_category=by_category,
        seconds=time.perf_counter() - start,
    )


@dataclass(frozen=True, slots=True)
class Spread:
    """An objective over a set of traces: the mean per trace (the study's value), the
    standard deviation (0 for one trace), and the least and largest trace."""

    mean: float
    sd: float
    min: float
    max: float

    def to_json(self) -> dict[str, float]:
        return {"mean": self.mean, "sd": self.sd, "min": self.min, "max": self.max}


def spread(values: Sequence[float]) -> Spread:
    """The `Spread` of one objective's per-trace values (in trace order: the sums, and so the
    bytes of a result, do not depend on which worker finished first)."""
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return Spread(mean, sd, min(values), max(values))


def over_traces(measures: Sequence[Measure], objectives: Sequence[str]) -> dict[str, Spread] | None:
    """Each objective's `Spread` over `measures` (None for an empty set). A cost without a
    price is refused: the study would rank settings on nothing."""
    if not measures:
        return None
    out: dict[str, Spread] = {}
    for objective in objectives:
        values = [m.get(objective) for m in measures]
        if any(v is None for v in values):
            missing = next(m.trace_id for m in measures if m.get(objective) is None)
            raise TuneError(
                f"objective {objective!r}: trace {missing!r} has no price for its model "
                "(genai-prices does not know it); tune it on needed_lost, peak or cumulative"
            )
        out[objective] = spread([float(v) for v in values if v is not None])
    return out


def means(spreads: Mapping[str, Spread] | None) -> dict[str, float] | None:
    """The study's value of each objective (the mean per trace), as the JSON's `tune` and
    `holdout` objects hold them."""
    return None if spreads is None else {k: s.mean for k, s in spreads.items()}


def as_measure(row: Mapping[str, Any]) -> Measure:
    """A stored `tune_results` row back as a `Measure`."""
    import json

    return Measure(
        trace_id=row["trace_id"],
        cost=row["cost"],
        needed_lost=row["needed_lost"],
        peak=row["peak"],
        cumulative=row["cumulative"],
        late_triggers=row["late_triggers"],
        overflows=row["overflows"],
        lost_by_category=json.loads(row["lost_by_category"] or "{}"),
        seconds=row["seconds"],
    )
