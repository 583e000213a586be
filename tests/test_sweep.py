"""Sweeps: every trace x grid cell, parallel, resumable, crash-safe, same rows on Ray."""

from __future__ import annotations

import atexit
import json
import multiprocessing.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

import ctxlab
from ctxlab._cli.main import main
from ctxlab._replay.replay import replay
from ctxlab._store.store import Store
from ctxlab._store.sweep import SweepError, parse_grid, sweep
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import DEFAULT_PROMPT, Extractive
from tests.cli_text import messages
from tests.synthetic import make_trace
from tests.waiting import Lines, wait_exit

REPO = Path(__file__).resolve().parents[1]
GRID = {"trigger": ["fraction:0.5", "fraction:0.85"], "keep": ["messages:6", "fraction:0.1"]}
COLUMNS = [
    "trace_id",
    "trigger",
    "keep",
    "peak_context_tokens",
    "cumulative_input_tokens",
    "events",
]


@pytest.fixture(scope="module")
def traces() -> list[ctxlab.Trace]:
    return [make_trace(50, seed=s, model="claude-sonnet-4-5", provider="anthropic") for s in (1, 2)]


def test_grid_cells_match_single_replays(tmp_path: Path, traces: list) -> None:
    out = sweep(
        traces,
        DeepAgents(window=40_000),
        GRID,
        store=tmp_path / "s.duckdb",
        workers=1,
        progress=False,
    )
    assert out.height == 8 and out["trigger"].to_list()[:2] == ["fraction:0.5", "fraction:0.5"]
    first = out.row(0, named=True)
    direct = replay(
        traces[0], DeepAgents(window=40_000, trigger=("fraction", 0.5), keep=("messages", 6))
    )
    assert first["peak_context_tokens"] == direct.turns["context_tokens"].max()
    assert first["events"] == direct.events.height
    store = Store(tmp_path / "s.duckdb")
    for row in out.iter_rows(named=True):  # contents travel once per sweep, yet every cell has them
        files = store.files(row["replay_key"])
        offloaded = files.filter(~files["path"].str.starts_with("/conversation_history/"))
        assert offloaded["content"].null_count() == 0
    files = store.files(first["replay_key"])
    assert set(files["path"]) == set(direct.files)
    for path, content in zip(files["path"], files["content"], strict=True):
        assert content is None or content.encode() == direct.file_bytes(path)


RAY_GAVE_UP = "timed out during startup"
"""What `ray start` prints when its own startup clock (30 s, fixed in ray/_private/node.py) ran
out before its raylet registered, as on a crowded 2-core machine: the head is started again."""


