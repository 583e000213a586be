"""`ctxlab.tune`: the settings of a policy that do best on the user's own traces, as a Pareto
front, with the honesty around it.

Optuna does the searching (its samplers and its ask-and-tell study API; no optimiser here):
each trial is a setting, replayed on every tuning trace and measured
(`ctxlab._tune.objectives`), its objectives the means per trace. The constraint "no call over
the window" (and, with `budget`, "no trace costs more") marks trials infeasible; the front is
Optuna's Pareto front of the feasible trials. Then the honest part:

* **Held-out traces.** The traces are split (seeded) into a tuning set and a held-out set;
  the sampler sees only the first. Every Pareto point and every reference point is then
  replayed on the held-out traces, and reports its objectives on both sets with the spread
  over traces, so a setting that wins only on what it was tuned on shows it.
* **Reference points.** The preset's defaults and the settings the recording fixes
  (`ctxlab._evaluate.check_replay.recorded_settings`) are measured the same way.
* **Stored, resumable, reproducible.** Every trial, parameter and per-trace result goes into
  the store (`ctxlab._store.studies`) as it finishes, one writer, whole rows only. Trials are
  asked and told in fixed batches of `batch` (whatever the number of workers), in trial
  order, so a study's trials depend only on its seed, traces and settings: one worker, two or
  Ray give the same bytes. A rerun of a killed study asks the sampler again from the start:
  it draws the same values (checked against the stored ones), stored results are told
  without replaying, and the study goes on where it stopped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import random
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
import polars as pl

from ctxlab._errors import TraceFormatError, TuneError
from ctxlab._ingest.load import given_traces
from ctxlab._progress import stderr_bar
from ctxlab._replay.applies import check_policy, with_settings
from ctxlab._replay.specs import parse_value
from ctxlab._store.store import Store, trace_key
from ctxlab._store.studies import (
    ResultRow,
    StudyRow,
    TrialRow,
    create_study,
    read_results,
    read_study,
    read_trials,
    save_results,
    start_trials,
)
from ctxlab._store.sweep import policy_named, ray_problem, spell
from ctxlab._trace import Trace
from ctxlab._tune.objectives import (
    MEASURES,
    Measure,
    Spread,
    as_measure,
    check_objectives,
    means,
    over_traces,
)
from ctxlab._tune.runner import Cell, Runner, default_workers
from ctxlab._tune.space import Dimension, describe, parse_space, spelled
from ctxlab.policies import Policy
from ctxlab.summarizers import Extractive, Summarizer

SAMPLERS = ("tpe", "nsga2", "random", "grid")
"""Optuna samplers by name: TPE (multivariate, the default: good with few trials), NSGA-II
(population 20), random, and grid (every combination of choices and stepped ranges)."""

TPE_STARTUP = 10
"""Random trials before TPE models the objectives (Optuna's default)."""

NSGA_POPULATION = 20
"""NSGA-II's generation size: fixed, so a study's trials do not depend on how many it is asked."""

DEFAULT_BATCH = 4
"""Trials asked before their results are told: the workers' work between two tells."""

REFERENCES = {-1: "defaults", -2: "recorded"}
"""Reference points by their (negative) trial numbers."""


@dataclass(frozen=True, slots=True)
class Point:
    """One trial or reference point of a study: its parameters as `--set` texts, Optuna's
    state, and the objectives' means (with their spread over traces) on the tuning and the
    held-out traces (None where not measured: held-out values exist for Pareto and reference
    points)."""

    number: int
    params: dict[str, str]
    state: str
    tune: dict[str, Spread] | None
    holdout: dict[str, Spread] | None
    feasible: bool | None
    label: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label} if self.label else {"number": self.number}
        out.update(
            params=self.params,
            state=self.state,
            tune=means(self.tune),
            holdout=means(self.holdout),
            feasible=self.feasible,
            tune_spread=_spreads(self.tune),
            holdout_spread=_spreads(self.holdout),
        )
        return out


