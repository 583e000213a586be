"""The store cannot be damaged through ctxlab: user SQL only reads (nothing attached, copied,
exported, loaded or written, also through a hard link to the store), a broken or foreign
store file is refused in one line and left byte for byte as it was, a second writer gets one
line from every command, and a `ctxlab load` killed mid-write leaves the store whole."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from ctxlab._cli.main import main
from ctxlab._errors import QueryRefusedError, StoreError
from ctxlab._store.store import Store
from ctxlab._store.sweep import sweep
from ctxlab._store.sweep_folders import OWNER, PREFIX, clear_dead
from ctxlab.policies import DeepAgents
from tests.cli_text import messages
from tests.synthetic import make_trace
from tests.test_store import HOLD  # a process holding a write transaction on a store
from tests.waiting import Lines

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def store_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with two traces and a few replays (module-wide; tests only read it)."""
    path = tmp_path_factory.mktemp("store") / "s.duckdb"
    traces = [
        make_trace(30, seed=s, model="claude-sonnet-4-5", provider="anthropic") for s in (1, 2)
    ]
    sweep(
        traces,
        DeepAgents(window=20_000),
        {"trigger": ["fraction:0.5", "fraction:0.85"]},
        store=path,
        workers=1,
        progress=False,
    )
    return path


def _write_trace_file(folder: Path) -> Path:
    path = folder / "t.json"
    msgs = [{"role": "system", "content": "You are terse."}]
    for i in range(8):
        msgs += [
            {"role": "user", "content": f"step {i} " + "x" * 800},
            {"role": "assistant", "content": f"done {i}"},
        ]
    path.write_text(json.dumps({"model": "gpt-4o", "messages": msgs}))
    return path


@pytest.fixture()
def trace_file(tmp_path: Path) -> Path:
    return _write_trace_file(tmp_path)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cli(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, list[str], str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, messages(out.err), out.out


def _counts(path: Path) -> dict[str, int]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("traces", "messages", "replays", "turns")
        }


# ----------------------------------------------------------------------------- query sandbox


