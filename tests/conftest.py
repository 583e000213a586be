"""Shared fixtures: where the team's shared data lives, and skipping cleanly without it.

The suite runs on parallel workers (pytest-xdist, `--dist loadgroup` in pyproject.toml). Each
worker has its own `tmp_path` root, and tests write only there. What workers must not split or
overlap is grouped here, so a new test file needs no marks of its own:

- a module with a module- or class-scoped fixture of its own (an expensive shared setup, such
  as regenerating the samples) runs on one worker, so the fixture is built once;
- the modules that start JupyterLab and chromium (`BROWSER_MODULES`) share one worker, so two
  browsers and two Lab servers never compete for the cores at once.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CTXLAB_SHARED", REPO.parent / "shared"))
BROWSER_MODULES = {"test_browser.py", "test_quickstart_lab.py"}


@pytest.fixture
def shared() -> Path:
    """The shared/ folder beside the checkout; tests that read it skip when it is absent."""
    if not (SHARED / "data").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set CTXLAB_SHARED)")
    return SHARED


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether `item` uses a fixture scoped wider than a test but defined in its own module
    (or a class of it): one built per worker that runs any of the module's tests."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    module = item.nodeid.split("::", 1)[0]
    for defs in info.name2fixturedefs.values():
        for fixturedef in defs:
            if fixturedef.scope in ("class", "module") and fixturedef.baseid.startswith(module):
                return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the groups described above (xdist reads `xdist_group` marks after this hook)."""
    grouped: set[str] = set()
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if Path(module).name in BROWSER_MODULES:
            grouped.add(module)
        elif module not in grouped and _shares_a_module_fixture(item):
            grouped.add(module)
    for item in items:
        if list(item.iter_markers("xdist_group")):
            continue
        module = item.nodeid.split("::", 1)[0]
        if Path(module).name in BROWSER_MODULES:
            item.add_marker(pytest.mark.xdist_group("browser"))
        elif module in grouped:
            item.add_marker(pytest.mark.xdist_group(module))
