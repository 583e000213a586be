"""`ctxlab.sweep`: every trace x every grid cell, in parallel, streamed into the store.

A researcher's question is rarely one trace ("over my 400 traces, which trigger and keep
minimise cumulative tokens without dropping the goal?"). Cells are independent and replays are
pure, so they run in worker processes (or Ray tasks); only the parent writes, in bulk
transactions, so the DuckDB file has one writer and a killed sweep leaves whole replays only.
A cell whose replay key is already stored is skipped: rerunning a sweep resumes it.

Local workers are `concurrent.futures` executors of one fork-server process each (the fork
server boots while the parent plans, with ctxlab preloaded): the parent decides which worker
replays which cell, so each trace is pinned to one worker (sent once, replayed cold once), and
keeps two cells in each worker's hands so none waits for the parent. Workers write finished
rows as Parquet files that DuckDB reads in one statement per batch (the parent never touches
a row). An LLM summariser's new cache entries travel back with the results and are stored by
the parent too.

Everything that can be wrong with the request (an unknown parameter, a value of the wrong
type, a missing trace file) is checked before the first replay starts. What can still fail is
a model: a cell whose summariser's model call fails (an outage, an input it cannot take) is a
row with its `error`, the other cells complete, and the summaries it did get are stored, so a
rerun asks only the failed cells (from where they failed: what was answered comes from the
cache). With an offline summariser a failing replay is a bug and stops the sweep.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import itertools
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

from ctxlab._errors import SweepError, TraceFormatError
from ctxlab._evaluate.evaluation import evaluate
from ctxlab._ingest.load import Source, given_traces
from ctxlab._progress import stderr_bar
from ctxlab._replay.applies import check_policy, with_settings
from ctxlab._replay.policies.catalog import get
from ctxlab._replay.replay import replay
from ctxlab._replay.specs import SIZE_PARAMS, format_size, parse_value
from ctxlab._store.defaults import BACKENDS
from ctxlab._store.store import (
    FILE_MODES,
    ReplayPart,
    SavedReplay,
    Store,
    SummaryRow,
    replay_key,
    summarizer_name,
    trace_key,
)
from ctxlab._store.sweep_folders import sweep_folder
from ctxlab._trace import Trace
from ctxlab.policies import Policy
from ctxlab.summarizers import CachedExtractive, Extractive, Fixed, Summarizer

OFFLINE = (Extractive, CachedExtractive, Fixed)
"""Summarisers that call no model: a replay with them is pure, so its failure is a bug that
stops the sweep instead of a failed cell."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One replay to run: a trace (by index) under one grid point."""

    trace_index: int
    values: tuple[tuple[str, Any], ...]
    key: str
    trace_hash: str
    files: str = "offloaded"
    """Which file contents to store (`ctxlab._store.store.SavedReplay.of`)."""
    sweep_id: str = ""
    """Identifies one `sweep` call: contents are sent once per sweep and worker process."""


def policy_named(name: str, **params: Any) -> Policy:
    """The policy `name` (any name `ctxlab.policies.get` takes, `a+b` included) with
    parameters; a bad name or parameter is a `SweepError`."""
    try:
        return get(name, **params)
    except (TypeError, ValueError) as exc:
        raise SweepError(str(exc)) from exc


def parse_grid(specs: Iterable[str]) -> dict[str, list[str]]:
    """`--grid name=v1,v2` options as a grid of texts in the `--set` spellings, which `sweep`
    reads against the policy's parameters."""
    grid: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, raw = spec.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name or not raw.strip():
            raise SweepError(f"--grid expects name=v1,v2,...; got {spec!r}")
        grid[name] = raw.split(",")
    return grid