def _spreads(values: Mapping[str, Spread] | None) -> dict[str, Any] | None:
    return None if values is None else {k: s.to_json() for k, s in values.items()}


@dataclass(frozen=True)
class TuneStudy:
    """What `ctxlab.tune` found: every trial, the Pareto front (trial numbers, feasible trials
    only), the reference points, and the per-trace results (`results`, one row per trial, set
    and trace). `to_json()` is the `ctxlab tune --format json` document."""

    name: str
    policy: str
    objectives: tuple[str, ...]
    space: dict[str, str]
    sampler: str
    seed: int
    holdout_fraction: float
    db: str
    trials: list[Point]
    pareto: list[int]
    reference: list[Point]
    splits: dict[str, list[str]]
    results: pl.DataFrame
    base: Policy = field(repr=False)
    dims: dict[str, Dimension] = field(repr=False)
    recorded: dict[str, dict[str, Any]] = field(repr=False, default_factory=dict)

    def front(self) -> list[Point]:
        """The Pareto points, in trial order."""
        wanted = set(self.pareto)
        return [t for t in self.trials if t.number in wanted]

    def beats_defaults(self) -> list[int]:
        """The Pareto trials that beat the preset's defaults on the held-out traces: no worse
        on any objective, better on one (empty without a hold-out set, or when none does)."""
        defaults = next((r for r in self.reference if r.label == "defaults"), None)
        if defaults is None or defaults.holdout is None:
            return []
        base = means(defaults.holdout) or {}
        out = []
        for point in self.front():
            held = means(point.holdout)
            if held is None:
                continue
            if all(held[o] <= base[o] for o in self.objectives) and any(
                held[o] < base[o] for o in self.objectives
            ):
                out.append(point.number)
        return out

    def point(self, which: int | str) -> Point:
        """A trial by number, or a reference point by label (`defaults`, `recorded`)."""
        for p in (*self.trials, *self.reference):
            if p.number == which or (p.label is not None and p.label == which):
                return p
        raise KeyError(f"study {self.name!r} has no trial or reference point {which!r}")

    def policy_for(self, which: int | str, trace: Trace | None = None) -> Policy:
        """The policy of a trial (or reference point): the study's policy with its settings.
        The `recorded` point's settings are the trace's own, so it needs `trace`."""
        point = self.point(which)
        if point.label == "recorded":
            if trace is None:
                raise ValueError("the recorded settings are a trace's own: pass trace=")
            return with_settings(self.base, **self.recorded.get(trace.trace_id, {}))
        values = {
            name: parse_value(name, text, getattr(self.base, name))
            for name, text in point.params.items()
        }
        return with_settings(self.base, **values)

    def to_json(self) -> dict[str, Any]:
        """The study as `ctxlab tune --format json` prints it (issue 37's shape, with the
        spreads, feasibility and the traces of each set beside it)."""
        return {
            "study": self.name,
            "policy": self.policy,
            "objectives": list(self.objectives),
            "trials": [t.to_json() for t in self.trials],
            "pareto": list(self.pareto),
            "reference": [r.to_json() for r in self.reference],
            "beats_defaults": self.beats_defaults(),
            "space": self.space,
            "sampler": self.sampler,
            "seed": self.seed,
            "holdout_fraction": self.holdout_fraction,
            "traces": self.splits,
        }


# ----------------------------------------------------------------------------- set-up


def _load(traces: Any) -> tuple[list[Trace], list[str]]:
    """The traces, each once, ordered by content key (a study does not depend on the order
    or the paths it was given), and their keys."""
    try:
        result = given_traces(traces)
    except TypeError as exc:
        raise TuneError(str(exc)) from None
    except TraceFormatError as exc:
        raise TuneError(str(exc)) from exc
    if result.errors:
        raise TuneError("cannot tune: " + "; ".join(str(e) for e in result.errors))
    if not result:
        raise TuneError("no traces to tune on")
    keyed = {trace_key(t): t for t in result}
    keys = sorted(keyed)
    return [keyed[k] for k in keys], keys


