"""`ctxlab.sweep`: every trace x every grid cell, in parallel, streamed into the store.

A researcher's question is rarely one trace ("over my 400 traces, which trigger and keep
minimise cumulative tokens without dropping the goal?"). Cells are independent and replays are
pure, so they run in worker processes (or Ray tasks) that send back finished frames; only the
parent writes, in bulk transactions, so the DuckDB file has one writer and a killed sweep
leaves whole replays only. A cell whose replay key is already stored is skipped: rerunning a
sweep resumes it.

Everything that can be wrong with the request (an unknown parameter, a value of the wrong
type, a missing trace file) is checked before the first replay starts.
"""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ctxlab.errors import TraceFormatError
from ctxlab.load import load_all
from ctxlab.policies import Policy
from ctxlab.policies.catalog import PRESETS
from ctxlab.replay import replay
from ctxlab.specs import SIZE_PARAMS, format_size, parse_value
from ctxlab.store import (
    FILE_MODES,
    SavedReplay,
    Store,
    replay_key,
    summarizer_name,
    trace_key,
)
from ctxlab.summarizers import Extractive, Summarizer
from ctxlab.trace import Trace

POLICIES: dict[str, Callable[..., Any]] = PRESETS
BACKENDS = ("local", "ray")


class SweepError(ValueError):
    """The sweep request is wrong; raised before any work starts."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One replay to run: a trace (by index) under one grid point."""

    trace_index: int
    values: tuple[tuple[str, Any], ...]
    key: str
    trace_hash: str
    files: str = "offloaded"
    sweep_id: str = ""
    """Identifies one `sweep` call: contents are sent once per sweep and worker process."""
    """Which file contents to store (`ctxlab.store.SavedReplay.of`)."""


def policy_named(name: str, **params: Any) -> Policy:
    """A policy preset by name, with parameters."""
    try:
        cls = POLICIES[name]
    except KeyError:
        raise SweepError(f"unknown policy {name!r}; known: {', '.join(sorted(POLICIES))}") from None
    return cls(**params)


def parse_grid(specs: Iterable[str]) -> dict[str, list[Any]]:
    """`--grid name=v1,v2` options as a grid; values use the `--set` spellings."""
    grid: dict[str, list[Any]] = {}
    for spec in specs:
        name, sep, raw = spec.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name or not raw.strip():
            raise SweepError(f"--grid expects name=v1,v2,...; got {spec!r}")
        try:
            grid[name] = [parse_value(name, v) for v in raw.split(",")]
        except ValueError as exc:
            raise SweepError(f"--grid {name}: {exc}") from exc
    return grid


