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
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CTXLAB_SHARED", REPO.parent / "shared"))


@pytest.fixture
def shared() -> Path:
    """The shared/ folder beside the checkout; tests that read it skip when it is absent."""
    if not (SHARED / "data").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set CTXLAB_SHARED)")
    return SHARED


# Test files that take longest (seconds of one worker, from `pytest --durations=0` on 2 cores),
# slowest first. pytest-xdist's `loadfile` hands out files in collection order, two per worker
# and then one as each finishes: a slow file collected last (test_sweep.py sorts late) would
# start when the others are done and leave one core idle until it ends. Running these first
# lets the many short files fill in behind them. Order only: every test still runs.
SLOW_FILES = (
    "test_docs_examples.py",
    "test_sweep.py",
    "test_notebooks.py",
    "test_samples_script.py",
    "test_sweep_needed_lost.py",
    "test_cli_evaluate.py",
    "test_summary_cache.py",
    "test_cache_deepagents.py",
    "test_browser.py",
    "test_conformance_deepagents.py",
    "test_quickstart_lab.py",
    "test_demo.py",
    "test_check_replay.py",
    "test_load_fuzz.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slowest files first (`SLOW_FILES`), the rest in their usual order (a stable sort)."""
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FILES)))
