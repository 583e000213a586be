"""The CLI fits a terminal: every command's table stays within `$COLUMNS` on the bundled
samples, `--wide` shows everything, numbers are grouped and rounded, multi-line text is one
line, legends explain columns and event shorthand, counts agree with their nouns, a bad SPEC
names the valid forms, `replay` says which settings it used, and `--help` gives each option's
default."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path

import pytest

from ctxlab._cli.main import build_parser, main
from ctxlab._cli.tables import table
from ctxlab._store.store import Store
from tests.cli_text import messages

REPO = Path(__file__).resolve().parents[1]
LONG = REPO / "traces" / "deepagents_long_session.jsonl.xz"
SHORT = REPO / "traces" / "deepagents_short_session.jsonl.xz"


DEMO_COLUMNS = 60
"""The width the module's `demo` runs at: the narrowest `test_every_table_fits_the_terminal`
checks, so that test reads this run's output instead of running the demo a second time."""


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`ctxlab demo` into a fresh store at `DEMO_COLUMNS` columns: the store and what it printed."""
    db = tmp_path_factory.mktemp("store") / "demo.duckdb"
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setenv("COLUMNS", str(DEMO_COLUMNS))
        assert main(["demo", "--db", str(db)]) == 0
    return db, out.getvalue()


@pytest.fixture(scope="module")
def demo_db(demo_run: tuple[Path, str]) -> Path:
    """A store the demo filled: the samples and their Deep Agents replays."""
    return demo_run[0]


@pytest.fixture
def unknown_model_trace(tmp_path: Path) -> Path:
    """A message list whose model has no profile: its window is unknown."""
    msgs = [{"role": "system", "content": "You are terse.\nVery terse."}]
    for i in range(8):
        msgs += [
            {"role": "user", "content": f"step {i} " + "x" * 2000},
            {"role": "assistant", "content": f"done {i}"},
        ]
    path = tmp_path / "acme.json"
    path.write_text(json.dumps({"model": "acme-unprofiled-1", "messages": msgs}))
    return path


def _out(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[str, str]:
    assert main(argv) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    return captured.out, captured.err


def _widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _commands(demo_db: Path, tmp_path: Path) -> dict[str, list[str]]:
    return {
        "policies": ["policies"],
        "inspect": ["inspect", str(REPO / "traces")],
        "load": ["load", str(SHORT), "--db", str(tmp_path / "load.duckdb")],
        "query traces": ["query", "--db", str(demo_db), "SELECT * FROM traces"],
        "query replay_summary": ["query", "--db", str(demo_db), "SELECT * FROM replay_summary"],
        "compare": [
            "compare",
            str(LONG),
            "--policy",
            "deepagents",
            "--policy",
            "openhands-observation-masking",
            "--window",
            "40000",
        ],  # fmt: skip
        "replay": ["replay", str(LONG), "--stress", "0.1"],
        "replay all turns": ["replay", str(SHORT), "--all-turns"],
        "check-replay": ["check-replay", str(LONG)],
        "demo": ["demo", "--db", str(tmp_path / "demo.duckdb")],
        "sweep": [
            "sweep",
            str(SHORT),
            "--policy",
            "deepagents",
            "--workers",
            "1",
            "--grid",
            "trigger=fraction:0.5,tokens:3000",
            "--db",
            str(tmp_path / "sweep.duckdb"),
        ],  # fmt: skip
    }


@pytest.mark.parametrize(
    ("columns", "commands"),
    [(60, None), (100, ("policies", "query traces", "query replay_summary", "replay all turns"))],
    ids=["60-all", "100-quick"],
)
def test_every_table_fits_the_terminal(
    columns: int,
    commands: tuple[str, ...] | None,
    demo_run: tuple[Path, str],
    demo_db: Path,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    paths = str(tmp_path_factory.getbasetemp())  # a long store path is not cut: it stays usable
    for name, argv in _commands(demo_db, tmp_path).items():
        if commands is not None and name not in commands:
            continue  # the slow ones once, at the narrower width
        if name == "demo" and columns == DEMO_COLUMNS:
            out = demo_run[1]  # this very command, run into a fresh store at this width
        else:
            out, _ = _out(argv, capsys)
        assert out.strip(), name
        lines = [line for line in out.splitlines() if paths not in line]
        assert _widest("\n".join(lines)) <= columns, (
            name, [x for x in lines if len(x) > columns]
        )  # fmt: skip


def test_wide_shows_every_column_and_whole_cells(
    demo_db: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    sql = "SELECT * FROM traces"
    frame = Store(demo_db, read_only=True).query(sql)
    narrow, _ = _out(["query", "--db", str(demo_db), sql], capsys)
    assert "more columns not shown: " in narrow and "--wide shows every column" in narrow
    wide, _ = _out(["query", "--db", str(demo_db), sql, "--wide"], capsys)
    header = wide.splitlines()[0].split()
    assert header == frame.columns
    prompt = frame["system_prompt"][0]
    assert "\n" in prompt  # the samples' system prompts span lines ...
    assert " ".join(prompt.split()) in wide  # ... and --wide shows them whole, on one line
    assert len(wide.splitlines()) == 2 + frame.height  # header, rule, one line per row


def test_multi_line_cells_stay_on_one_line(
    demo_db: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    sql = "SELECT trace_id, system_prompt FROM traces"
    out, _ = _out(["query", "--db", str(demo_db), sql], capsys)
    lines = out.splitlines()
    assert len(lines) == 2 + Store(demo_db, read_only=True).query(sql).height
    assert all(line.endswith("…") for line in lines[2:])  # cut, not spilled onto more lines


def test_numbers_are_grouped_and_rounded(
    demo_db: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    sql = "SELECT policy, mean_context_tokens, peak_baseline_tokens FROM replay_summary"
    out, _ = _out(["query", "--db", str(demo_db), sql], capsys)
    means = Store(demo_db, read_only=True).query(sql)["mean_context_tokens"].to_list()
    for mean in means:
        assert f"{mean:,.1f}" in out and repr(mean) not in out
    assert "170,283" in out
    csv, _ = _out(["query", "--db", str(demo_db), sql, "--format", "csv"], capsys)
    assert repr(means[0]) in csv  # CSV and JSON keep every digit


def test_replay_says_what_it_used_and_what_it_lists(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out, err = _out(["replay", str(LONG), "--stress", "0.1"], capsys)
    assert "window 200,000 (model profile of claude-sonnet-4-5)" in out
    assert "trigger fraction:0.1 = 20,000 tokens (from stress 0.1)" in out
    assert "turns with compaction events (53 of 159; --all-turns lists every turn)" in out
    assert "summarize(143)" in out and "summarize(73): 73 messages replaced by a summary" in out
    assert "messages: messages in the request" in out
    assert "warning" not in err
    out, _ = _out(["replay", str(SHORT), "--all-turns"], capsys)
    assert "every turn (6):" in out
    assert "trigger fraction:0.85 = 170,000 tokens (default with a known window)" in out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["0"], ["5"])]
    assert len(rows) == 2  # turns 0 and 5 listed although neither has an event


def test_replay_warns_when_the_window_is_unknown(
    unknown_model_trace: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out, err = _out(["replay", str(unknown_model_trace)], capsys)
    assert "window unknown (no model profile for 'acme-unprofiled-1')" in out
    assert "trigger tokens:170000 (built-in fallback without a window)" in out
    (warning,) = err.strip().splitlines()
    assert warning.startswith("ctxlab: warning: ") and "give --window N" in warning
    out, err = _out(["replay", str(unknown_model_trace), "--window", "30000"], capsys)
    assert "window 30,000 (from --window)" in out and not err


def test_counts_agree_with_their_nouns(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out, _ = _out(["load", str(SHORT), "--db", str(tmp_path / "s.duckdb")], capsys)
    assert out.startswith("1 trace read; 1 new in ") and "1 trace stored in all" in out
    out, _ = _out(["load", str(LONG), "--db", str(tmp_path / "s.duckdb")], capsys)
    assert out.startswith("1 trace read (and 1 subagent conversation); 2 new in ")
    out, _ = _out(["inspect", str(SHORT)], capsys)
    assert "1 trace by format: 1 langsmith-ops" in out
    out, _ = _out(["replay", str(SHORT)], capsys)
    assert ": 6 turns, 0 events," in out and "no turn has a compaction event" in out


@pytest.mark.parametrize(
    "argv",
    [["--trigger", "half"], ["--keep", "half"], ["--set", "trigger=half"], ["--trigger", "x:1"]],
    ids=str,
)
def test_a_bad_spec_names_the_valid_forms(argv: list[str], capsys: pytest.CaptureFixture) -> None:
    assert main(["replay", str(SHORT), *argv]) == 2
    (line,) = messages(capsys.readouterr().err)
    assert "could not convert" not in line
    for form in ("fraction:F", "tokens:N", "messages:N", "e.g. fraction:0.5"):
        assert form in line, line


def test_a_count_parameter_refuses_text(capsys: pytest.CaptureFixture) -> None:
    argv = ["replay", str(SHORT), "--policy", "clear-tool-uses", "--set", "trigger=half"]
    assert main(argv) == 2
    (line,) = messages(capsys.readouterr().err)
    assert "'half' is not a number; trigger takes a whole number here (default 100000)" in line


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_help_gives_every_option_a_meaning_and_default(command: str) -> None:
    sub = _subcommands()[command]
    for action in sub._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        assert action.help, (command, action.option_strings)
        flag = isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction)
        if not flag:
            text = action.help.lower()
            assert "default" in text or "required" in text, (command, action.option_strings)
    usage = sub.format_usage()
    assert "deepagents," not in usage and "raw," not in usage  # no policy list in usage


def test_query_format_sweep_grid_and_backend_help() -> None:
    subs = _subcommands()
    text = subs["query"].format_help() + subs["sweep"].format_help()
    for words in ("csv: a header line", "every combination is a cell", "ray: tasks on a Ray"):
        assert words in " ".join(text.split()), words


def test_table_layout_rules() -> None:
    rows = [
        [
            "c0134879-8fae-52e4-a492-01c6d3f9ed2f",
            "line one\nline two\nline three",
            24886.2,
            1234567,
        ],
        ["c0134879-8fae-52e4-a492-01c6d3f9ed2f/toolu_019gHSWF", "[cleared]", 0.5, None],
    ]
    columns = ("trace_id", "text", "mean_context_tokens", "count")
    out = table(columns, rows, width=40)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 40
    assert "24,886.2\n" in out and " 0.5\n" in out  # one count of decimals per column
    assert "[cleared]" in out and "line one line two line three" not in out  # cut, one line
    assert "line one line two…" in out
    ids = [line.split()[0] for line in lines if line.startswith("c0")]
    assert len(set(ids)) == 2 and all("…" in i for i in ids)  # cut in the middle: apart
    wide = table(columns, rows, wide=True)
    assert "line one line two line three" in wide
    assert "c0134879-8fae-52e4-a492-01c6d3f9ed2f/toolu" in wide
    assert "1,234,567" in wide
    dropped = table(columns, rows, width=24)
    assert "2 more columns not shown" in " ".join(dropped.split())
    legend = table(columns, rows, width=60, legend="count: how many")
    assert legend.splitlines()[-1] == "count: how many"
