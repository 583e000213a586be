"""Every Python and shell example in README.md and docs/*.md runs as printed.

The fenced ```python blocks of one file run in order as one script (from no file, as a
notebook runs them); the ```console blocks' `$ ` lines and the ```bash / ```sh blocks run in
bash. Each runs in a fresh folder that holds what the examples assume of the repository
root: `traces/` (the bundled samples), an empty `data/` (the default store lands there) and
`.venv` (the examples call `.venv/bin/ctxlab`; a bare `ctxlab` finds the same one on PATH).
A block the suite must not run (a set-up command that installs things, a placeholder)
carries `<!-- example: skip (why) -->` on the line before its fence and is reported as
skipped with that reason.

Each file's script and each shell block run concurrently, each in a folder of its own (a
shell block's commands in order: later ones read what earlier ones stored); a block that
sweeps sweeps the short sample only. The module takes about 70 s of one worker (its
scripts run in their own processes, four at a time).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELLS = ("console", "bash", "sh")
FENCE = re.compile(
    r"(?:^<!-- example: skip \((?P<skip>.+?)\) -->\n)?^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```$",
    flags=re.S | re.M,
)
TIMEOUT = 300


@dataclass(frozen=True)
class Block:
    """One fenced code block: its file, first line, language, text and skip reason."""

    doc: Path
    line: int
    lang: str
    body: str
    skip: str | None

    @property
    def name(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    """The Python and shell blocks of `doc`, in order."""
    text = doc.read_text()
    found = []
    for match in FENCE.finditer(text):
        if match["lang"] == "python" or match["lang"] in SHELLS:
            line = text.count("\n", 0, match.start("lang")) + 1
            found.append(Block(doc, line, match["lang"], match["body"], match["skip"]))
    return found


def commands(block: Block) -> list[str]:
    """What bash runs for a shell block: a console block's `$ ` lines (with their `\\`
    continuations; other lines are the output shown), or a bash block whole."""
    if block.lang != "console":
        return [block.body]
    out: list[str] = []
    lines = iter(block.body.splitlines())
    for line in lines:
        if not line.startswith("$ "):
            continue
        command = line[2:]
        while command.endswith("\\"):
            command += "\n" + next(lines)
        out.append(command)
    return out


@dataclass
class Ran:
    """What one command or script did."""

    what: str
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> None:
        assert self.returncode == 0, f"{self.what}\nexit {self.returncode}\n{self.stderr[-3000:]}"
        assert "Traceback" not in self.stderr, f"{self.what}\n{self.stderr[-3000:]}"


SMALL = "deepagents_short_session.jsonl.xz"
"""The sample a block that sweeps gets as its whole `traces/` folder (the suite stays fast)."""


def _folder(root: Path, block: Block) -> Path:
    """A fresh folder laid out like the repository root, as the examples assume; a shell
    block that runs `ctxlab sweep` finds only the short sample in `traces/`."""
    folder = root / block.name.replace("/", "-").replace(":", "-")
    (folder / "data").mkdir(parents=True)
    if block.lang in SHELLS and re.search(r"\bctxlab sweep\b", block.body):
        (folder / "traces").mkdir()
        (folder / "traces" / SMALL).symlink_to(REPO / "traces" / SMALL)
    else:
        (folder / "traces").symlink_to(REPO / "traces")
    (folder / ".venv").symlink_to(REPO / ".venv")
    return folder


def _env(folder: Path) -> dict[str, str]:
    venv_bin = REPO / ".venv" / "bin"
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        "CTXLAB_FIGURES": str(folder / "figures"),
    }


def _run(argv: list[str], what: str, folder: Path) -> Ran:
    done = subprocess.run(
        argv, cwd=folder, env=_env(folder), capture_output=True, text=True, timeout=TIMEOUT
    )
    return Ran(what, done.returncode, done.stdout, done.stderr)


def run_block(block: Block, root: Path) -> tuple[Path, Ran | list[Ran]]:
    """Run `block` in a folder of its own: for the first Python block of a file, every Python
    block of the file in order as one script; for a shell block, its commands in order until
    one fails. Returns the folder and what ran."""
    folder = _folder(root, block)
    if block.lang == "python":
        script = folder / "examples.py"
        script.write_text(_script(block.doc))
        # run as a notebook runs it, from no file: a script file would also be imported by
        # the sweep's worker processes (multiprocessing's rule for `spawn` and `forkserver`),
        # which the README's code, unguarded, is not written for
        run_script = f"exec(compile(open({str(script)!r}).read(), {block.name!r}, 'exec'))"
        return folder, _run([sys.executable, "-c", run_script], block.name, folder)
    ran = []
    for command in commands(block):
        ran.append(_run(["bash", "-e", "-o", "pipefail", "-c", command], command, folder))
        if ran[-1].returncode != 0:
            break
    return folder, ran


def _script(doc: Path) -> str:
    """Every Python block of `doc` that is not skipped, in order, as one script."""
    return "\n".join(b.body for b in blocks(doc) if b.lang == "python" and b.skip is None)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Block, Future]]:
    """Every case's run, started at once on a small pool; each test waits on its own."""
    root = tmp_path_factory.mktemp("docs")
    todo = [p.values[0] for p in _cases() if not p.marks]
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        yield {block: pool.submit(run_block, block, root) for block in todo}


