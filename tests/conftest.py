"""Shared fixtures: where the team's shared data lives, and skipping cleanly without it.

The suite runs on parallel workers (pytest-xdist, `-n auto --dist loadfile` in pyproject.toml):
each test file runs whole on one worker, in order, so module-scoped fixtures (such as the
regenerated samples) are built once and a new test file needs no marks. Each worker has its own
`tmp_path` root; tests write only there, never under the repository's data/. (`--dist
loadgroup` would be finer, but with pytest 9 xdist 3.8's `xdist_group` marks have no effect:
it renames items through an attribute pytest no longer reads.)
"""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CTXLAB_SHARED", REPO.parent / "shared"))


# Bytecode caches on, for this run and every process it starts, whatever the environment says
# (`PYTHONDONTWRITEBYTECODE=1` is set on the team's machines). Without them each xdist worker
# rewrites the asserts of every test file again (pytest caches the rewritten modules as .pyc
# files) and every `ctxlab` process, notebook kernel and sweep worker compiles ctxlab again:
# collection took 16.5 CPU seconds per worker instead of 10. The caches (`__pycache__/`) are
# git-ignored; the first run on a clean clone writes them.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.fixture
def shared() -> Path:
    """The shared/ folder beside the checkout; tests that read it skip when it is absent."""
    if not (SHARED / "data").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set CTXLAB_SHARED)")
    return SHARED


# Test files that take longest (CPU seconds of one worker and the processes it waited for), slowest
# first. pytest-xdist's `loadfile` hands out files in collection order (with
# `--no-loadscope-reorder`, in pyproject.toml; by default it sorts them by their number of
# tests), one per worker and the next when a worker has two tests left: a slow file handed out
# last would start when the others are done and leave one core idle until it ends. Running
# these first, longest first, lets the many short files fill in behind them and both workers
# end together. Order only: every test still runs. Seconds in the comments: per-file CPU
# (`python -m bench.cpu_report RUN.xml`) of a whole-suite run on 2 cores (2026-12-08, branch
# suite, on a box shared with other jobs: 846 CPU seconds for the whole run, against 782 on an
# idle box the day before, so read them as an order more than as costs). Re-measure and re-sort
# when a file's cost changes by more than a few seconds.
SLOW_FILES = (
    "test_local_model.py",  # 600+ where its model is installed (skipped in CI)
    "test_huggingface_folder.py",  # 250 where torch is installed (skipped in CI)
    "test_docs_examples.py",  # 83-110 (its scripts run four at a time: both cores)
    "test_browser.py",  # 63 (JupyterLab and chromium)
    "test_fast_paths.py",  # 61
    "test_sweep.py",  # 47 (a Ray head; 88 when Ray's start was retried)
    "test_tune_ray.py",  # 24 (its own Ray head; 1.5 min of wall under load)
    "test_cli_evaluate.py",  # 39
    "test_notebooks.py",  # 38
    "test_conformance_deepagents.py",  # 37
    "test_samples_script.py",  # 28 (most of it xz-compressing 80 MB of JSONL)
    "test_types.py",  # 26 (mypy with a cold cache, as on a clean clone; 4 warm)
    "test_store_hardening.py",  # 18-22
    "test_tune.py",  # 15 (a study killed with SIGKILL and resumed)
    "test_tune_view.py",  # 15
    "test_flag_fuzz.py",  # 20 (75 arguments x 16 values, in-process)
    "test_cache_deepagents.py",  # 19
    "test_summary_cache.py",  # 18
    "test_store_evaluation.py",  # 17
    "test_plots.py",  # 16 with chromium
    "test_widgets.py",  # 15
    "test_policies_incremental.py",  # 15
    "test_counts_only.py",  # 14
    "test_evaluate_killed.py",  # 13 (three `ctxlab evaluate` processes)
    "test_cli_tables.py",  # 13
    "test_quickstart_lab.py",  # 12
    "test_sweep_needed_lost.py",  # 10
    "test_billing.py",  # 9
    "test_pricing.py",  # 8
    "test_requests.py",  # 8
    "test_model_failures.py",  # 8
    "test_policies_registry.py",  # 7
    "test_sweep_models.py",  # 7 (sweeps with a model, two in worker processes)
    "test_api.py",  # 7
    "test_check_replay.py",  # 7
    "test_shared_json.py",  # 7
    "test_load_large.py",  # 5 (four `ctxlab` processes on a 3 MB session)
    "test_figure_layout.py",  # 3 (8 figures x 2 sizes drawn in chromium, and exported)
    "test_cli_widths.py",  # five commands on three real files
)


@pytest.fixture(autouse=True)
def terminal_100_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test sees a 100-column terminal (`$COLUMNS`), whatever runs the suite: the CLI
    wraps every line to the terminal, and a worker's idea of it varied (80 columns under xdist
    in a job whose output went to a file). A test that sets `COLUMNS` itself wins."""
    monkeypatch.setenv("COLUMNS", "100")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slowest files first (`SLOW_FILES`), the rest in their usual order (a stable sort)."""
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FILES)))


def _cpu_seconds() -> float:
    """CPU time of this process and of every child process it has waited for (user + system)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _record_cpu(item: pytest.Item, phase: str) -> Iterator[None]:
    start = _cpu_seconds()
    try:
        yield
    finally:
        item.user_properties.append((f"cpu_{phase}_s", round(_cpu_seconds() - start, 3)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Each phase's CPU seconds (this worker and the processes it waited for) go into the test's
    `user_properties`, so `--junitxml` carries them: on a machine shared with other jobs, wall
    time says little about where a test's cost is; CPU time does (summed per file to order
    `SLOW_FILES`). Processes a test leaves running, and threads' waits, are not counted."""
    return (yield from _record_cpu(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _record_cpu(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    return (yield from _record_cpu(item, "teardown"))