def grid_points(policy: Policy, grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, each value read against the policy's
    parameter and checked alone, so that a bad one is named (`grid window=-5: ...`, the
    policy's error as the cause); the CLI calls it to check `--grid` before anything runs."""
    if not dataclasses.is_dataclass(policy):
        raise SweepError(f"policy {policy!r} is not a parameter dataclass; cannot sweep it")
    known = {f.name for f in dataclasses.fields(policy)}
    for name, values in grid.items():
        if name not in known:
            raise SweepError(
                f"grid: unknown parameter {name!r} for policy {policy.name!r}; known: "
                + ", ".join(sorted(known))
            )
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
            raise SweepError(f"grid {name!r} needs a non-empty list of values, got {values!r}")
    names = list(grid)
    values = [[_grid_value(policy, n, v) for v in grid[n]] for n in names]
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]


def _grid_value(policy: Policy, name: str, given: Any) -> Any:
    """One grid value, read from its text (`--set` spellings) and checked on the policy."""
    try:
        value = parse_value(name, given, getattr(policy, name)) if isinstance(given, str) else given
        with_settings(policy, **{name: value})
    except (TypeError, ValueError) as exc:
        raise SweepError(f"grid {name}={given}: {exc}") from exc
    return value


def ray_problem(address: str | None) -> str | None:
    """Why `backend="ray"` cannot run here (Ray missing, or its client for a `ray://`
    address), else None. Checked before any work, not when the first cell is due."""
    if importlib.util.find_spec("ray") is None:
        return "backend 'ray' needs Ray: pip install 'ctxlab[ray]'"
    if address and address.startswith("ray://") and importlib.util.find_spec("grpc") is None:
        return "a ray:// address needs Ray's client: pip install 'ray[client]'"
    return None


def _load(traces: Source) -> list[Trace]:
    """The traces to sweep (`given_traces`), refusing any that failed to load: a sweep runs on
    every trace it was given or on none."""
    try:
        result = given_traces(traces)
    except TypeError as exc:
        raise SweepError(str(exc)) from None
    if result.errors:
        raise SweepError("cannot sweep: " + "; ".join(str(e) for e in result.errors))
    if not result:
        raise SweepError("no traces to sweep")
    return list(result)


def plan_cells(
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
    points = grid_points(policy, grid)
    policies = []
    for point in points:
        try:
            policies.append(with_settings(policy, **point))
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
                    check_policy(cell_policy, trace, summarizer)
                except (TypeError, ValueError) as exc:
                    raise SweepError(f"trace {trace.trace_id}, grid point {point}: {exc}") from exc
                checked.add((kind, i))
            key = replay_key(tkey, cell_policy.name, cell_policy.params(), name)
            cells.append(Cell(index, tuple(point.items()), key, tkey))
    return cells, policies


# ----------------------------------------------------------------------------- workers

_SENT: dict[str, set[str]] = {}
"""Per sweep, hashes of file contents this process already returned: the parent stores each
content once, and every cell of a trace offloads the same results, so repeats travel without
their text. Keyed by sweep so a later sweep into another store sends everything again."""


@dataclass(frozen=True, slots=True)
class FailedCell:
    """A cell whose replay failed in its summariser's model (after its retries): the error in
    one line, and the summaries the model did write before it (stored, so a rerun reuses
    them)."""

    key: str
    trace_id: str
    error: str
    summaries: tuple[SummaryRow, ...] = ()


def _one_line(error: BaseException, trace_id: str) -> str:
    """The error as one line that names the trace (a `SummaryError` already names its turn)."""
    text = " ".join(str(error).split()) or type(error).__name__
    if not text.startswith("trace "):
        text = f"trace {trace_id!r}: {type(error).__name__}: {text}"
    return text


def run_cell(
    trace: Trace, policy: Policy, summarizer: Summarizer, cell: Cell
) -> SavedReplay | FailedCell:
    """Replay one cell of `trace`, evaluate it offline (Tier 1 of `ctxlab.evaluate`: the
    `facts` frame, whose needed-but-lost count is the sweep's `needed_lost`) and package both
    for the store (runs in a worker).

    Summariser cache entries written meanwhile (`LLM.take_pending`) travel with the result,
    so that the one writer stores them: workers never write the store themselves. A replay
    that fails with a model-backed summariser is a `FailedCell` (see the module's doc)."""
    take = getattr(summarizer, "take_pending", None)
    try:
        result = replay(trace, with_settings(policy, **dict(cell.values)), summarizer=summarizer)
    except Exception as exc:
        if isinstance(summarizer, OFFLINE):
            raise
        rows = tuple(take()) if take is not None else ()
        return FailedCell(cell.key, trace.trace_id, _one_line(exc, trace.trace_id), rows)
    facts = evaluate(result).facts  # extraction is cached per trace: cells of one trace share it
    if cell.sweep_id not in _SENT:
        _SENT.clear()
        _SENT[cell.sweep_id] = set()
    sent = _SENT[cell.sweep_id]
    saved = SavedReplay.of(
        result,
        cell.trace_hash,
        summarizer_name(summarizer),
        files=cell.files,
        omit=sent,
        facts=facts,
    )
    if saved.replay_key != cell.key:
        raise RuntimeError(f"replay key changed between plan and run for {trace.trace_id}")
    sent.update(saved.files.filter(pl.col("content").is_not_null())["sha256"].to_list())
    if take is not None:
        saved = dataclasses.replace(saved, summaries=tuple(take()))
    return saved


def for_workers(summarizer: Summarizer, store: Store) -> Summarizer:
    """The summariser as sweep workers get it. One with a cache to share (`LLM`) goes as a
    copy holding the cached entries in memory (from its own store, else the sweep's), since
    only the parent writes the store: new entries come back with the results and are stored
    in the sweep's store. Others go as they are."""
    detach = getattr(summarizer, "for_workers", None)
    return detach(store) if detach is not None else summarizer


# Imported once in the fork server, not once per worker: LangChain, deepagents and polars
# take seconds to import on a small machine. Model profiles need no preloading: they are a
# small JSON file shipped with ctxlab.
PRELOAD = ["ctxlab._store.sweep"]


def _worker_context() -> multiprocessing.context.BaseContext:
    """Fork-server workers with ctxlab preloaded: a worker starts in milliseconds, not seconds.

    Plain `fork` is unsafe (polars' thread pool does not survive it); `spawn` re-imports
    LangChain, deepagents and polars in every worker, seconds each on a small machine. The
    server is started here, in the background: `sweep` calls this before hashing and planning
    so that the server's imports overlap them. A server already running (an earlier sweep in
    this process) is reused as it is. The server listens on a Unix socket in the temporary
    folder; where it cannot (a socket path may not exceed 107 bytes, so a long `TMPDIR` is
    enough), workers are spawned instead: slower to start, same results.
    """
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    try:
        with _server_imports_this_ctxlab():
            multiprocessing.forkserver.ensure_running()
    except OSError:
        return multiprocessing.get_context("spawn")
    return ctx


@contextlib.contextmanager
def _server_imports_this_ctxlab() -> Iterator[None]:
    """While the fork server starts: its path is this process's path, so its workers import
    the ctxlab (and the modules of pickled classes) this process imports, not a `ctxlab/`
    folder in the working directory.

    The server runs `python -c ...`, which puts the working directory first on its path, and
    Python 3.11's server ignores the parent's path it is handed (3.12 applies it); a folder
    named `ctxlab` there (the parent of a clone, an empty folder) was then imported as a
    namespace package ahead of an editable install, and every worker failed. `PYTHONSAFEPATH`
    keeps the working directory off the server's path and `PYTHONPATH` gives it this
    process's path (its working directory as a folder only where this process has it too),
    after the folder holding this ctxlab."""
    import ctxlab

    root = str(Path(ctxlab.__file__).resolve().parent.parent)
    saved = {name: os.environ.get(name) for name in ("PYTHONSAFEPATH", "PYTHONPATH")}
    path = [os.getcwd() if entry == "" else entry for entry in sys.path]
    path = [root, *(entry for entry in path if os.path.exists(entry))]
    os.environ["PYTHONSAFEPATH"] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(path))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_WORKER: dict[str, Any] = {}
"""A worker process's sweep: its policy, summariser and folder (set once when it starts) and
the one trace it holds, by index."""


def _start_worker(policy: Policy, summarizer: Summarizer, folder: str) -> None:
    """Executor initializer: what every cell of this sweep shares arrives once per worker.

    Also ties the worker's life to the sweep's: a parent killed with SIGKILL cannot stop its
    workers, and one in the middle of a long cell would run on. multiprocessing gives every
    child its parent's sentinel (ready when the parent is gone), which a thread waits on."""
    _WORKER.clear()
    _WORKER.update(policy=policy, summarizer=summarizer, folder=folder)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), daemon=True).start()