def split(keys: Sequence[str], holdout: float, seed: int) -> dict[str, list[int]]:
    """Which traces (by index) are tuned on and which held out: a seeded shuffle of the
    traces (ordered by key), the first `round(n * holdout)` held out (at least one when
    `holdout` is above 0, never all)."""
    if isinstance(holdout, bool) or not isinstance(holdout, int | float) or not 0 <= holdout < 1:
        raise TuneError(
            f"holdout must be a fraction of the traces, 0 or more and below 1; got {holdout!r}"
        )
    n = len(keys)
    count = 0
    if holdout > 0:
        if n < 2:
            raise TuneError(
                f"a hold-out set needs at least 2 traces, got {n}; pass holdout=0 to tune "
                "without one (and without knowing whether the front holds on other traces)"
            )
        count = min(max(round(n * holdout), 1), n - 1)
    order = list(range(n))
    random.Random(seed).shuffle(order)
    held = set(order[:count])
    return {
        "tune": [i for i in range(n) if i not in held],
        "holdout": [i for i in range(n) if i in held],
    }


class _Grid(optuna.samplers.GridSampler):
    """Optuna's grid sampler without its stop after the last grid point: `Study.stop` works
    only inside `Study.optimize` (it raises under ask and tell), and a study here stops by
    itself, its trials capped at the grid's size."""

    def after_trial(
        self,
        study: optuna.Study,
        trial: optuna.trial.FrozenTrial,
        state: optuna.trial.TrialState,
        values: Sequence[float] | None,
    ) -> None:
        return None


def _sampler(
    name: str | optuna.samplers.BaseSampler, dims: Mapping[str, Dimension], seed: int
) -> tuple[optuna.samplers.BaseSampler, str]:
    """The Optuna sampler and its name as stored."""
    if isinstance(name, optuna.samplers.BaseSampler):
        return name, type(name).__name__
    if name not in SAMPLERS:
        raise TuneError(f"unknown sampler {name!r}; use one of {', '.join(SAMPLERS)}")

    sampler: optuna.samplers.BaseSampler
    if name == "tpe":
        sampler = optuna.samplers.TPESampler(
            seed=seed, multivariate=True, n_startup_trials=TPE_STARTUP
        )
    elif name == "nsga2":
        sampler = optuna.samplers.NSGAIISampler(seed=seed, population_size=NSGA_POPULATION)
    elif name == "random":
        sampler = optuna.samplers.RandomSampler(seed=seed)
    else:
        sampler = _Grid({n: d.grid() for n, d in dims.items()}, seed=seed)
    return sampler, name


def _name(row: StudyRow) -> str:
    """A study's default name: its policy and a hash of everything that fixes its trials
    (not their number: asking for more trials continues the same study)."""
    text = json.dumps(
        [row.policy, row.sampler, row.space, row.objectives, row.settings, row.splits,
         row.seed, row.holdout],
        sort_keys=True,
    )  # fmt: skip
    return f"{row.policy}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def _recorded(traces: Sequence[Trace], policy: Policy) -> dict[str, dict[str, Any]]:
    """Per trace id: the settings of `policy` its recording fixes, as policy values."""
    from ctxlab._evaluate.check_replay import recorded_settings

    out = {}
    for trace in traces:
        texts = recorded_settings(trace, policy.name)
        if texts:
            out[trace.trace_id] = {
                n: parse_value(n, text, getattr(policy, n)) for n, (text, _) in texts.items()
            }
    return out


def _recorded_params(traces: Sequence[Trace], policy: Policy) -> dict[str, str]:
    """The recorded settings as `--set` texts: one text where every trace records the same,
    else `per trace` (some traces record another value, or none and run the default)."""
    from ctxlab._evaluate.check_replay import recorded_settings

    seen: dict[str, list[str]] = {}
    for trace in traces:
        for n, (text, _) in recorded_settings(trace, policy.name).items():
            seen.setdefault(n, []).append(text)
    return {
        n: v[0] if len(set(v)) == 1 and len(v) == len(traces) else "per trace"
        for n, v in sorted(seen.items())
    }


