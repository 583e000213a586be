"""What pyproject.toml declares matches what ctxlab imports, and installs beside older LangChain.

ctxlab must install into a kernel that already has LangChain without replacing it: at run time
it needs only `langchain-core` (from 1.7.7), so no other LangChain package may be a run-time
requirement (their newest releases require a newer langchain-core), and nothing in the run-time
requirement tree may exclude langchain-core 1.7.7 or langchain 1.4.10. `constraints.txt` pins
the versions CI tests; each pin must lie inside the declared range.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import sys
import tomllib
from functools import cache
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
RUNTIME = [Requirement(r) for r in PROJECT["dependencies"]]
EXTRAS = {
    extra: [Requirement(r) for r in reqs]
    for extra, reqs in PROJECT["optional-dependencies"].items()
}
OLDER = {"langchain-core": "1.7.7", "langchain": "1.4.10"}
"""Versions a user may already have that `pip install ctxlab` must keep."""
UPSTREAM_ONLY_FOR_TESTS = {
    "deepagents",
    "langchain",
    "langgraph",
    "langsmith",
    "langchain-anthropic",
    "langchain-openai",
    "langchain-google-genai",
}


def names(reqs: list[Requirement]) -> set[str]:
    return {canonicalize_name(r.name) for r in reqs}


@cache
def third_party_imports() -> tuple[set[str], set[str]]:
    """Top-level modules ctxlab imports: (at module level, only inside functions)."""
    top: set[str] = set()
    nested: set[str] = set()
    for path in (REPO / "ctxlab").rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        inside = {
            id(n)
            for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            for n in ast.walk(f)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                root = module.split(".")[0]
                if root in sys.stdlib_module_names or root in {"ctxlab", "__future__"}:
                    continue
                (nested if id(node) in inside else top).add(root)
    return top, nested - top


@cache
def installed_modules() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def distribution_of(module: str) -> str:
    dists = installed_modules().get(module)
    assert dists, f"{module} is imported by ctxlab but no installed distribution provides it"
    return canonicalize_name(dists[0])


def test_module_level_imports_are_runtime_dependencies() -> None:
    top, _ = third_party_imports()
    missing = {m: distribution_of(m) for m in top if distribution_of(m) not in names(RUNTIME)}
    assert not missing, f"imported at module level but not in [project].dependencies: {missing}"


def test_imports_inside_functions_are_declared_somewhere() -> None:
    _, nested = third_party_imports()
    declared = names(RUNTIME).union(*(names(r) for r in EXTRAS.values()))
    missing = {m: distribution_of(m) for m in nested if distribution_of(m) not in declared}
    assert not missing, f"imported but declared nowhere: {missing}"


def test_upstream_langchain_packages_are_not_runtime_requirements() -> None:
    assert names(RUNTIME) & UPSTREAM_ONLY_FOR_TESTS == set()
    assert UPSTREAM_ONLY_FOR_TESTS <= names(EXTRAS["test"])
    assert "deepagents" in names(EXTRAS["deepagents"])


def runtime_tree() -> list[tuple[str, Requirement]]:
    """Every (requirer, requirement) in the installed run-time tree, extras of others skipped."""
    seen: set[str] = set()
    edges: list[tuple[str, Requirement]] = [("ctxlab", r) for r in RUNTIME]
    queue = list(RUNTIME)
    while queue:
        req = queue.pop()
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.distribution(name).requires or []:
            sub = Requirement(text)
            if sub.marker is None or sub.marker.evaluate({"extra": ""}):
                edges.append((name, sub))
                queue.append(sub)
    return edges


def test_runtime_tree_admits_older_langchain() -> None:
    excluding = [
        f"{who} requires {req}"
        for who, req in runtime_tree()
        if canonicalize_name(req.name) in OLDER
        and not req.specifier.contains(OLDER[canonicalize_name(req.name)], prereleases=True)
    ]
    assert not excluding


def constraints() -> dict[str, str]:
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


@pytest.mark.parametrize("name", sorted(constraints()))
def test_constraint_pins_lie_inside_the_declared_ranges(name: str) -> None:
    version = constraints()[name]
    declared = [r for r in RUNTIME + EXTRAS["test"] if canonicalize_name(r.name) == name]
    assert declared, f"{name} is pinned in constraints.txt but required nowhere"
    for req in declared:
        assert req.specifier.contains(version), f"{name}=={version} is outside {req}"
