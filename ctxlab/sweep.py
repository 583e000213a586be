"""`ctxlab.sweep`: every trace x every grid cell, in parallel, streamed into the store.

A researcher's question is rarely one trace ("over my 400 traces, which trigger and keep
minimise cumulative tokens without dropping the goal?"). Cells are independent and replays are
pure, so they run in worker processes (or Ray tasks); only the parent writes, in bulk
transactions, so the DuckDB file has one writer and a killed sweep leaves whole replays only.
A cell whose replay key is already stored is skipped: rerunning a sweep resumes it.

Local workers are built for near-linear scaling on a small machine, where the parent shares
the cores with them: the parent replays cells too, a feeder thread hands a worker its next cell
the moment it finishes one, each trace is pinned to one worker (sent once, replayed cold once),
workers write finished rows as Parquet files that DuckDB reads in one statement per batch
(the parent never touches a row), and the fork server boots while the parent plans.

Everything that can be wrong with the request (an unknown parameter, a value of the wrong
type, a missing trace file) is checked before the first replay starts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import pickle
import queue
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

from ctxlab.defaults import BACKENDS
from ctxlab.errors import TraceFormatError
from ctxlab.load import load_all
from ctxlab.policies import Policy
from ctxlab.policies.catalog import PRESETS
from ctxlab.replay import replay
from ctxlab.specs import SIZE_PARAMS, format_size, parse_value
from ctxlab.store import (
    FILE_MODES,
    ReplayPart,
    SavedReplay,
    Store,
    replay_key,
    summarizer_name,
    trace_key,
)
from ctxlab.summarizers import Extractive, Summarizer
from ctxlab.trace import Trace

POLICIES: dict[str, Callable[..., Any]] = PRESETS


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
    """Which file contents to store (`ctxlab.store.SavedReplay.of`)."""
    sweep_id: str = ""
    """Identifies one `sweep` call: contents are sent once per sweep and worker process."""


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

_SENT: dict[str, set[str]] = {}
"""Per sweep, hashes of file contents this process already returned: the parent stores each
content once, and every cell of a trace offloads the same results, so repeats travel without
their text. Keyed by sweep so a later sweep into another store sends everything again."""


def run_cell(trace: Trace, policy: Policy, summarizer: Summarizer, cell: Cell) -> SavedReplay:
    """Replay one cell of `trace` and package it for the store (runs in a worker)."""
    result = replay(trace, dataclasses.replace(policy, **dict(cell.values)), summarizer=summarizer)
    if cell.sweep_id not in _SENT:
        _SENT.clear()
        _SENT[cell.sweep_id] = set()
    sent = _SENT[cell.sweep_id]
    saved = SavedReplay.of(
        result, cell.trace_hash, summarizer_name(summarizer), files=cell.files, omit=sent
    )
    if saved.replay_key != cell.key:
        raise RuntimeError(f"replay key changed between plan and run for {trace.trace_id}")
    sent.update(saved.files.filter(pl.col("content").is_not_null())["sha256"].to_list())
    return saved


# Imported once in the fork server, not once per worker: LangChain, deepagents and polars
# take seconds to import on a small machine. Model profiles need no preloading: they are a
# small JSON file shipped with ctxlab.
PRELOAD = ["ctxlab.sweep"]


def _worker_context() -> multiprocessing.context.BaseContext:
    """Fork-server workers with ctxlab preloaded: a worker starts in milliseconds, not seconds.

    Plain `fork` is unsafe (polars' thread pool does not survive it); `spawn` re-imports
    LangChain, deepagents and polars in every worker, seconds each on a small machine. The
    server is started here, in the background: `sweep` calls this before hashing and planning
    so that the server's imports overlap them. A server already running (an earlier sweep in
    this process) is reused as it is.
    """
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    multiprocessing.forkserver.ensure_running()
    return ctx


@dataclass(frozen=True, slots=True)
class _Failed:
    """A worker's exception with its traceback, re-raised in the parent."""

    error: BaseException
    trace: str