def _exit_with(sentinel: int) -> None:
    """Exit this worker at once when the sweep process is gone (`sentinel` ready)."""
    multiprocessing.connection.wait([sentinel])
    os._exit(1)


def _replay_part(cell: Cell, trace: Trace | None) -> ReplayPart | FailedCell:
    """A worker's task: one cell, its rows written as Parquet files for the parent to store.

    `trace` comes with the first cell of each trace the worker is given, None after that."""
    if trace is not None:
        _WORKER["trace"] = (cell.trace_index, trace)
    index, held = _WORKER["trace"]
    if index != cell.trace_index:
        raise RuntimeError(f"worker holds trace {index}, was given a cell of {cell.trace_index}")
    saved = run_cell(held, _WORKER["policy"], _WORKER["summarizer"], cell)
    if isinstance(saved, FailedCell):
        return saved
    return saved.write_parts(Path(_WORKER["folder"]) / cell.key)


class _Lane:
    """One worker process (a one-process executor), the trace it holds and its cells in hand.

    One executor per worker, not one pool for all, so that the parent decides which worker
    replays which cell: each worker gets the cells of one trace until that trace has none
    left, so a trace is sent, loaded and replayed cold about once per sweep."""

    def __init__(self, ctx: Any, policy: Policy, summarizer: Summarizer, folder: Path) -> None:
        self.executor = ProcessPoolExecutor(
            1, mp_context=ctx, initializer=_start_worker, initargs=(policy, summarizer, str(folder))
        )
        self.pid = self.executor.submit(os.getpid)
        self.held: int | None = None
        self.running: set[Future[ReplayPart | FailedCell]] = set()

    def died(self) -> RuntimeError:
        """The error for a worker that exited mid-sweep (killed, out of memory, `os._exit`)."""
        pid = self.pid.result() if self.pid.done() and not self.pid.exception() else "?"
        return RuntimeError(f"sweep worker {pid} died while replaying a cell")