def _cases() -> list:
    """One case per shell block and one per file's Python script (at its first block)."""
    cases = []
    for doc in DOCS:
        found = blocks(doc)
        first_python = next((b for b in found if b.lang == "python" and b.skip is None), None)
        for block in found:
            if block.lang == "python" and block.skip is None and block is not first_python:
                continue  # part of the file's one script
            marks = [pytest.mark.skip(reason=block.skip)] if block.skip else []
            cases.append(pytest.param(block, id=block.name, marks=marks))
    return cases


def _chromium() -> bool:
    return bool(shutil.which("chromium") or Path("/usr/bin/chromium").exists())


@pytest.mark.parametrize("block", _cases())
def test_example_runs_as_printed(block: Block, runs: dict[Block, Future]) -> None:
    if block.lang == "python" and "plots.export(" in _script(block.doc) and not _chromium():
        pytest.skip("the example exports a figure, which needs chromium (apt-get install chromium)")
    folder, result = runs[block].result()
    if isinstance(result, list):
        assert result, f"{block.name}: a shell block with no command to run"
        for ran in result:
            ran.check()
        return
    result.check()
    check = CHECKS.get(block.doc.name)
    if check is not None:
        check(result, folder)


# ----------------------------------------------------------------------------- what they print


def _writing_a_policy(ran: Ran, folder: Path) -> None:
    """docs/writing-a-policy.md registers its policy, replays, sweeps and explores it."""
    script = "\n".join(b.body for b in blocks(REPO / "docs" / "writing-a-policy.md")[:1])
    policy_lines = [line for line in script.splitlines() if line.strip()]
    assert len(policy_lines) <= 60, "the example policy should stay short"
    out = ran.stdout
    peak, raw = map(int, re.search(r"peak: (\d+) raw: (\d+)", out).groups())
    assert peak < raw * 0.6  # digesting old results must shrink the long session's requests
    assert "mask_observations" in out
    assert "['keep', 'trigger']" in out  # the explorer's sliders are the numeric parameters
    assert "DigestOldResults(keep=1, trigger=20000)" in out
    with duckdb.connect(str(folder / "digest-sweep.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT count(*), count(DISTINCT params) FROM replays WHERE policy = ?",
            ["digest-old-results"],
        ).fetchone()
    assert rows == (6, 6)


def _readme(ran: Ran, folder: Path) -> None:
    """The README's sweep of the `traces` folder stored every trace x grid cell."""
    with duckdb.connect(str(folder / "data" / "ctxlab.duckdb"), read_only=True) as con:
        (cells,) = con.execute(
            "SELECT count(DISTINCT params) FROM replays WHERE policy = 'deepagents'"
        ).fetchone()
    assert cells >= 4
    assert (folder / "figure.pdf").stat().st_size > 0


CHECKS = {"writing-a-policy.md": _writing_a_policy, "README.md": _readme}
