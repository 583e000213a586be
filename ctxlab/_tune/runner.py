"""Running a study's replays: in this process, in local worker processes, or as Ray tasks.

A cell is one trace under one setting; cells are pure, so they run anywhere and only the
parent writes the store (`ctxlab._store.studies`). The local workers are the sweep's
(`ctxlab._store.sweep`): processes of its fork server with ctxlab preloaded, each tied to the
parent's life (a study killed with SIGKILL leaves no worker replaying on). Every worker gets
the traces once, when it starts, and keeps them for the whole study: a study replays the same
traces under hundreds of settings, and what ctxlab derives from a trace (message sizes, facts)
is then computed once per worker. Ray gets each trace once as an object (`ray.put`).

Cells are handed out longest trace first, so that the last cells of a batch are short ones
and no worker waits long for the slowest.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from ctxlab._errors import TuneError
from ctxlab._replay.applies import with_settings
from ctxlab._store.sweep import _exit_with, _worker_context, ray_started
from ctxlab._trace import Trace
from ctxlab._tune.objectives import Measure, measure
from ctxlab.policies import Policy
from ctxlab.summarizers import Summarizer


@dataclass(frozen=True, slots=True)
class Cell:
    """One replay to run: a trial (or reference point, by negative number), the set it counts
    for, the trace (by index) and the policy's settings (name -> value)."""

    number: int
    split: str
    trace_index: int
    settings: tuple[tuple[str, Any], ...]


def run_cell(trace: Trace, policy: Policy, summarizer: Summarizer, cell: Cell) -> Measure:
    """Measure one cell (in whichever process runs it)."""
    return measure(trace, with_settings(policy, **dict(cell.settings)), summarizer)


_WORKER: dict[str, Any] = {}
"""A local worker's study: its traces, base policy and summariser, set once when it starts."""


def _start_worker(traces: list[Trace], policy: Policy, summarizer: Summarizer) -> None:
    _WORKER.update(traces=traces, policy=policy, summarizer=summarizer)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), daemon=True).start()


def _worker_cell(cell: Cell) -> Measure:
    return run_cell(
        _WORKER["traces"][cell.trace_index], _WORKER["policy"], _WORKER["summarizer"], cell
    )


class Runner:
    """Runs batches of cells on one backend for the life of a study (`with Runner(...) as r`):
    `serial` (one worker), `local` (worker processes) or `ray`."""

    def __init__(
        self,
        traces: Sequence[Trace],
        policy: Policy,
        summarizer: Summarizer,
        *,
        workers: int = 1,
        ray: bool = False,
        ray_address: str | None = None,
    ) -> None:
        self.traces = list(traces)
        self.policy = policy
        self.summarizer = summarizer
        self.workers = workers
        self.ray = ray
        self.ray_address = ray_address
        self._stack = contextlib.ExitStack()
        self._pool: ProcessPoolExecutor | None = None
        self._refs: list[Any] = []
        self._remote: Any = None
        self._sizes = [len(t.messages) for t in self.traces]

    def __enter__(self) -> Runner:
        if self.ray:
            import ray

            self._stack.enter_context(ray_started(self.ray_address, self.workers, TuneError))
            self._remote = ray.remote(run_cell)
            self._refs = [ray.put(t) for t in self.traces]
        elif self.workers > 1:
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=_worker_context(),
                initializer=_start_worker,
                initargs=(self.traces, self.policy, self.summarizer),
            )
            self._stack.callback(self._pool.shutdown, wait=True, cancel_futures=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def run(self, cells: Sequence[Cell]) -> Iterator[tuple[Cell, Measure]]:
        """Each cell with its measure, as they finish (longest traces started first)."""
        order = sorted(cells, key=lambda c: -self._sizes[c.trace_index])
        if self.ray:
            yield from self._on_ray(order)
        elif self._pool is not None:
            yield from self._local(order)
        else:
            for cell in order:
                trace = self.traces[cell.trace_index]
                yield cell, run_cell(trace, self.policy, self.summarizer, cell)

    def _local(self, cells: list[Cell]) -> Iterator[tuple[Cell, Measure]]:
        assert self._pool is not None
        pending: dict[Future[Measure], Cell] = {}
        queue = iter(cells)
        try:
            for cell in queue:  # two cells in each worker's hands: none waits for the parent
                pending[self._pool.submit(_worker_cell, cell)] = cell
                if len(pending) >= 2 * self.workers:
                    break
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: id(f)):
                    cell = pending.pop(future)
                    yield cell, future.result()
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending[self._pool.submit(_worker_cell, nxt)] = nxt
        finally:
            for future in pending:
                future.cancel()

    def _on_ray(self, cells: list[Cell]) -> Iterator[tuple[Cell, Measure]]:
        import ray

        pending = {
            self._remote.remote(self._refs[c.trace_index], self.policy, self.summarizer, c): c
            for c in cells
        }
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                yield pending.pop(ref), ray.get(ref)


def default_workers(workers: int | None) -> int:
    """Worker processes: as given, else one per core."""
    return workers if workers is not None else os.cpu_count() or 1