def _work(
    conn: multiprocessing.connection.Connection,
    folder: str,
    policy: Policy,
    summarizer: Summarizer,
) -> None:
    """A worker's loop: `(cell, trace file or None)` in, a `ReplayPart` (or `_Failed`) out.

    The worker holds one trace, the last one it was sent: the parent sends a cell of another
    trace together with that trace's file, which the worker loads and deletes at once.
    """
    trace: Trace | None = None
    with contextlib.suppress(KeyboardInterrupt, EOFError):  # the parent reports Ctrl-C; EOF:
        while (task := conn.recv()) is not None:  # the sweep ended before this worker started
            cell, trace_file = task
            try:
                if trace_file is not None:
                    path = Path(trace_file)
                    trace = pickle.loads(path.read_bytes())
                    path.unlink()
                assert trace is not None, "the parent sends a trace with its first cell"
                saved = run_cell(trace, policy, summarizer, cell)
                conn.send(saved.write_parts(Path(folder) / cell.key))
            except Exception as exc:
                failed = _Failed(exc, traceback.format_exc())
                try:
                    conn.send(failed)
                except Exception:  # an exception that does not pickle: send its text
                    conn.send(_Failed(RuntimeError(repr(exc)), failed.trace))


@dataclass(slots=True)
class _Child:
    """A worker process as the parent sees it: its pipe and how many cells it has in hand."""

    conn: multiprocessing.connection.Connection
    proc: multiprocessing.process.BaseProcess
    busy: int = 0


def _died(child: _Child) -> RuntimeError:
    """The error for a child that exited mid-sweep (killed, out of memory, `os._exit`)."""
    child.proc.join(5)
    return RuntimeError(f"sweep worker {child.proc.pid} died (exit code {child.proc.exitcode})")