# ----------------------------------------------------------------------------- the study


class _Progress:
    """A study's progress on stderr (trials done of all, the front's size, time left), drawn
    by `rich`, as sweeps draw theirs; silent when off."""

    def __init__(self, total: int, on: bool) -> None:
        self._progress: Any = None
        if not on:
            return
        self._progress, self._task = stderr_bar(
            "tune", "trials, front {task.fields[front]}", total, front=0
        )

    def update(self, done: int, front: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=done, front=front)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


@dataclass
class _Run:
    """The state of one `tune` call: the traces and their sets, what is measured (stored or
    new), and the store it writes."""

    store: Store
    name: str
    traces: list[Trace]
    keys: list[str]
    sets: dict[str, list[int]]
    objectives: tuple[str, ...]
    budget: float | None
    measured: dict[tuple[int, str, str], Measure]
    finished: dict[tuple[int, str], bool]
    flush_seconds: float = 1.0

    def missing(self, number: int, split: str, settings: Any) -> list[Cell]:
        """The cells of one trial on one set whose results are not stored yet."""
        return [
            Cell(number, split, i, tuple(settings(self.traces[i]).items()))
            for i in self.sets[split]
            if (number, split, self.keys[i]) not in self.measured
        ]

    def spreads(self, number: int, split: str) -> dict[str, Spread] | None:
        found = [self.measured.get((number, split, self.keys[i])) for i in self.sets[split]]
        if any(m is None for m in found):
            return None
        return over_traces([m for m in found if m is not None], self.objectives)

    def constraints(self, number: int) -> list[float]:
        """Calls over the window on the tuning traces, and (with a budget) how far the
        costliest trace went over it: feasible when none is above 0."""
        found = [self.measured[(number, "tune", self.keys[i])] for i in self.sets["tune"]]
        out = [float(sum(m.overflows for m in found))]
        if self.budget is not None:
            out.append(max((m.cost or 0.0) for m in found) - self.budget)
        return out

    def run(self, runner: Runner, cells: Sequence[Cell], watch: Iterable[tuple[int, str]]) -> None:
        """Run `cells`, storing results about once a `flush_seconds`, each trial of `watch`
        (number, set) marked finished in the same transaction as its last result."""
        watch = [w for w in watch if not self.finished.get(w)]
        pending: list[ResultRow] = []
        last = time.monotonic()
        for cell, found in runner.run(cells):
            key = self.keys[cell.trace_index]
            self.measured[(cell.number, cell.split, key)] = found
            pending.append(
                ResultRow(
                    cell.number,
                    cell.split,
                    key,
                    found.trace_id,
                    tuple(getattr(found, m) for m in MEASURES),
                    found.lost_by_category,
                    found.seconds,
                )
            )
            if time.monotonic() - last >= self.flush_seconds:
                self._flush(pending, watch)
                pending, last = [], time.monotonic()
        self._flush(pending, watch)

    def _flush(self, rows: list[ResultRow], watch: list[tuple[int, str]]) -> None:
        done: list[tuple[int, str, dict[str, float] | None, bool | None]] = []
        for number, split in watch:
            if self.finished.get((number, split)):
                continue
            spreads = self.spreads(number, split)
            if spreads is None:
                continue
            feasible = all(c <= 0 for c in self.constraints(number)) if split == "tune" else None
            done.append((number, split, means(spreads), feasible))
            self.finished[(number, split)] = True
        if rows or done:
            save_results(self.store, self.name, rows, done)


def _front(study: optuna.Study) -> list[int]:
    """Numbers of Optuna's Pareto trials (among the feasible ones: every trial carries its
    constraints, `Trial.set_constraint`)."""
    return sorted(t.number for t in study.best_trials)