class RayHead:
    """A one-CPU Ray head of a test's own (`ray start --head --block`), in a temporary folder
    (short: Ray's socket paths must fit 107 bytes) and on a free port. `ready()` blocks until
    Ray itself says it is up: `ray start` prints "Ray runtime started." after its GCS and raylet
    answered its health checks, so nothing here sleeps or polls. When Ray's own fixed startup
    clock ran out first (`RAY_GAVE_UP`), it starts again, up to `attempts` times."""

    def __init__(self, attempts: int = 3) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="ray-"))
        self.address = ""
        self.attempts = attempts
        self.proc: subprocess.Popen[str] | None = None

    def ready(self) -> str:
        failures = []
        for _ in range(self.attempts):
            port = _free_port()
            self.address = f"127.0.0.1:{port}"
            self.proc = subprocess.Popen(
                [str(Path(sys.executable).parent / "ray"), "start", "--head", "--block",
                 f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
                 "--disable-usage-stats", f"--temp-dir={self.folder}"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                stdin=subprocess.DEVNULL, start_new_session=True,
                env={
                    **os.environ,
                    # the driver `sweep` starts connects without a token, as to its own Ray
                    "RAY_AUTH_MODE": "disabled",
                    # `ray start` asks the GCS whether its raylet registered, each ask bounded
                    # by this (60 s by default); on a crowded machine the first ask outlasted
                    # that. A longer bound lets the ask succeed instead of timing out.
                    "RAY_gcs_server_request_timeout_seconds": "300",
                },
            )  # fmt: skip
            assert self.proc.stdout is not None
            output = Lines(self.proc.stdout)
            try:
                output.wait(r"Ray runtime started", f"Ray's head at {self.address}", 300)
                return self.address
            except EOFError as exc:
                self.stop()
                if RAY_GAVE_UP not in str(exc):
                    raise
                failures.append(output.text)
        raise TimeoutError(
            f"Ray's head gave up starting {self.attempts} times:\n" + "\n---\n".join(failures)
        )

    def stop(self) -> None:
        """Stop the head and every process it started (its process group), nothing else."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        if self.proc is not None:
            self.proc.wait(timeout=60)


@pytest.fixture()
def ray_head() -> Iterator[tuple[Future[str], RayHead]]:
    """A `RayHead` starting in the background (the test has local work to do meanwhile): the
    future gives its address once Ray says it is up."""
    head = RayHead()
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        yield pool.submit(head.ready), head
    finally:
        pool.shutdown(wait=True)
        head.stop()
        shutil.rmtree(head.folder, ignore_errors=True)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_parallel_resume_and_ray_give_the_same_rows(
    tmp_path: Path, traces: list, ray_head: tuple[Future[str], RayHead]
) -> None:
    # Ray against the resumed store: a fresh sweep on Ray stores what half a sweep plus its
    # resumption stored (one Ray CPU: the comparison needs the backend, not its parallelism).
    # Ray's head starts in the background (the fixture) and the Ray sweep runs on a thread
    # once Ray says it is up, into a store of its own, while the local sweeps run here.
    up, _ = ray_head

    def on_ray_when_up() -> pl.DataFrame:
        address = up.result()  # Ray's own readiness line
        return sweep(
            traces,
            DeepAgents(window=40_000),
            GRID,
            store=tmp_path / "ray.duckdb",
            backend="ray",
            ray_address=address,
            progress=False,
        )

    with ThreadPoolExecutor(max_workers=1) as pool:
        on_ray = pool.submit(on_ray_when_up)
        path = tmp_path / "s.duckdb"
        half = sweep(
            traces,
            DeepAgents(window=40_000),
            {**GRID, "keep": ["fraction:0.1"]},
            store=path,
            workers=2,
            progress=False,
        )
        assert half.height == 4
        assert Store(path).query("SELECT count(*) n FROM replays")["n"][0] == 4
        full = sweep(traces, DeepAgents(window=40_000), GRID, store=path, workers=2, progress=False)
        assert Store(path).query("SELECT count(*) n FROM replays")["n"][0] == 8  # 4 resumed, 4 new
        resumed = full.filter(full["keep"] == "fraction:0.1").select(COLUMNS)
        assert resumed.equals(half.select(COLUMNS))
        ray = on_ray.result()
    assert ray.select(COLUMNS).equals(full.select(COLUMNS))
    a = Store(path).query("SELECT * EXCLUDE (created_at) FROM replays ORDER BY 1")
    b = Store(tmp_path / "ray.duckdb").query(
        "SELECT * EXCLUDE (created_at) FROM replays ORDER BY 1"
    )
    assert a.equals(b)
    assert Store(path).turns().equals(Store(tmp_path / "ray.duckdb").turns())


def test_bad_requests_fail_before_any_work(tmp_path: Path, traces: list) -> None:
    path = tmp_path / "s.duckdb"
    with pytest.raises(SweepError, match="unknown parameter 'trigerr'.*known: .*trigger"):
        sweep(traces, "deepagents", {"trigerr": [0.5]}, store=path, progress=False)
    with pytest.raises(SweepError, match="grid point"):
        sweep(
            traces,
            DeepAgents(window=40_000),
            {"keep": [("fraction", 5.0)]},
            store=path,
            progress=False,
        )
    with pytest.raises(SweepError, match="missing.json.*no such file"):
        sweep([*traces, tmp_path / "missing.json"], "deepagents", {}, store=path, progress=False)
    with pytest.raises(SweepError, match="unknown policy"):
        sweep(traces, "nope", {}, store=path, progress=False)
    with pytest.raises(SweepError, match="expects name=v1"):
        parse_grid(["trigger"])
    assert not path.exists() or Store(path).query("SELECT count(*) n FROM replays")["n"][0] == 0


def test_cli_sweep_query_and_load(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    trace_file = tmp_path / "t.json"
    msgs = [{"role": "system", "content": "You are terse."}]
    for i in range(30):
        msgs += [
            {"role": "user", "content": f"step {i} " + "x" * 3000},
            {"role": "assistant", "content": f"done {i}"},
        ]
    trace_file.write_text(json.dumps({"model": "gpt-4o", "messages": msgs}))
    db = tmp_path / "c.duckdb"
    assert main(["load", str(trace_file), "--db", str(db)]) == 0
    assert main(["load", str(trace_file), "--db", str(db)]) == 0
    assert "0 new in" in capsys.readouterr().out
    summary = tmp_path / "summary.txt"
    summary.write_text("the user asked for steps")
    args = [
        "sweep",
        str(trace_file),
        "--db",
        str(db),
        "--policy",
        "deepagents",
        "--window",
        "20000",
        "--grid",
        "trigger=0.3,0.6",
        "--summary-text-file",
        str(summary),
        "--format",
        "csv",
    ]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("trigger,trace_id,policy") and len(lines) == 3
    assert (
        main(
            [
                "query",
                "--db",
                str(db),
                "SELECT kind, count(*) AS n FROM events GROUP BY 1 ORDER BY 1",
                "--format",
                "json",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert {r["kind"] for r in rows} >= {"summarize"}
    assert (
        main(
            [
                "sweep",
                str(trace_file),
                "--db",
                str(db),
                "--policy",
                "deepagents",
                "--grid",
                "window=big",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "argument --grid: invalid value 'window=big'" in err and len(messages(err)) == 1


KILLED = """
import sys
from ctxlab.policies import DeepAgents
from ctxlab._store.sweep import sweep
from tests.synthetic import make_trace
traces = [make_trace(80, seed=s, model="claude-sonnet-4-5", provider="anthropic") for s in range(3)]
grid = {"trigger": [f"fraction:{f / 100}" for f in range(20, 90, 20)]}
sweep(traces, DeepAgents(window=40_000), grid, store=sys.argv[1], workers=1, progress=False,
      batch_seconds=0.0)
"""


TELL_SAVES = """
from ctxlab._store.store import Store
_save_many = Store.save_many
def _told(self, batch):
    _save_many(self, batch)
    print("saved", len(batch), flush=True)
Store.save_many = _told
"""
"""Prefixed to a child sweep script: after each committed batch the child prints `saved N`, the
line the test waits for (the store's real `save_many` does the work)."""


def test_killed_sweep_leaves_only_whole_replays_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    proc = subprocess.Popen(
        [sys.executable, "-c", TELL_SAVES + KILLED, str(path)],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    try:  # a cell per transaction (batch_seconds=0): the third commit, then the kill
        Lines(proc.stdout).wait(r"^saved 1$", "third stored cell of the killed sweep", 300, 3)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    store = Store(path)
    counts = store.query(
        "SELECT r.replay_key, r.trace_id, count(t.turn) AS turns FROM replays r "
        "LEFT JOIN turns t USING (replay_key) GROUP BY ALL"
    )
    n = counts.height
    assert 3 <= n < 3 * 4  # killed midway: a transaction per cell, 12 cells
    assert set(counts["turns"].to_list()) == {80}  # every stored replay is whole
    orphans = store.query(
        "SELECT count(*) n FROM turns WHERE replay_key NOT IN (SELECT replay_key FROM replays)"
    )
    assert orphans["n"][0] == 0
    # Rerunning resumes: the stored cells are skipped, the rest are added, and stored rows
    # equal a fresh computation.
    namespace: dict = {}
    exec(textwrap.dedent(KILLED).split("sweep(traces")[0].replace("import sys\n", ""), namespace)
    traces, grid = namespace["traces"], namespace["grid"]
    out = sweep(traces, DeepAgents(window=40_000), grid, store=path, workers=2, progress=False)
    assert out.height == 3 * 4 and store.query("SELECT count(*) n FROM replays")["n"][0] == 12
    row = out.row(0, named=True)
    fresh = replay(traces[0], DeepAgents(window=40_000, trigger=("fraction", 0.2)))
    assert row["cumulative_input_tokens"] == fresh.turns["context_tokens"].sum()
    assert isinstance(out, pl.DataFrame)


@dataclass(frozen=True)
class WhereSummarized(Extractive):
    """`Extractive` (same name, so the same replay keys and summaries) that records which
    process summarised, is slow in the parent so that the child processes surely get cells,
    and in a child can fail (`fail="raise"`) or die (`fail="exit"`)."""

    folder: str = ""
    parent: int = 0
    fail: str = ""

    def summarize(self, messages: Sequence, *, prompt: str = DEFAULT_PROMPT) -> str:
        Path(self.folder, str(os.getpid())).touch()
        if os.getpid() == self.parent:
            time.sleep(0.05)
        elif self.fail == "raise":
            raise RuntimeError("summariser failed in a worker")
        elif self.fail == "exit":
            os._exit(7)
        return super().summarize(messages, prompt=prompt)


@pytest.fixture()
def private_tmp(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sweep's temporary folder (traces sent to workers, their Parquet parts) lands here.

    A short path of its own, not under `tmp_path`: multiprocessing's fork server listens on a
    Unix socket inside it, and a socket path may not exceed 107 bytes, which pytest-xdist's
    longer `tmp_path` (`.../popen-gw0/test_...`) plus `pymp-*/listener-*` does. Removed at
    exit by a multiprocessing finalizer ranked after the one that removes its `pymp-*` folder
    (exit priority -100): an `atexit` handler ran first, and that finalizer then printed a
    `FileNotFoundError` traceback after the suite passed."""
    folder = Path(tempfile.mkdtemp(prefix="ctxlab-test-"))
    multiprocessing.util.Finalize(
        None, shutil.rmtree, args=(folder,), kwargs={"ignore_errors": True}, exitpriority=-101
    )
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _sweep_folders(folder: Path) -> list[Path]:
    """Sweep folders left behind (multiprocessing keeps its own `pymp-*` folder there)."""
    return list(folder.glob("ctxlab-sweep-*"))


def test_worker_processes_store_the_same_rows_as_one_process(
    tmp_path: Path, traces: list, private_tmp: Path
) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    marking = WhereSummarized(folder=str(pids), parent=os.getpid())
    grid = {**GRID, "keep": ["messages:6", "messages:20", "fraction:0.1"]}
    args = (traces, DeepAgents(window=40_000), grid)
    many = sweep(*args, store=tmp_path / "2.duckdb", summarizer=marking, workers=2, progress=False)
    one = sweep(*args, store=tmp_path / "1.duckdb", workers=1, progress=False)
    assert len(list(pids.iterdir())) >= 2  # both worker processes replayed cells
    assert many.drop("summarizer").equals(one.drop("summarizer"))
    a, b = Store(tmp_path / "2.duckdb"), Store(tmp_path / "1.duckdb")
    for sql in (
        "SELECT * EXCLUDE (created_at) FROM replays ORDER BY replay_key",
        "SELECT * FROM turns ORDER BY replay_key, turn",
        "SELECT * FROM events ORDER BY replay_key, seq",
        "SELECT * FROM files ORDER BY replay_key, path",
        "SELECT * FROM blobs ORDER BY sha256",
    ):
        assert a.query(sql).equals(b.query(sql)), sql
    assert _sweep_folders(private_tmp) == []  # trace files and parts are gone


@pytest.mark.parametrize(
    ("fail", "error"),
    [("raise", "summariser failed in a worker"), ("exit", r"sweep worker \d+ died")],
)
def test_a_failing_worker_stops_the_sweep_with_whole_replays_only(
    tmp_path: Path, traces: list, private_tmp: Path, fail: str, error: str
) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    failing = WhereSummarized(folder=str(pids), parent=os.getpid(), fail=fail)
    path = tmp_path / "s.duckdb"
    with pytest.raises(RuntimeError, match=error):
        sweep(
            traces,
            DeepAgents(window=40_000),
            GRID,
            store=path,
            summarizer=failing,
            workers=2,
            progress=False,
            batch_seconds=0.0,
        )
    counts = Store(path).query(
        "SELECT r.replay_key, count(t.turn) AS turns FROM replays r "
        "LEFT JOIN turns t USING (replay_key) GROUP BY ALL"
    )
    assert set(counts["turns"].to_list()) <= {50}  # what the parent stored is whole
    assert _sweep_folders(private_tmp) == []


@dataclass(frozen=True)
class SlowInWorkers(Extractive):
    """`Extractive` that, in a worker process, writes its pid as a line to the FIFO `report`
    and then takes `seconds` per summary (a slow model, simulated): a worker is surely in the
    middle of a cell when the test kills the parent."""

    report: str = ""
    parent: int = 0
    seconds: float = 60.0

    def summarize(self, messages: Sequence, *, prompt: str = DEFAULT_PROMPT) -> str:
        if os.getpid() != self.parent:
            with open(self.report, "w") as fifo:
                fifo.write(f"{os.getpid()}\n")
            time.sleep(self.seconds)
        return super().summarize(messages, prompt=prompt)


KILLED_PARALLEL = """
import os, sys
from ctxlab.policies import DeepAgents
from ctxlab._store.sweep import sweep
from tests.synthetic import make_trace
from tests.test_sweep import SlowInWorkers
traces = [make_trace(50, seed=s, model="claude-sonnet-4-5", provider="anthropic") for s in (1, 2)]
slow = SlowInWorkers(report=sys.argv[2], parent=os.getpid())
sweep(traces, DeepAgents(window=40_000), {"trigger": ["fraction:0.3", "fraction:0.5"]},
      store=sys.argv[1], summarizer=slow, workers=2, progress=False)
"""


def test_killed_parallel_sweep_takes_its_workers_along_and_its_folder_is_cleared(
    tmp_path: Path, traces: list, private_tmp: Path
) -> None:
    pids = tmp_path / "pids"
    os.mkfifo(pids)
    reports = Lines(pids)  # open before the workers write to it
    env = {**os.environ, "TMPDIR": str(private_tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_PARALLEL, str(tmp_path / "k.duckdb"), str(pids)],
        cwd=REPO,
        env=env,
    )
    try:
        reports.wait(r"^\d+$", "second sweep worker summarising", 180, count=2)
        workers = [int(line) for line in reports.lines]
        assert len(set(workers)) == 2, "both workers should be summarising"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    # each worker is 60 s from the end of its summary: only its parent's death ends it sooner
    wait_exit(workers, "sweep workers after their parent was killed", 30)
    assert len(_sweep_folders(private_tmp)) == 1  # what SIGKILL leaves behind
    sweep(traces, DeepAgents(window=40_000), GRID, store=tmp_path / "next.duckdb", workers=2,
          progress=False)  # fmt: skip
    assert _sweep_folders(private_tmp) == []  # the next sweep cleared the dead one's folder


SHORT = Path(__file__).resolve().parents[1] / "traces" / "deepagents_short_session.jsonl.xz"


@pytest.mark.parametrize(
    "given",
    [str(SHORT), SHORT, [str(SHORT)], [SHORT], "trace", ["trace"]],
    ids=["str", "Path", "list-of-str", "list-of-Path", "Trace", "list-of-Trace"],
)
def test_sweep_takes_what_load_takes(tmp_path: Path, given) -> None:
    trace = ctxlab.load(SHORT)[0]
    given = trace if given == "trace" else [trace] if given == ["trace"] else given
    out = sweep(
        given,
        "deepagents",
        {"window": [20_000]},
        store=tmp_path / "s.duckdb",
        workers=1,
        progress=False,
    )
    assert out["trace_id"].to_list() == [trace.trace_id]


def test_sweep_refuses_what_is_not_a_path_or_trace(tmp_path: Path) -> None:
    with pytest.raises(SweepError, match="got int"):
        sweep(5, "deepagents", {}, store=tmp_path / "s.duckdb", progress=False)
    with pytest.raises(SweepError, match="each item must be a path or a Trace; got dict"):
        sweep([{}], "deepagents", {}, store=tmp_path / "s.duckdb", progress=False)
    with pytest.raises(SweepError, match="nowhere.*no such file"):
        sweep("nowhere", "deepagents", {}, store=tmp_path / "s.duckdb", progress=False)


LONG_TMPDIR_SWEEP = """
import sys
import ctxlab
traces = ctxlab.load(sys.argv[1])
rows = ctxlab.sweep(traces, "deepagents", {"window": [20000, 30000]}, store=sys.argv[2],
                    workers=2, progress=False)
print(rows.height)
"""


def test_a_temp_folder_too_long_for_the_fork_server_still_sweeps(tmp_path: Path) -> None:
    """The fork server's Unix socket cannot live under a 90-character TMPDIR (107 bytes at most
    for the path); the sweep spawns its workers instead of failing with a raw OSError."""
    long_tmp = Path(tempfile.gettempdir()) / ("t" * 90)
    long_tmp.mkdir(exist_ok=True)
    atexit.register(shutil.rmtree, long_tmp, ignore_errors=True)
    done = subprocess.run(
        [sys.executable, "-c", LONG_TMPDIR_SWEEP, str(SHORT), str(tmp_path / "s.duckdb")],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(long_tmp)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "2"


def test_cli_sweep_from_a_folder_holding_a_ctxlab_folder(tmp_path: Path) -> None:
    """Run from the parent of a clone (any folder with a `ctxlab/` in it), the workers import
    the installed ctxlab, not that folder as a namespace package (it has no `__version__`)."""
    (tmp_path / "ctxlab").mkdir()
    script = Path(sys.executable).with_name("ctxlab")
    done = subprocess.run(
        [str(script), "sweep", str(SHORT), "--db", "s.duckdb", "--policy", "deepagents"]
        + ["--window", "200000", "--grid", "trigger=fraction:0.5,fraction:0.85", "--workers", "2"],
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "100"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "fraction:0.85" in done.stdout
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines() + done.stderr.replace("\r", "\n").splitlines()
    assert all(len(line) <= 100 for line in lines), lines