class _Pool:
    """The parent and `workers - 1` child processes replaying cells, traces pinned to them.

    The parent is one of the workers: it replays a cell whenever it has no finished part to
    hand on, so its core is never idle while children start (a fork server boots in about a
    second) or while they work. A feeder thread keeps every child supplied: it wakes as soon as
    a child sends a part (a blocking wait that releases the GIL), queues the part for the
    parent and sends the child its next cell at once, whatever the parent is doing (replaying
    a cell, storing a batch). Feeding from the parent's own loop instead left a child idle
    for about 20% of its life near the end of a sweep, waiting for the parent to finish a cell.

    Each process gets the cells of one trace until that trace has none left, then a trace no
    one holds, and only then helps with another's trace; so each trace is pickled, loaded and
    replayed cold about once per sweep, and the traces the parent takes are never pickled at
    all. A child has at most `DEPTH` cells in hand (one running, one waiting), so that at the
    end of a sweep the parent takes the last cells rather than waiting for a queue.
    """

    DEPTH = 2
    PARENT = -1
    WAKE = 0.05
    """Seconds the feeder waits before looking again for children that started or a close."""

    def __init__(
        self,
        cells: Sequence[Cell],
        traces: Sequence[Trace],
        policy: Policy,
        summarizer: Summarizer,
        workers: int,
        folder: Path,
    ) -> None:
        self.traces, self.policy, self.summarizer, self.folder = traces, policy, summarizer, folder
        self.queues: dict[int, deque[Cell]] = {}
        for cell in cells:
            self.queues.setdefault(cell.trace_index, deque()).append(cell)
        self.outstanding = len(cells)  # cells whose part has not reached the parent yet
        self.held: dict[int, int | None] = {self.PARENT: None}
        self.files = itertools.count()
        self.children: list[_Child] = []
        self.failed: list[BaseException] = []
        self.lock = threading.Lock()  # queues, held, children
        self.parts: queue.SimpleQueue[ReplayPart] = queue.SimpleQueue()
        self.closing = threading.Event()
        ctx = _worker_context()
        pending = []
        for _ in range(workers - 1):
            conn, child_end = ctx.Pipe()
            proc = ctx.Process(target=_work, args=(child_end, str(folder), policy, summarizer))
            proc.daemon = True
            pending.append((conn, proc, child_end))
        self.starter = threading.Thread(target=self._start, args=(pending,), daemon=True)
        self.feeder = threading.Thread(target=self._feeder, daemon=True)
        self.starter.start()
        self.feeder.start()

    def _start(self, pending: list[tuple[Any, Any, Any]]) -> None:
        """Start the children (in a thread: `start` blocks until the fork server is up)."""
        try:
            for conn, proc, child_end in pending:
                if self.closing.is_set():  # the parent did every cell before this child started
                    break
                proc.start()
                child_end.close()  # so that a dead child reads as EOF in the parent
                with self.lock:
                    if not self.closing.is_set():
                        self.children.append(_Child(conn, proc))
                        continue
                conn.close()  # too late: the child reads EOF and exits
                proc.join()
        except BaseException as exc:  # re-raised by the parent's loop
            self.failed.append(exc)

    def _trace_for(self, who: int) -> int | None:
        held = self.held.get(who)
        if held is not None and self.queues.get(held):
            return held
        others = {h for w, h in self.held.items() if w != who}
        free = [t for t, q in self.queues.items() if q and t not in others]
        if free:
            return free[0]
        rest = [t for t, q in self.queues.items() if q]
        return max(rest, key=lambda t: len(self.queues[t])) if rest else None

    def _take(self, who: int) -> tuple[Cell, bool] | None:
        """The next cell for `who` (under the lock) and whether `who` must be sent its trace."""
        index = self._trace_for(who)
        if index is None:
            return None
        switched = index != self.held.get(who)
        self.held[who] = index
        return self.queues[index].popleft(), switched

    def _feed(self, children: list[_Child]) -> None:
        """Top up every child to `DEPTH` cells in hand (feeder thread)."""
        for i, child in enumerate(children):
            while child.busy < self.DEPTH:
                with self.lock:
                    task = self._take(i)
                if task is None:
                    return
                cell, switched = task
                trace_file = None
                if switched:
                    trace_file = self.folder / f"trace-{cell.trace_index}-{next(self.files)}.pickle"
                    data = pickle.dumps(
                        self.traces[cell.trace_index], protocol=pickle.HIGHEST_PROTOCOL
                    )
                    trace_file.write_bytes(data)
                try:
                    child.conn.send((cell, None if trace_file is None else str(trace_file)))
                except OSError:
                    raise _died(child) from None
                child.busy += 1

    def _receive(self, children: list[_Child]) -> None:
        """Wait briefly for parts from busy children and queue them for the parent."""
        busy = {c.conn: c for c in children if c.busy}
        if not busy:
            self.closing.wait(self.WAKE)
            return
        for conn in multiprocessing.connection.wait(list(busy), self.WAKE):
            child = busy[conn]  # type: ignore[index]
            try:
                message = child.conn.recv()
            except (EOFError, OSError):  # OSError: it died with our data unread
                raise _died(child) from None
            if isinstance(message, _Failed):
                message.error.add_note(f"in a sweep worker:\n{message.trace}")
                raise message.error
            child.busy -= 1
            self.parts.put(message)

    def _feeder(self) -> None:
        """The feeder thread: feed, receive, repeat until the sweep closes or fails."""
        try:
            while not self.closing.is_set():
                with self.lock:  # the starting thread appends children as they come up
                    children = list(self.children)
                self._feed(children)
                self._receive(children)
        except BaseException as exc:
            if not self.closing.is_set():
                self.failed.append(exc)
                self.parts.put(None)  # type: ignore[arg-type]  # wakes the parent

    def _next_part(self, wait: float | None) -> ReplayPart | None:
        """A part the feeder queued (waiting up to `wait` seconds), or None."""
        try:
            part = self.parts.get(timeout=wait) if wait else self.parts.get_nowait()
        except queue.Empty:
            return None
        if part is not None:  # None: the feeder failed, `failed` says why
            self.outstanding -= 1
        return part

    def results(self) -> Iterator[ReplayPart]:
        """Finished cells as they come; an exception in any worker is raised here."""
        while self.outstanding:
            if self.failed:
                raise self.failed[0]
            if (part := self._next_part(None)) is not None:
                yield part
                continue
            with self.lock:
                task = self._take(self.PARENT)
            if task is not None:
                cell = task[0]
                saved = run_cell(self.traces[cell.trace_index], self.policy, self.summarizer, cell)
                self.outstanding -= 1
                yield saved.write_parts(self.folder / cell.key)
            elif (part := self._next_part(self.WAKE)) is not None:  # all taken: wait for them
                yield part
        if self.failed:
            raise self.failed[0]

    def close(self, *, finished: bool) -> None:
        """Stop the feeder, then the children: politely when every cell is done, at once
        otherwise. A child that was still starting is stopped by the starting thread."""
        with self.lock:
            self.closing.set()
            children = list(self.children)
        self.feeder.join()
        for child in children:
            if finished:
                with contextlib.suppress(OSError):
                    child.conn.send(None)
            else:
                child.proc.terminate()
        for child in children:
            child.proc.join(10)
            if child.proc.is_alive():
                child.proc.kill()
                child.proc.join()
            child.conn.close()