@dataclass(frozen=True)
class Plan:
    """A study checked and laid out before any replay: the policy, the space, the traces and
    their sets, the sampler, and the study's stored settings (`row`). `ctxlab tune --dry-run`
    prints it (`to_json`)."""

    policy: Policy
    dims: dict[str, Dimension]
    traces: list[Trace]
    keys: list[str]
    sets: dict[str, list[int]]
    sampler: optuna.samplers.BaseSampler
    trials: int
    row: StudyRow

    def to_json(self) -> dict[str, Any]:
        """What the study would run: its name and settings, the traces of each set, and the
        replays (each trial on the tuning traces, the reference points on all, at most every
        trial on the held-out ones); the offline summariser calls no model, so nothing is
        billed."""
        tune_n, held_n = len(self.sets["tune"]), len(self.sets["holdout"])
        refs = 2 if _recorded(self.traces, self.policy) else 1
        return {
            "study": self.row.study,
            "policy": self.row.policy,
            "objectives": self.row.objectives,
            "space": self.row.space,
            "sampler": self.row.sampler,
            "trials": self.trials,
            "traces": {s: [self.traces[i].trace_id for i in idx] for s, idx in self.sets.items()},
            "replays": {
                "trials": self.trials * tune_n,
                "reference": refs * (tune_n + held_n),
                "holdout_at_most": self.trials * held_n,
            },
            "model_calls": 0,
            "model_cost_usd": 0.0,
        }