def _grid_points(policy: Policy, grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    if not dataclasses.is_dataclass(policy):
        raise SweepError(f"policy {policy!r} is not a parameter dataclass; cannot sweep it")
    known = {f.name for f in dataclasses.fields(policy)}
    for name, values in grid.items():
        if name not in known:
            raise SweepError(
                f"unknown parameter {name!r} for policy {policy.name!r}; known: "
                + ", ".join(sorted(known))
            )
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
            raise SweepError(f"grid {name!r} needs a non-empty list of values, got {values!r}")
    names = list(grid)
    points = []
    for combo in itertools.product(*(grid[n] for n in names)):
        points.append(
            {
                n: parse_value(n, v) if isinstance(v, str) else v
                for n, v in zip(names, combo, strict=True)
            }
        )
    return points


def _load(traces: Iterable[Trace | str | Path]) -> list[Trace]:
    loaded: list[Trace] = []
    paths: list[str | Path] = []
    for item in traces:
        (loaded.append if isinstance(item, Trace) else paths.append)(item)
    if paths:
        result = load_all(paths)
        if result.errors:
            raise SweepError("cannot sweep: " + "; ".join(str(e) for e in result.errors))
        loaded.extend(result)
    if not loaded:
        raise SweepError("no traces to sweep")
    return loaded


def plan(
    traces: Sequence[Trace],
    policy: Policy,
    grid: Mapping[str, Sequence[Any]],
    summarizer: Summarizer,
    keys: Sequence[str] | None = None,
) -> tuple[list[Cell], list[Policy]]:
    """All cells, each checked to build a valid policy on its trace (errors before any work).

    A grid point is checked once per kind of trace (model, provider, tool schemas), not once
    per trace: what can fail (a fraction without a model profile, a bad value) depends only on
    those, and starting a run measures every message, which would make planning as slow as
    the sweep itself.
    """
    points = _grid_points(policy, grid)
    policies = []
    for point in points:
        try:
            policies.append(dataclasses.replace(policy, **point))
        except (TypeError, ValueError) as exc:
            raise SweepError(f"grid point {point}: {exc}") from exc
    name = summarizer_name(summarizer)
    keys = list(keys) if keys is not None else [trace_key(t) for t in traces]
    checked: set[tuple[Any, ...]] = set()
    cells = []
    for index, (trace, tkey) in enumerate(zip(traces, keys, strict=True)):
        kind = (trace.model, trace.provider, repr(trace.tools))
        for i, (point, cell_policy) in enumerate(zip(points, policies, strict=True)):
            if (kind, i) not in checked:
                try:
                    _check(cell_policy, trace, summarizer)
                except (TypeError, ValueError) as exc:
                    raise SweepError(f"trace {trace.trace_id}, grid point {point}: {exc}") from exc
                checked.add((kind, i))
            key = replay_key(tkey, cell_policy.name, cell_policy.params(), name)
            cells.append(Cell(index, tuple(point.items()), key, tkey))
    return cells, policies


def _check(policy: Policy, trace: Trace, summarizer: Summarizer) -> None:
    """Raise what the policy would raise on this trace, as cheaply as the policy allows."""
    resolve = getattr(policy, "resolve", None)
    if callable(resolve):
        resolve(trace)
    else:
        policy.start(trace, summarizer)


# ----------------------------------------------------------------------------- workers

_STATE: dict[str, Any] = {}


def _init_worker(traces: list[Trace], policy: Policy, summarizer: Summarizer) -> None:
    _STATE.update(traces=traces, policy=policy, summarizer=summarizer)


def _run_cell(cell: Cell) -> SavedReplay:
    return run_cell(_STATE["traces"], _STATE["policy"], _STATE["summarizer"], cell)


_SENT: dict[str, set[str]] = {}
"""Per sweep, hashes of file contents this process already returned: the parent stores each
content once, and every cell of a trace offloads the same results, so repeats travel without
their text. Keyed by sweep so a later sweep into another store sends everything again."""


def run_cell(
    traces: Sequence[Trace], policy: Policy, summarizer: Summarizer, cell: Cell
) -> SavedReplay:
    """Replay one cell and package it for the store (runs in a worker)."""
    trace = traces[cell.trace_index]
    result = replay(trace, dataclasses.replace(policy, **dict(cell.values)), summarizer=summarizer)
    saved = SavedReplay.of(result, cell.trace_hash, summarizer_name(summarizer), files=cell.files)
    if saved.replay_key != cell.key:
        raise RuntimeError(f"replay key changed between plan and run for {trace.trace_id}")
    if cell.sweep_id not in _SENT:
        _SENT.clear()
        _SENT[cell.sweep_id] = set()
    sent = _SENT[cell.sweep_id]
    repeat = saved.files["sha256"].is_in(list(sent))
    sent.update(saved.files.filter(pl.col("content").is_not_null())["sha256"].to_list())
    if repeat.any():
        content = pl.when(repeat).then(None).otherwise(pl.col("content")).alias("content")
        saved = dataclasses.replace(saved, files=saved.files.with_columns(content))
    return saved


# Imported once in the fork server, not once per worker: the model-profile packages alone take
# over a second to import, which every worker would otherwise pay on its first cell.
PRELOAD = [
    "ctxlab.sweep",
    "langchain_anthropic.chat_models",
    "langchain_openai.chat_models.base",
    "langchain_google_genai.data._profiles",
]


def _worker_context() -> multiprocessing.context.BaseContext:
    """Fork-server workers with ctxlab preloaded: a worker starts in milliseconds, not seconds.

    Plain `fork` is unsafe (polars' thread pool does not survive it); `spawn` re-imports
    LangChain, deepagents and polars in every worker, seconds each on a small machine.
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        return ctx
    return multiprocessing.get_context("spawn")


def _local(
    cells: list[Cell], traces: list[Trace], policy: Policy, summarizer: Summarizer, workers: int
) -> Iterator[SavedReplay]:
    if workers <= 1:
        for cell in cells:
            yield run_cell(traces, policy, summarizer, cell)
        return
    ctx = _worker_context()
    with ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=_init_worker, initargs=(traces, policy, summarizer)
    ) as pool:
        pending: set[Future[SavedReplay]] = set()
        queue = iter(cells)
        for cell in itertools.islice(queue, workers * 4):
            pending.add(pool.submit(_run_cell, cell))
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(pool.submit(_run_cell, nxt))


def _ray(
    cells: list[Cell],
    traces: list[Trace],
    policy: Policy,
    summarizer: Summarizer,
    address: str | None,
    workers: int | None,
) -> Iterator[SavedReplay]:
    try:
        import ray
    except ImportError as exc:
        raise SweepError("backend='ray' needs Ray: pip install 'ctxlab[ray]'") from exc
    started = not ray.is_initialized()
    if started:
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            kwargs["address"] = address
        elif workers:
            kwargs["num_cpus"] = workers
        ray.init(**kwargs)
    try:
        remote = ray.remote(run_cell)
        traces_ref = ray.put(traces)
        pending = [remote.remote(traces_ref, policy, summarizer, cell) for cell in cells]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        if started:
            ray.shutdown()


# ----------------------------------------------------------------------------- sweep


def sweep(
    traces: Iterable[Trace | str | Path],
    policy: Policy | str,
    grid: Mapping[str, Sequence[Any]] | None = None,
    *,
    store: Store | str | Path | None = None,
    summarizer: Summarizer | None = None,
    backend: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
    files: str = "offloaded",
    batch_seconds: float = 1.0,
) -> pl.DataFrame:
    """Replay every trace under every grid point of `policy`, storing each replay.

    `traces` are `Trace`s or paths; `grid` maps policy parameters to value lists (strings use
    the CLI spellings, e.g. `"fraction:0.5"`). Results stream into `store` (default
    `data/ctxlab.duckdb`) in one transaction per batch; cells already there are skipped.
    `backend="ray"` runs cells as Ray tasks (`ray_address` for a cluster, else a local Ray).
    `files="offloaded"` stores offloaded contents but only the path, size and hash of
    summarised-history files (megabytes per cell, re-rendered by replaying the cell); "all"
    keeps them too, "none" keeps no content.
    Returns the per-replay summary rows of every cell, with one column per grid parameter.
    """
    if backend not in BACKENDS:
        raise SweepError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if isinstance(policy, str):
        policy = policy_named(policy)
    grid = dict(grid or {})
    summarizer = summarizer or Extractive()
    try:
        loaded = _load(traces)
    except TraceFormatError as exc:
        raise SweepError(str(exc)) from exc
    if files not in FILE_MODES:
        raise SweepError(f"files must be one of {', '.join(FILE_MODES)}, got {files!r}")
    keys = [trace_key(t) for t in loaded]
    cells, _ = plan(loaded, policy, grid, summarizer, keys)
    sweep_id = uuid.uuid4().hex
    cells = [dataclasses.replace(c, files=files, sweep_id=sweep_id) for c in cells]
    if not isinstance(store, Store):
        store = Store(store) if store is not None else Store()
    store.add(loaded, keys=keys)
    done = store.has_replays(c.key for c in cells)
    todo = [c for c in cells if c.key not in done]
    workers = workers or max(1, min(os.cpu_count() or 1, len(todo)))
    if backend == "ray":
        results = _ray(todo, loaded, policy, summarizer, ray_address, workers)
    else:
        results = _local(todo, loaded, policy, summarizer, workers)
    _drain(results, store, len(todo), len(cells) - len(todo), progress, batch_seconds)
    return _summary(store, cells, list(grid))


def _drain(
    results: Iterator[SavedReplay],
    store: Store,
    total: int,
    skipped: int,
    progress: bool,
    batch_seconds: float,
) -> None:
    bar = _progress(total, skipped) if progress else None
    batch: list[SavedReplay] = []
    last = time.monotonic()
    for saved in results:
        batch.append(saved)
        if time.monotonic() - last >= batch_seconds:
            store.save_many(batch)
            if bar is not None:
                bar.update(len(batch))
            batch, last = [], time.monotonic()
    store.save_many(batch)
    if bar is not None:
        bar.update(len(batch))
        bar.close()


def _progress(total: int, skipped: int) -> Any:
    from tqdm.auto import tqdm

    desc = f"sweep ({skipped} cells already stored)" if skipped else "sweep"
    return tqdm(total=total, desc=desc, unit="cell", file=sys.stderr)


def spell(name: str, value: Any) -> str:
    """A grid value as the CLI spells it (`fraction:0.85`), for result columns."""
    if name in SIZE_PARAMS or name == "trigger":
        return format_size(value)
    return str(value)


def _summary(store: Store, cells: list[Cell], names: list[str]) -> pl.DataFrame:
    rows = store.query(
        "SELECT * FROM replay_summary WHERE replay_key IN (SELECT unnest(?))",
        [[c.key for c in cells]],
    )
    grid_cols = pl.DataFrame(
        {
            "replay_key": [c.key for c in cells],
            **{n: [spell(n, dict(c.values)[n]) for c in cells] for n in names},
        },
        schema={"replay_key": pl.Utf8, **{n: pl.Utf8 for n in names}},
    )
    order = pl.DataFrame({"replay_key": [c.key for c in cells], "_order": list(range(len(cells)))})
    return (
        grid_cols.join(rows, on="replay_key", how="left")
        .join(order, on="replay_key")
        .sort("_order")
        .drop("_order")
    )