class _Scheduler:
    """Hands cells to lanes: a lane's next cell is of the trace it holds while that has cells,
    else of a trace no lane holds, else of the trace with most cells left (the end of a
    sweep). Each lane has at most `DEPTH` cells in hand (one running, one waiting), so that no
    worker waits for the parent and none hoards the last cells."""

    DEPTH = 2

    def __init__(self, cells: Sequence[Cell], traces: Sequence[Trace]) -> None:
        self.traces = traces
        self.queues: dict[int, deque[Cell]] = {}
        for cell in cells:
            self.queues.setdefault(cell.trace_index, deque()).append(cell)

    def _trace_for(self, lane: _Lane, lanes: Sequence[_Lane]) -> int | None:
        if lane.held is not None and self.queues.get(lane.held):
            return lane.held
        others = {other.held for other in lanes if other is not lane}
        free = [t for t, q in self.queues.items() if q and t not in others]
        if free:
            return free[0]
        rest = [t for t, q in self.queues.items() if q]
        return max(rest, key=lambda t: len(self.queues[t])) if rest else None

    def feed(
        self, lanes: Sequence[_Lane], pending: dict[Future[ReplayPart | FailedCell], _Lane]
    ) -> None:
        """Top up every lane to `DEPTH` cells in hand."""
        for lane in lanes:
            while len(lane.running) < self.DEPTH:
                index = self._trace_for(lane, lanes)
                if index is None:
                    return
                cell = self.queues[index].popleft()
                trace = self.traces[index] if index != lane.held else None
                lane.held = index
                future = lane.executor.submit(_replay_part, cell, trace)
                lane.running.add(future)
                pending[future] = lane


def _local(
    cells: list[Cell],
    traces: list[Trace],
    policy: Policy,
    summarizer: Summarizer,
    workers: int,
    folder: Path,
) -> Iterator[ReplayPart | FailedCell]:
    """Finished cells from `workers` worker processes as they come; a worker's exception is
    raised here. When the sweep stops (finished, failed, interrupted, or the consumer closed
    the generator), cells not started are cancelled and running ones finish first."""
    ctx = _worker_context()
    lanes = [_Lane(ctx, policy, summarizer, folder) for _ in range(workers)]
    scheduler = _Scheduler(cells, traces)
    pending: dict[Future[ReplayPart | FailedCell], _Lane] = {}
    try:
        scheduler.feed(lanes, pending)
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                lane = pending.pop(future)
                lane.running.discard(future)
                try:
                    part = future.result()
                except BrokenProcessPool:
                    raise lane.died() from None
                yield part
            scheduler.feed(lanes, pending)
    finally:
        for lane in lanes:
            lane.executor.shutdown(wait=True, cancel_futures=True)