def test_attach_read_write_then_delete_is_refused(
    store_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    other = tmp_path / "other.duckdb"
    with duckdb.connect(str(other)) as con:
        con.execute("CREATE TABLE turns AS SELECT range AS i FROM range(5)")
    link = tmp_path / "link.duckdb"
    os.link(store_file, link)  # the store itself under another name
    before, other_sha = _counts(store_file), _sha(other)
    for target, table in ((other, "turns"), (link, "turns"), (store_file, "turns")):
        for sql in (
            f"ATTACH '{target}' AS o (READ_WRITE); DELETE FROM o.{table}",
            f"SELECT 1; ATTACH '{target}' AS o",
            f"ATTACH '{target}' AS o (READ_ONLY)",
        ):
            code, err, out = _cli(["query", "--db", str(store_file), sql], capsys)
            assert code == 2 and len(err) == 1, err
            assert "ATTACH refused" in err[0] and str(store_file) in err[0]
            assert out == ""
    assert _counts(store_file) == before and _sha(other) == other_sha
    with duckdb.connect(str(other), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM turns").fetchone()[0] == 5


@pytest.mark.parametrize(
    ("sql", "what"),
    [
        ("COPY (SELECT * FROM traces) TO '{out}/x.csv'", "COPY refused"),
        ("COPY traces TO '{out}/x.parquet' (FORMAT parquet)", "COPY refused"),
        ("EXPORT DATABASE '{out}/export'", "EXPORT refused"),
        ("INSTALL httpfs", "LOAD refused"),
        ("LOAD httpfs", "LOAD refused"),
        ("SET enable_external_access = true", "SET refused"),
        ("SET lock_configuration = false", "SET refused"),
        ("RESET lock_configuration", "SET refused"),
        ("DELETE FROM turns", "DELETE refused"),
        ("DROP TABLE turns", "DROP refused"),
        ("UPDATE traces SET model = 'x'", "UPDATE refused"),
        ("CREATE TABLE t AS SELECT 1", "CREATE refused"),
        ("DETACH s", "DETACH refused"),
        ("SELECT * FROM read_csv('{out}/secret.csv')", "disabled by configuration"),
        ("SELECT * FROM read_text('{out}/secret.csv')", "disabled by configuration"),
        ("SELECT * FROM '{out}/secret.csv'", "disabled by configuration"),
        ("SELECT * FROM glob('{out}/*')", "disabled by configuration"),
        ("EXPLAIN ANALYZE COPY traces TO '{out}/y.csv'", "disabled by configuration"),
    ],
)
def test_statements_that_reach_beyond_the_store_are_refused(
    store_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture, sql: str, what: str
) -> None:
    (tmp_path / "secret.csv").write_text("a,b\n1,2\n")
    before = _sha(store_file)
    sql = sql.format(out=tmp_path)
    code, err, out = _cli(["query", "--db", str(store_file), sql], capsys)
    assert code == 2 and len(err) == 1, err
    assert what in err[0] and out == ""
    with pytest.raises(QueryRefusedError):
        Store(store_file, read_only=True).query(sql)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.csv"]
    assert _sha(store_file) == before


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) AS n FROM traces",
        "WITH r AS (SELECT * FROM replays) SELECT count(*) AS n FROM r",
        "FROM replay_summary SELECT count(*) AS n",
        "SELECT count(*) AS n FROM events_by_kind",
        "SELECT count(*) AS n FROM trace_policy",
        "DESCRIBE turns",
        "SHOW TABLES",
        "SUMMARIZE turns",
        "PRAGMA table_info('turns')",
        "EXPLAIN SELECT * FROM turns",
    ],
)
def test_reading_statements_and_views_still_work(
    store_file: Path, capsys: pytest.CaptureFixture, sql: str
) -> None:
    code, err, out = _cli(["query", "--db", str(store_file), sql, "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)


def test_documented_views_answer(store_file: Path) -> None:
    store = Store(store_file, read_only=True)
    assert store.replays().height == 4
    assert store.query("SELECT * FROM trace_policy").height == 2
    assert (
        store.query(
            "SELECT count(*) n FROM turns WHERE replay_key IN (SELECT unnest(?))",
            [store.replays()["replay_key"].to_list()],
        )["n"][0]
        > 0
    )


# ----------------------------------------------------------------------------- commands


def _commands(db: Path, trace_file: Path) -> dict[str, list[str]]:
    return {
        "load": ["load", str(trace_file), "--db", str(db)],
        "sweep": ["sweep", str(trace_file), "--db", str(db), "--policy", "deepagents",
                  "--workers", "1"],
        "query": ["query", "--db", str(db), "SELECT count(*) AS n FROM traces"],
    }  # fmt: skip


# ----------------------------------------------------------------------------- second writer


@dataclass
class SecondWriter:
    """A holder's first line, and every command started against the store it holds."""

    held: str
    commands: dict[str, subprocess.Popen[str]]


@pytest.fixture(scope="module", autouse=True)
def second_writer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecondWriter]:
    """Every command of `_commands`, each a process of its own, started against a store that
    another process holds a write transaction on.

    Started with the module's first test: each command waits out the store's lock timeout
    (10 s) before it gives up, a wait the module's other tests fill;
    `test_a_second_writer_gets_one_line_from_every_command`, last, reads what they said."""
    folder = tmp_path_factory.mktemp("second_writer")
    db = folder / "s.duckdb"
    Store(db)
    holder = subprocess.Popen(  # holds the lock until killed (its stdin is never written)
        [sys.executable, "-c", HOLD, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    procs: dict[str, subprocess.Popen[str]] = {}
    try:
        assert holder.stdout is not None
        held = holder.stdout.readline().strip()
        if held == "holding":
            procs = {
                name: subprocess.Popen(
                    [sys.executable, "-m", "ctxlab._cli.main", *argv],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    cwd=REPO,
                )
                for name, argv in _commands(db, _write_trace_file(folder)).items()
            }
        yield SecondWriter(held, procs)
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait(timeout=30)
        holder.kill()
        holder.wait(timeout=30)


# ----------------------------------------------------------------------------- broken files


@pytest.mark.parametrize("command", ["load", "sweep", "query"])
def test_a_file_that_is_not_a_store_is_refused_and_untouched(
    command: str, tmp_path: Path, trace_file: Path, capsys: pytest.CaptureFixture
) -> None:
    db = tmp_path / "notes.duckdb"
    db.write_text("my notes, not a database\n" * 50)
    before = _sha(db)
    code, err, out = _cli(_commands(db, trace_file)[command], capsys)
    assert code == 2 and len(err) == 1, err
    assert str(db) in err[0] and "not a usable DuckDB store file" in err[0]
    assert _sha(db) == before and not Path(f"{db}.wal").exists()


@pytest.mark.parametrize("command", ["load", "sweep", "query"])
@pytest.mark.parametrize("keep", [0.5, 0.8])
def test_a_truncated_store_is_refused_and_untouched(
    command: str,
    keep: float,
    store_file: Path,
    tmp_path: Path,
    trace_file: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    data = store_file.read_bytes()
    db = tmp_path / "cut.duckdb"
    db.write_bytes(data[: int(len(data) * keep)])
    before = _sha(db)
    code, err, out = _cli(_commands(db, trace_file)[command], capsys)
    assert code == 2 and len(err) == 1, err
    assert str(db) in err[0] and "damaged" in err[0]
    assert out == ""  # the query did not answer as if nothing were wrong
    assert _sha(db) == before and not Path(f"{db}.wal").exists()
    with pytest.raises(StoreError, match="damaged"):
        Store(db, read_only=True)


def test_a_whole_store_still_opens(store_file: Path) -> None:
    assert Store(store_file, read_only=True).query("SELECT count(*) n FROM traces")["n"][0] == 2


# ----------------------------------------------------------------------------- kill -9 in load


def _write_traces(folder: Path, count: int) -> None:
    folder.mkdir()
    for n in range(count):
        msgs = [{"role": "system", "content": f"You are agent {n}."}]
        for i in range(40):
            msgs += [
                {"role": "user", "content": f"trace {n} step {i} " + "y" * 1500},
                {"role": "assistant", "content": f"done {n}.{i}"},
            ]
        (folder / f"t{n:04d}.json").write_text(json.dumps({"model": "gpt-4o", "messages": msgs}))


LOAD_TELLING = """
import contextlib, sys
from ctxlab._cli.main import main
from ctxlab._store.store import Store

_transaction = Store._transaction

@contextlib.contextmanager
def _told(self):
    with _transaction(self) as con:
        print("writing", file=sys.stderr, flush=True)
        yield con

Store._transaction = _told
sys.exit(main(sys.argv[1:]))
"""
"""`ctxlab load` (its real `main`) telling on stderr when a write transaction has begun."""


def test_load_killed_mid_write_leaves_the_store_whole(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    _write_traces(traces, 400)
    db = tmp_path / "s.duckdb"
    Store(db)
    proc = subprocess.Popen(
        [sys.executable, "-c", LOAD_TELLING, "load", str(traces), "--db", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert proc.stderr is not None
    try:  # the one transaction that stores all 400 traces has begun: kill it mid-write
        Lines(proc.stderr).wait(r"^writing$", "the load's write transaction", 300)
        assert proc.poll() is None, "load finished before it could be killed mid-write"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    store = Store(db)  # opens: not damaged
    counts = store.query(
        "SELECT (SELECT count(*) FROM traces) AS traces, "
        "(SELECT count(*) FROM messages) AS messages, "
        "(SELECT coalesce(sum(messages), 0) FROM traces) AS expected, "
        "(SELECT count(*) FROM messages WHERE trace_key NOT IN "
        "  (SELECT trace_key FROM traces)) AS orphans"
    ).row(0, named=True)
    assert counts["traces"] in (0, 400)  # one transaction: all or nothing
    assert counts["messages"] == counts["expected"] and counts["orphans"] == 0
    assert main(["load", str(traces), "--db", str(db)]) == 0  # and it loads again
    assert store.query("SELECT count(*) n FROM traces")["n"][0] == 400


# ----------------------------------------------------------------------------- sweep folders


def test_only_dead_sweeps_folders_are_cleared(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    gone = int(dead.stdout)
    host = __import__("socket").gethostname()

    def folder(name: str, pid: int, files: tuple[str, ...] = ("a.turns.parquet",),
               owner: bool = True) -> Path:  # fmt: skip
        path = tmp_path / name
        path.mkdir()
        if owner:
            (path / OWNER).write_text(json.dumps({"pid": pid, "host": host}))
        for f in files:
            (path / f).write_bytes(b"PAR1")
        return path

    cleared = folder(f"{PREFIX}{gone}-abc", gone)
    live = folder(f"{PREFIX}{os.getpid()}-abc", os.getpid())
    no_owner = folder(f"{PREFIX}{gone}-def", gone, owner=False)
    other_files = folder(f"{PREFIX}{gone}-ghi", gone, files=("notes.txt",))
    other_name = folder(f"mine-{gone}-abc", gone)
    wrong_pid = folder(f"{PREFIX}{os.getpid()}-xyz", gone)
    assert clear_dead(tmp_path) == [cleared]
    for kept in (live, no_owner, other_files, other_name, wrong_pid):
        assert kept.is_dir() and any(kept.iterdir())


# ----------------------------------------------------------------------------- second writer (last)


def test_a_second_writer_gets_one_line_from_every_command(second_writer: SecondWriter) -> None:
    assert second_writer.held == "holding"
    for name, proc in second_writer.commands.items():
        out, err = proc.communicate(timeout=120)
        lines = [line for line in messages(err) if not line.startswith("sweep")]
        assert proc.returncode == 2, (name, err)
        assert len(lines) == 1 and "in use by another process" in lines[0], (name, err)
        assert "Traceback" not in err
