"""Shared fixtures: where the team's shared data lives, and skipping cleanly without it."""

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