def _serial(
    cells: list[Cell], traces: list[Trace], policy: Policy, summarizer: Summarizer
) -> Iterator[SavedReplay | FailedCell]:
    for cell in cells:
        yield run_cell(traces[cell.trace_index], policy, summarizer, cell)


def _ray(
    cells: list[Cell],
    traces: list[Trace],
    policy: Policy,
    summarizer: Summarizer,
    address: str | None,
    workers: int | None,
) -> Iterator[SavedReplay | FailedCell]:
    import ray

    with ray_started(address, workers):
        remote = ray.remote(run_cell)
        # One object per trace: a task deserialises the trace it replays, not all of them.
        refs = [ray.put(t) for t in traces]
        pending = [
            remote.remote(refs[cell.trace_index], policy, summarizer, cell) for cell in cells
        ]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)


@contextlib.contextmanager
def ray_started(
    address: str | None, workers: int | None, error: type[Exception] = SweepError
) -> Iterator[None]:
    """Ray for the block: the cluster at `address`, else a local Ray of `workers` CPUs (one
    already initialised in this process is used as it is, and left running). A Ray that
    cannot start or be reached is an `error` saying where."""
    import ray

    started = not ray.is_initialized()
    if started:
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            kwargs["address"] = address
        elif workers:
            kwargs["num_cpus"] = workers
        try:
            ray.init(**kwargs)
        except Exception as exc:  # Ray raises ConnectionError, ValueError, RuntimeError ...
            where = f"at {address}" if address else "locally"
            raise error(f"cannot start or reach Ray {where}: {exc}") from exc
    try:
        yield
    finally:
        if started:
            ray.shutdown()


# ----------------------------------------------------------------------------- sweep


