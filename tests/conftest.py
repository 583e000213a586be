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
