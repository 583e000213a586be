"""The two custom tools and the text they print: a deterministic pytest stand-in and `git diff`.

Both read the agent's real working folder on every call, so their output follows the edits the
real deepagents file tools made. The scripts (`script.Script.tests`) call the same report
functions on their simulated copy of the files, so each scripted step knows what its tool call
will return.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from langchain_core.tools import BaseTool, StructuredTool

from .project import BUGS, RETURNS_BUG
from .seeded import stable_int

TEST_RE = re.compile(r"^def (test\w*?_(\d+))\(\):\n((?:    .*\n?)+)", re.M)
IMPORT_RE = re.compile(r"^from orderflow\.(\w+) import \(\n((?:    \w+,\n)+)\)", re.M)
DEF_RE = re.compile(r"^def (\w+)\(", re.M)


def read_tree(root: Path) -> dict[str, str]:
    """Every text file of the project, keyed by its path relative to the root."""
    skip = ("large_tool_results/", "conversation_history/")
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).as_posix().startswith(skip)
    }


@dataclass
class CollectedTest:
    """One collected test and, if it fails, the failure section pytest would print."""

    nodeid: str
    failure: str | None


def collect(files: dict[str, str], target: str) -> tuple[list[CollectedTest], list[str]]:
    """Collect tests under `target`; a test fails when it calls a function with a known bug.

    Returns the tests and the collection errors (the ImportError section of each test file
    whose imports are missing).
    """
    defined: dict[str, tuple[str, str]] = {}
    for path, text in files.items():
        if path.startswith("orderflow/"):
            starts = [(m.start(), m.group(1)) for m in DEF_RE.finditer(text)] + [(len(text), "")]
            for (start, name), (end, _) in zip(starts, starts[1:], strict=False):
                defined[name] = (path, text[start:end])
    bugs = [(b[2], b[4]) for b in BUGS] + [(RETURNS_BUG[0], RETURNS_BUG[2])]
    cases: list[CollectedTest] = []
    errors: list[str] = []
    target = target.strip("/")
    for path in sorted(files):
        name = path.rsplit("/", 1)[-1]
        if not (path.startswith(target) and name.startswith("test_") and name.endswith(".py")):
            continue
        text = files[path]
        imports = IMPORT_RE.search(text)
        if imports:
            module, names = imports.group(1), re.findall(r"\w+", imports.group(2))
            statement = f"from orderflow.{module} import ("
            source = files.get(f"orderflow/{module}.py")
            missing = [n for n in names if source is None or n not in defined]
            if missing:
                err = (
                    f"E   ModuleNotFoundError: No module named 'orderflow.{module}'"
                    if source is None
                    else f"E   ImportError: cannot import name '{missing[0]}' from "
                    f"'orderflow.{module}' (/workspace/orderflow/{module}.py)"
                )
                errors.append(
                    "\n".join(
                        [
                            f" ERROR collecting {path} ".center(80, "_"),
                            f"ImportError while importing test module '/workspace/{path}'.",
                            "Traceback:",
                            f"{path}:{lineno(text, statement) + 1}: in <module>",
                            f"    {statement}",
                            err,
                        ]
                    )
                )
                continue
        for match in TEST_RE.finditer(text):
            test_name, case, body = match.group(1), int(match.group(2)), match.group(3)
            called = re.search(r"result = (\w+)\(", body)
            failure = None
            if called and called.group(1) in defined:
                src_path, src = defined[called.group(1)]
                for line, every in bugs:
                    if line + "\n" in src and case % every == 0:
                        failure = failure_section(
                            files, path, test_name, body, (src_path, called.group(1), line)
                        )
            cases.append(CollectedTest(f"{path}::{test_name}", failure))
    return cases, errors


def failure_section(
    files: dict[str, str], path: str, test: str, body: str, culprit: tuple[str, str, str]
) -> str:
    """The FAILURES block for one test, quoting the real test body and the buggy line.

    `culprit` is (source path, function, buggy line).
    """
    src_path, function, bad_line = culprit
    got, want = stable_int(test, "got") % 9000 / 100, stable_int(test, "want") % 9000 / 100
    src_lineno = files[src_path].split("\n").index(bad_line) + 1
    test_lineno = files[path].split("\n").index(f"def {test}():") + 1
    lines = [f" {test} ".center(80, "_"), "", f"    def {test}():"]
    body_lines = body.rstrip("\n").split("\n")
    lines += [f"    {b}" for b in body_lines[:-1]]
    lines += [
        f">   {body_lines[-1]}",
        f"E   AssertionError: assert Decimal('{got:.2f}') == Decimal('{want:.2f}')",
        "",
        f"{src_path}:{src_lineno}: in {function}",
        f"    {bad_line.strip()}",
        f"{path}:{test_lineno + len(body_lines)}: AssertionError",
        " Captured log call ".center(80, "-"),
    ]
    lines += [
        f"DEBUG    orderflow:{src_path.rsplit('/', 1)[-1]}:{src_lineno} step {i} "
        f"subtotal={stable_int(test, i) % 50000 / 100:.2f}"
        for i in range(6)
    ]
    return "\n".join(lines)


def pytest_report(files: dict[str, str], target: str, verbose: bool) -> str:
    """What `pytest -v` (verbose) or `pytest -q --tb=no` prints for these files.

    Both with `--continue-on-collection-errors`, so a missing module does not stop the run.
    """
    cases, errors = collect(files, target)
    failed = [c for c in cases if c.failure]
    seconds = sum(stable_int(c.nodeid) % 13 for c in cases) / 1000 + 0.31
    counts = (
        ", ".join(
            f"{n} {label}"
            for n, label in (
                (len(failed), "failed"),
                (len(cases) - len(failed), "passed"),
                (len(errors), "errors" if len(errors) > 1 else "error"),
            )
            if n
        )
        + f" in {seconds:.2f}s"
    )
    summary = [f"FAILED {c.nodeid} - AssertionError" for c in failed]
    summary += [f"ERROR {e.split()[3]}" for e in errors]
    if not verbose:
        marks = "".join("F" if c.failure else "." for c in cases)
        out = [
            f"{marks[i : i + 72]:<72} [{100 * min(i + 72, len(marks)) // len(marks):>3}%]"
            for i in range(0, len(marks), 72)
        ]
        if summary:
            out += [" short test summary info ".center(80, "="), *summary]
        return "\n".join([*out, counts]) + "\n"
    out = [
        " test session starts ".center(80, "="),
        "platform linux -- Python 3.11.9, pytest-8.3.3, pluggy-1.5.0 -- "
        "/workspace/.venv/bin/python",
        "rootdir: /workspace",
        "configfile: pyproject.toml",
        f"collected {len(cases)} items / {len(errors)} errors",
        "",
    ]
    for index, case in enumerate(cases, 1):
        left = f"{case.nodeid} {'FAILED' if case.failure else 'PASSED'}"
        out.append(f"{left:<73}[{100 * index // len(cases):>3}%]")
    if errors:
        out += ["", " ERRORS ".center(80, "="), *errors]
    if failed:
        out += ["", " FAILURES ".center(80, "="), *[c.failure for c in failed if c.failure]]
    slow = sorted(cases, key=lambda c: stable_int(c.nodeid) % 997, reverse=True)[:10]
    out += [
        "",
        " warnings summary ".center(80, "="),
        "orderflow/storage.py:12: DeprecationWarning: datetime.utcnow() is deprecated",
        "  from datetime import datetime",
        "",
        "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html",
        "",
        " slowest 10 durations ".center(80, "="),
        *[f"{stable_int(c.nodeid) % 997 / 1000 + 0.2:.2f}s call     {c.nodeid}" for c in slow],
        "",
        " short test summary info ".center(80, "="),
        *summary,
        f" {counts} ".center(80, "="),
    ]
    return "\n".join(out) + "\n"


def git_diff_text(before: dict[str, str], after: dict[str, str], stat: bool) -> str:
    """`git diff` (or `git diff --stat`) of the working tree against the starting commit."""
    chunks: list[str] = []
    stats: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        diff = list(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                (new or "").splitlines(keepends=True),
                fromfile=f"a/{path}" if old is not None else "/dev/null",
                tofile=f"b/{path}" if new is not None else "/dev/null",
                n=3,
            )
        )
        added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
        removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
        stats.append(f" {path} | {added + removed} {'+' * min(added, 40)}{'-' * min(removed, 40)}")
        header = f"diff --git a/{path} b/{path}\n"
        if old is None or new is None:
            header += f"{'new' if old is None else 'deleted'} file mode 100644\n"
        chunks.append(header + "".join(diff))
    if stat:
        return "\n".join(stats) + f"\n {len(stats)} files changed\n"
    return "".join(chunks)


def make_tools(root: Path) -> list[BaseTool]:
    """The two custom tools; they read the agent's real working folder on every call."""
    baseline = read_tree(root)

    def run_tests(path: str = "tests", verbose: bool = False) -> str:
        """Run pytest (with --continue-on-collection-errors) on a test file or folder.

        Args:
            path: Test file or folder relative to the repository root, e.g. tests/test_api.py.
            verbose: Print one line per test (-v), the warnings summary and the slowest tests.
        """
        return pytest_report(read_tree(root), path, verbose)

    def git_diff(stat: bool = False) -> str:
        """Show `git diff` of the working tree against HEAD, including new and deleted files.

        Args:
            stat: Only print the per-file summary (`git diff --stat`).
        """
        return git_diff_text(baseline, read_tree(root), stat)

    return [StructuredTool.from_function(run_tests), StructuredTool.from_function(git_diff)]


def lineno(text: str, needle: str) -> int:
    """0-based index of the first line containing `needle` (read_file offsets are 0-based)."""
    return next(i for i, line in enumerate(text.split("\n")) if needle in line)