def sweep(
    traces: Trace | str | os.PathLike[str] | Iterable[Trace | str | os.PathLike[str]],
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

    `traces` is what `ctxlab.load` takes (a file or directory path, as `str` or `Path`), a
    `Trace`, or a list of paths and traces; `grid` maps policy parameters to value lists
    (strings use the CLI spellings, e.g. `"fraction:0.5"`). Results stream into `store` (default
    `data/ctxlab.duckdb`) in one transaction per batch; cells already there are skipped.
    `backend="ray"` runs cells as Ray tasks (`ray_address` for a cluster, else a local Ray).
    `files="offloaded"` stores offloaded contents but only the path, size and hash of
    summarised-history files (megabytes per cell, re-rendered by replaying the cell); "all"
    keeps them too, "none" keeps no content. An `LLM` summariser's cache is read from its
    own store (else this one) and its new entries are stored in this one.
    Every cell is also evaluated offline (Tier 1 of `ctxlab.evaluate`): its facts are stored
    (`Store.facts`) and `needed_lost` is a column of the result beside tokens and events.
    Returns the per-replay summary rows of every cell, with one column per grid parameter, and
    `error`: null, or, for a cell whose summariser's model failed (any summariser but the
    offline ones), why in one line; such a cell has only its trace id, grid values and error,
    is not stored as a replay, and is replayed again by the next sweep into the same store.
    """
    if backend not in BACKENDS:
        raise SweepError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise SweepError(f"workers must be a whole number of processes, 1 or more; got {workers!r}")
    if backend == "ray" and (problem := ray_problem(ray_address)) is not None:
        raise SweepError(problem)
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
    if backend == "local" and (workers or os.cpu_count() or 1) > 1:
        _worker_context()  # boots the fork server while this process hashes and plans
    keys = [trace_key(t) for t in loaded]
    cells, _ = plan_cells(loaded, policy, grid, summarizer, keys)
    sweep_id = uuid.uuid4().hex
    cells = [dataclasses.replace(c, files=files, sweep_id=sweep_id) for c in cells]
    if not isinstance(store, Store):
        store = Store(store) if store is not None else Store()
    store.add(loaded, keys=keys)
    summarizer = for_workers(summarizer, store)
    done = store.has_replays(c.key for c in cells)
    todo = [c for c in cells if c.key not in done]
    workers = min(workers or os.cpu_count() or 1, len(todo))
    skipped = len(cells) - len(todo)
    failed: dict[str, str] = {}
    if backend == "ray":
        results = _ray(todo, loaded, policy, summarizer, ray_address, workers)
        save = _keeping_failures(store, store.save_many, failed)
        _drain(results, save, len(todo), skipped, progress, batch_seconds)
    elif workers > 1:
        # Outlives the workers: the last batch of parts is stored after they stop.
        with sweep_folder() as folder:
            parts = _local(todo, loaded, policy, summarizer, workers, folder)
            save = _keeping_failures(store, _attach(store), failed)
            _drain(parts, save, len(todo), skipped, progress, batch_seconds)
    else:
        results = _serial(todo, loaded, policy, summarizer)
        save = _keeping_failures(store, store.save_many, failed)
        _drain(results, save, len(todo), skipped, progress, batch_seconds)
    return _summary(store, cells, list(grid), failed, [t.trace_id for t in loaded])


def _keeping_failures(
    store: Store, save: Callable[[list[Any]], Any], failed: dict[str, str]
) -> Callable[[list[Any]], None]:
    """`save` for a batch of results that may hold failed cells: their errors go into `failed`
    (by replay key) and the summaries they did get into the store, the rest to `save`."""

    def keep(batch: list[Any]) -> None:
        done: list[Any] = []
        for result in batch:
            if isinstance(result, FailedCell):
                failed[result.key] = result.error
                if result.summaries:
                    store.put_summaries(result.summaries)
            else:
                done.append(result)
        save(done)

    return keep


def _attach(store: Store) -> Callable[[list[ReplayPart]], Any]:
    """Store a batch of worker-written parts, then delete their files."""

    def save(parts: list[ReplayPart]) -> None:
        store.save_parts(parts)
        for part in parts:
            part.remove()

    return save


T = TypeVar("T")


def _drain(
    results: Iterator[T],
    save: Callable[[list[T]], Any],
    total: int,
    skipped: int,
    progress: bool,
    batch_seconds: float,
) -> None:
    """Save results in one transaction per `batch_seconds`; stops the workers on any error."""
    bar = _progress(total, skipped) if progress else None
    batch: list[T] = []
    last = time.monotonic()
    with contextlib.closing(results):  # type: ignore[type-var]
        for saved in results:
            batch.append(saved)
            if time.monotonic() - last >= batch_seconds:
                save(batch)
                if bar is not None:
                    bar.update(len(batch))
                batch, last = [], time.monotonic()
    save(batch)
    if bar is not None:
        bar.update(len(batch))
        bar.close()


class _Bar:
    """A sweep's progress on stderr (cells done of all, rate, time left), drawn by `rich`,
    the library that already lays out ctxlab's tables."""

    def __init__(self, total: int, desc: str) -> None:
        self._progress, self._task = stderr_bar(desc, "cells", total)

    def update(self, n: int) -> None:
        self._progress.advance(self._task, n)

    def close(self) -> None:
        self._progress.stop()


def _progress(total: int, skipped: int) -> _Bar:
    desc = f"sweep ({skipped} cells already stored)" if skipped else "sweep"
    return _Bar(total, desc)


def spell(name: str, value: Any) -> str:
    """A grid value as the CLI spells it (`fraction:0.85`), for result columns."""
    if name in SIZE_PARAMS:
        return format_size(value)
    return str(value)


def _summary(
    store: Store,
    cells: list[Cell],
    names: list[str],
    failed: Mapping[str, str],
    trace_ids: Sequence[str],
) -> pl.DataFrame:
    """One row per cell, in plan order: its grid values, its stored replay's summary row, and
    `error` (null, or why its model failed: such a cell has only its trace id and grid values)."""
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
    order = pl.DataFrame(
        {
            "replay_key": [c.key for c in cells],
            "_order": list(range(len(cells))),
            "error": [failed.get(c.key) for c in cells],
            "_trace": [trace_ids[c.trace_index] for c in cells],
        },
        schema={"replay_key": pl.Utf8, "_order": pl.Int64, "error": pl.Utf8, "_trace": pl.Utf8},
    )
    return (
        grid_cols.join(rows, on="replay_key", how="left")
        .join(order, on="replay_key")
        .sort("_order")
        .with_columns(pl.coalesce("trace_id", "_trace").alias("trace_id"))
        .drop("_order", "_trace")
    )