def _local(
    cells: list[Cell],
    traces: list[Trace],
    policy: Policy,
    summarizer: Summarizer,
    workers: int,
    folder: Path,
) -> Iterator[ReplayPart]:
    pool = _Pool(cells, traces, policy, summarizer, workers, folder)
    finished = False
    try:
        yield from pool.results()
        finished = True
    finally:
        pool.close(finished=finished)


def _serial(
    cells: list[Cell], traces: list[Trace], policy: Policy, summarizer: Summarizer
) -> Iterator[SavedReplay]:
    for cell in cells:
        yield run_cell(traces[cell.trace_index], policy, summarizer, cell)


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
        # One object per trace: a task deserialises the trace it replays, not all of them.
        refs = [ray.put(t) for t in traces]
        pending = [
            remote.remote(refs[cell.trace_index], policy, summarizer, cell) for cell in cells
        ]
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
    if backend == "local" and (workers or os.cpu_count() or 1) > 1:
        _worker_context()  # boots the fork server while this process hashes and plans
    keys = [trace_key(t) for t in loaded]
    cells, _ = plan(loaded, policy, grid, summarizer, keys)
    sweep_id = uuid.uuid4().hex
    cells = [dataclasses.replace(c, files=files, sweep_id=sweep_id) for c in cells]
    if not isinstance(store, Store):
        store = Store(store) if store is not None else Store()
    store.add(loaded, keys=keys)
    done = store.has_replays(c.key for c in cells)
    todo = [c for c in cells if c.key not in done]
    workers = min(workers or os.cpu_count() or 1, len(todo))
    skipped = len(cells) - len(todo)
    if backend == "ray":
        results = _ray(todo, loaded, policy, summarizer, ray_address, workers)
        _drain(results, store.save_many, len(todo), skipped, progress, batch_seconds)
    elif workers > 1:
        # Outlives the workers: the last batch of parts is stored after they stop.
        with tempfile.TemporaryDirectory(prefix="ctxlab-sweep-") as folder:
            parts = _local(todo, loaded, policy, summarizer, workers, Path(folder))
            _drain(parts, _attach(store), len(todo), skipped, progress, batch_seconds)
    else:
        results = _serial(todo, loaded, policy, summarizer)
        _drain(results, store.save_many, len(todo), skipped, progress, batch_seconds)
    return _summary(store, cells, list(grid))


def _attach(store: Store) -> Callable[[list[ReplayPart]], Any]:
    """Store a batch of worker-written parts, then delete their files."""

    def save(parts: list[ReplayPart]) -> None:
        store.save_parts(parts)
        for part in parts:
            part.remove()

    return save


T = TypeVar("T", SavedReplay, ReplayPart)


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
