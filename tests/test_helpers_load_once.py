"""Test helpers are imported one way, as modules of the `tests` package, so each loads once.

Two spellings of one helper (`synthetic` and `tests.synthetic`) load its file twice: two
copies of its classes and module-level state, so `isinstance` checks and caches quietly split
between the tests that use one spelling and those that use the other.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
MODULES = sorted(p.stem for p in TESTS.glob("*.py") if p.stem != "__init__")
HELPERS = [m for m in MODULES if not m.startswith("test_") and m != "conftest"]


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in a source file, nested ones included."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def test_the_helpers_are_found() -> None:
    assert {"synthetic", "_policy_traces", "langsmith_shapes", "deepagents_oracle"} <= set(HELPERS)


def test_tests_and_benchmarks_import_test_modules_through_the_tests_package() -> None:
    """Helpers, and the test modules some tests borrow data from."""
    sources = sorted([*TESTS.glob("*.py"), *(REPO / "bench").glob("*.py")])
    bare = [
        f"{path.relative_to(REPO)}:{line}: import {name}"
        for path in sources
        for line, name in imported_modules(path)
        if name.split(".")[0] in MODULES
    ]
    assert bare == [], "import modules of tests/ as tests.<name>"


def test_every_test_file_is_loaded_under_one_name() -> None:
    """After every test module is imported (pytest has done so already in a full run), each
    file under tests/ is in `sys.modules` once, under its `tests.` name."""
    for path in sorted(TESTS.glob("test_*.py")):
        importlib.import_module(f"tests.{path.stem}")
    names: dict[Path, list[str]] = defaultdict(list)
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().parent == TESTS:
            names[Path(file).resolve()].append(name)
    for helper in HELPERS:
        assert names[TESTS / f"{helper}.py"] == [f"tests.{helper}"]
    assert {p: n for p, n in names.items() if len(n) > 1} == {}