def plan(
    traces: Trace | str | os.PathLike[str] | Iterable[Trace | str | os.PathLike[str]],
    policy: Policy | str,
    space: Mapping[str, Any] | Iterable[str],
    objectives: Sequence[str] = ("cost", "needed_lost"),
    trials: int = 50,
    *,
    holdout: float = 0.3,
    seed: int = 0,
    study: str | None = None,
    sampler: str | optuna.samplers.BaseSampler = "tpe",
    budget: float | None = None,
    batch: int = DEFAULT_BATCH,
    workers: int | None = 1,
    ray: bool = False,
    ray_address: str | None = None,
) -> Plan:
    """Check a `tune` request and lay it out, replaying nothing and writing nothing (the
    arguments are `tune`'s)."""
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise TuneError(f"trials must be a whole number, 1 or more; got {trials!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise TuneError(f"batch must be a whole number, 1 or more; got {batch!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TuneError(f"seed must be a whole number; got {seed!r}")
    if budget is not None and not (isinstance(budget, int | float) and budget > 0):
        raise TuneError(f"budget must be a cost in USD above 0; got {budget!r}")
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise TuneError(f"workers must be a whole number of processes, 1 or more; got {workers!r}")
    if ray and (problem := ray_problem(ray_address)) is not None:
        raise TuneError(problem)
    objectives = check_objectives(objectives)
    if budget is not None and "cost" not in objectives:
        objectives_for_price: tuple[str, ...] = (*objectives, "cost")
    else:
        objectives_for_price = objectives
    if isinstance(policy, str):
        try:
            policy = policy_named(policy)
        except ValueError as exc:
            raise TuneError(str(exc)) from None
    dims = parse_space(space, policy)
    loaded, keys = _load(traces)
    sets = split(keys, holdout, seed)
    if "cost" in objectives_for_price:
        _check_prices(loaded)
    _check_runs(loaded, policy, dims)
    chosen, sampler_name = _sampler(sampler, dims, seed)
    if sampler_name == "grid":
        size = 1
        for dim in dims.values():
            size *= len(dim.grid())
        trials = min(trials, size)
    row = StudyRow(
        study="",
        policy=policy.name,
        sampler=sampler_name,
        space=describe(dims),
        objectives=list(objectives),
        settings={
            "base": json.loads(json.dumps(policy.params(), sort_keys=True, default=str)),
            "budget": budget,
            "batch": batch,
        },
        splits={s: [keys[i] for i in idx] for s, idx in sets.items()},
        seed=seed,
        holdout=float(holdout),
    )
    row = dataclasses.replace(row, study=study or _name(row))
    return Plan(policy, dims, loaded, keys, sets, chosen, trials, row)


def tune(
    traces: Trace | str | os.PathLike[str] | Iterable[Trace | str | os.PathLike[str]],
    policy: Policy | str,
    space: Mapping[str, Any] | Iterable[str],
    objectives: Sequence[str] = ("cost", "needed_lost"),
    trials: int = 50,
    *,
    holdout: float = 0.3,
    seed: int = 0,
    db: Store | str | Path | None = None,
    study: str | None = None,
    sampler: str | optuna.samplers.BaseSampler = "tpe",
    budget: float | None = None,
    batch: int = DEFAULT_BATCH,
    workers: int | None = 1,
    ray: bool = False,
    ray_address: str | None = None,
    summarizer: Summarizer | None = None,
    progress: bool = False,
) -> TuneStudy:
    """Search `policy`'s parameters in `space` for the settings that minimise `objectives`
    on `traces`, and say how far to trust them (see the module's doc and docs/tune.md).

    `traces`: what `ctxlab.load` takes, or `Trace`s. `policy`: a name `ctxlab.policies.get`
    takes, or a policy (its other parameters stay as given). `space`: parameter -> range text
    (`"60000..200000"`, `"fraction:0.3..0.95"`, `"messages:2..20"`), list of choices, or an
    Optuna distribution (`ctxlab._tune.space`). `objectives`: names from
    `ctxlab._tune.objectives.BASE` (`cost`, `needed_lost`, `needed_lost:path`, `peak`,
    `cumulative`, `late_triggers`, `overflows`), all minimised. `trials`: how many settings to
    try (the grid sampler stops at its grid's size). `holdout`: the fraction of traces held
    out of tuning. `budget`: the most USD a setting may cost on any one tuning trace.
    `db`: the store (default `data/ctxlab.duckdb`); `study`: its name there (default: the
    policy and a hash of everything that fixes the trials, so the same call resumes the same
    study). `workers` processes (None: one per core) or Ray (`ray_address`, else a local Ray)
    run the replays; the result does not depend on which.
    """
    found = plan(
        traces,
        policy,
        space,
        objectives,
        trials,
        holdout=holdout,
        seed=seed,
        study=study,
        sampler=sampler,
        budget=budget,
        batch=batch,
        workers=workers,
        ray=ray,
        ray_address=ray_address,
    )
    policy, dims, loaded, keys, sets = (
        found.policy,
        found.dims,
        found.traces,
        found.keys,
        found.sets,
    )
    row, chosen, trials, objectives = (
        found.row,
        found.sampler,
        found.trials,
        tuple(found.row.objectives),
    )
    store = db if isinstance(db, Store) else Store(db) if db is not None else Store()
    stored = read_study(store, row.study)
    if stored is None:
        create_study(store, row)
    elif changed := stored.differences(row):
        raise TuneError(
            f"{store.path}: study {row.study!r} is stored with other {', '.join(changed)}; "
            "give the same settings to resume it, or another study name"
        )
    state = _Run(
        store=store,
        name=row.study,
        traces=loaded,
        keys=keys,
        sets=sets,
        objectives=objectives,
        budget=budget,
        measured={
            (r["number"], r["split"], r["trace_key"]): as_measure(r)
            for r in read_results(store, row.study).to_dicts()
        },
        finished={},
    )
    old = {t["number"]: t for t in read_trials(store, row.study)}
    for number, t in old.items():
        if t["tune"] is not None:
            state.finished[(number, "tune")] = True
        if t["holdout"] is not None:
            state.finished[(number, "holdout")] = True
    summarizer = summarizer or Extractive()
    n_workers = default_workers(workers)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        runner = stack.enter_context(
            Runner(loaded, policy, summarizer, workers=n_workers, ray=ray, ray_address=ray_address)
        )
        bar = _Progress(trials, progress)
        stack.callback(bar.close)
        optuna_study = optuna.create_study(
            directions=["minimize"] * len(objectives), sampler=chosen
        )
        feasible = _search(state, runner, optuna_study, dims, policy, old, trials, batch, bar)
        pareto = _front(optuna_study)
        references = _references(state, runner, loaded, policy, old)
        holdout_cells = [
            c
            for n in pareto
            for c in state.missing(n, "holdout", _fixed(dims, policy, _raw(optuna_study, n)))
        ]
        state.run(runner, holdout_cells, [(n, "holdout") for n in pareto])
    return _result(state, row, optuna_study, dims, policy, pareto, feasible, references, sets)


def _check_runs(traces: Sequence[Trace], policy: Policy, dims: Mapping[str, Dimension]) -> None:
    """Refuse, before any replay, a policy that cannot run on one of the traces: the preset
    as given (the `defaults` reference point) and settings at the ends of the space, checked
    once per kind of trace (model, provider, tools), as a sweep checks its grid
    (`ctxlab._store.sweep.plan_cells`)."""
    ends = {name: dim.ends() for name, dim in dims.items() if dim.ends()}
    # the defaults (a reference point), every range at its low end and at its high end, and
    # each other choice with the rest at their low ends: trials set every parameter at once
    picks = (
        [{n: e[0] for n, e in ends.items()}, {n: e[-1] for n, e in ends.items()}] if ends else []
    )
    picks += [{**picks[0], n: c} for n, e in ends.items() for c in e[1:-1]]
    settings: list[dict[str, Any]] = [{}] + [
        {n: dims[n].value(raw, policy) for n, raw in pick.items()} for pick in picks
    ]
    checked: set[tuple[Any, ...]] = set()
    for trace in traces:
        kind = (trace.model, trace.provider, repr(trace.tools))
        if kind in checked:
            continue
        checked.add(kind)
        for values in settings:
            try:
                check_policy(with_settings(policy, **values), trace, Extractive())
            except (TypeError, ValueError) as exc:
                shown = ", ".join(f"{k}={spell(k, v)}" for k, v in values.items())
                raise TuneError(
                    f"trace {trace.trace_id!r}: {policy.name}"
                    + (f" with {shown}" if shown else " at its defaults (a reference point)")
                    + f" cannot run on it: {exc}; leave the trace out of the study"
                ) from exc


def _check_prices(traces: Sequence[Trace]) -> None:
    """Refuse a cost objective (or budget) on a trace whose model has no price, before work."""
    from ctxlab._cost.pricing import rates_for
    from ctxlab._evaluate.metrics import model_of

    for trace in traces:
        if rates_for(model_of(trace), None) is None:
            raise TuneError(
                f"trace {trace.trace_id!r}: its model {model_of(trace)!r} has no price "
                "(genai-prices does not know it), so cost cannot be an objective or a budget "
                "here; tune on needed_lost, peak or cumulative"
            )


def _raw(study: optuna.Study, number: int) -> dict[str, Any]:
    return dict(study.trials[number].params)


def _fixed(dims: Mapping[str, Dimension], policy: Policy, raw: Mapping[str, Any]) -> Any:
    """The settings of a drawn trial, the same for every trace."""
    values = {name: dim.value(raw[name], policy) for name, dim in dims.items()}
    return lambda _trace: values


def _search(
    state: _Run,
    runner: Runner,
    study: optuna.Study,
    dims: Mapping[str, Dimension],
    policy: Policy,
    old: Mapping[int, Mapping[str, Any]],
    trials: int,
    batch: int,
    bar: _Progress,
) -> dict[int, bool]:
    """Ask and tell `trials` trials in batches of `batch`; returns each trial's feasibility."""
    distributions = {name: dim.distribution for name, dim in dims.items()}
    feasible: dict[int, bool] = {}
    asked = 0
    while asked < trials:
        group = [study.ask(distributions) for _ in range(min(batch, trials - asked))]
        new = []
        for trial in group:
            raw = {name: trial.params[name] for name in dims}
            before = old.get(trial.number)
            if before is None:
                new.append(TrialRow(trial.number, "trial", None, spelled(dims, raw), raw))
            elif json.dumps(before["raw"], sort_keys=True) != json.dumps(raw, sort_keys=True):
                raise TuneError(
                    f"{state.store.path}: study {state.name!r}: trial {trial.number} is stored "
                    f"as {before['raw']} but the sampler now draws {raw} (another Optuna "
                    "version?); start another study"
                )
        start_trials(state.store, state.name, new)
        cells = [
            c
            for trial in group
            for c in state.missing(trial.number, "tune", _fixed(dims, policy, trial.params))
        ]
        state.run(runner, cells, [(t.number, "tune") for t in group])
        for trial in group:
            spreads = state.spreads(trial.number, "tune")
            assert spreads is not None
            constraints = state.constraints(trial.number)
            feasible[trial.number] = all(c <= 0 for c in constraints)
            for name, value in zip(("overflows", "budget"), constraints, strict=False):
                trial.set_constraint(name, value)
            study.tell(trial, [spreads[o].mean for o in state.objectives])
        asked += len(group)
        bar.update(asked, len(_front(study)))
    return feasible


def _references(
    state: _Run,
    runner: Runner,
    traces: Sequence[Trace],
    policy: Policy,
    old: Mapping[int, Mapping[str, Any]],
) -> dict[int, tuple[str, dict[str, str], Any]]:
    """Measure the reference points on both sets: the preset's defaults, and the settings the
    recordings fix (where any does). Returns number -> (label, params, settings by trace)."""
    recorded = _recorded(traces, policy)
    refs: dict[int, tuple[str, dict[str, str], Any]] = {-1: ("defaults", {}, lambda _t: {})}
    if recorded:
        refs[-2] = (
            "recorded",
            _recorded_params(traces, policy),
            lambda t: recorded.get(t.trace_id, {}),
        )
    start_trials(
        state.store,
        state.name,
        [
            TrialRow(n, "reference", label, params, {})
            for n, (label, params, _) in refs.items()
            if n not in old
        ],
    )
    for split in ("tune", "holdout"):
        cells = [
            c for n, (_, _, settings) in refs.items() for c in state.missing(n, split, settings)
        ]
        state.run(runner, cells, [(n, split) for n in refs])
    return refs


def _result(
    state: _Run,
    row: StudyRow,
    study: optuna.Study,
    dims: dict[str, Dimension],
    policy: Policy,
    pareto: list[int],
    feasible: Mapping[int, bool],
    refs: Mapping[int, tuple[str, dict[str, str], Any]],
    sets: Mapping[str, list[int]],
) -> TuneStudy:
    on_front = set(pareto)
    points = [
        Point(
            number=t.number,
            params=spelled(dims, t.params),
            state=t.state.name,
            tune=state.spreads(t.number, "tune"),
            holdout=state.spreads(t.number, "holdout") if t.number in on_front else None,
            feasible=feasible.get(t.number),
        )
        for t in study.trials
    ]
    reference = []
    for number, (label, params, _) in refs.items():
        constraints = state.constraints(number)
        reference.append(
            Point(
                number=number,
                params=params,
                state="COMPLETE",
                tune=state.spreads(number, "tune"),
                holdout=state.spreads(number, "holdout"),
                feasible=all(c <= 0 for c in constraints),
                label=label,
            )
        )
    results = read_results(state.store, state.name)
    return TuneStudy(
        name=row.study,
        policy=row.policy,
        objectives=tuple(row.objectives),
        space=row.space,
        sampler=row.sampler,
        seed=row.seed,
        holdout_fraction=row.holdout,
        db=str(state.store.path),
        trials=points,
        pareto=pareto,
        reference=reference,
        splits={s: [state.traces[i].trace_id for i in idx] for s, idx in sets.items()},
        results=results,
        base=policy,
        dims=dims,
        recorded=_recorded(state.traces, policy),
    )


__all__ = ["Point", "TuneStudy", "tune"]
