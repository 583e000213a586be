"""Every CLI flag with a bad value: one line naming the flag, the value and the valid forms,
exit 2, no traceback; and the policy parameter layer refuses the same values from Python."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import ctxlab
from ctxlab._cli.main import main
from ctxlab._store.sweep import SweepError, sweep
from ctxlab.policies import DeepAgents
from tests.cli_text import messages
from tests.synthetic import make_trace


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("traces") / "t.json"
    msgs = [{"role": "system", "content": "You are terse."}]
    for i in range(6):
        msgs += [
            {"role": "user", "content": f"step {i} " + "x" * 500},
            {"role": "assistant", "content": f"done {i}"},
        ]
    path.write_text(json.dumps({"model": "gpt-4o", "messages": msgs}))
    return path


def _run(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, list[str]]:
    """Exit code and stderr messages of `ctxlab ARGV` run in this process, each wrapped to the
    terminal (100 columns under pytest) and read back as one string (`tests.cli_text`)."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse exits itself
        code = exc.code
    return code, messages(capsys.readouterr().err)


def _refused(argv: list[str], capsys: pytest.CaptureFixture, *words: str) -> str:
    code, err = _run(argv, capsys)
    assert code == 2, err
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    for word in words:
        assert word in err[0], (word, err[0])
    return err[0]


SIZE_FORMS = "fraction:F"


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--trigger", "inf"], ["--trigger", "'inf'", SIZE_FORMS]),
        (["--trigger", "half"], ["--trigger", "'half'", SIZE_FORMS]),
        (["--keep", "-5"], ["--keep", "'-5'", SIZE_FORMS]),
        (["--set", "window=abc"], ["--set", "'window=abc'", "positive whole number"]),
        (["--set", "tools=bogus"], ["--set", "'tools=bogus'", "'deepagents'"]),
        (["--set", "max_output_tokens=-5"], ["--set", "max_output_tokens=-5", "0 or more"]),
        (["--set", "nonsense=1"], ["--set", "'nonsense=1'", "its parameters"]),
        (["--set", "window"], ["--set", "'window'", "name=value"]),
        (["--window", "0"], ["--window", "'0'", "positive whole number"]),
        (["--window", "-5"], ["--window", "'-5'", "positive whole number"]),
        (["--stress", "2"], ["--stress", "'2'", "fraction"]),
        (["--summary-text-file", "/no/such/file.txt"], ["--summary-text-file", "no such file"]),
        (["--policy", "nope"], ["--policy", "'nope'", "known:"]),
    ],
)
def test_replay_flags(
    trace_file: Path, capsys: pytest.CaptureFixture, flags: list[str], words: list[str]
) -> None:
    _refused(["replay", str(trace_file), *flags], capsys, *words)


def test_summary_text_file_that_is_a_directory(
    trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    for command in (["replay", str(trace_file)], ["compare", str(trace_file), "--policy", "raw"]):
        _refused(
            [*command, "--summary-text-file", str(tmp_path)],
            capsys,
            "--summary-text-file",
            "is a directory",
        )


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--grid", "window=-5"], ["--grid", "'window=-5'", "positive whole number"]),
        (["--grid", "window=abc"], ["--grid", "'window=abc'", "positive whole number"]),
        (["--grid", "max_output_tokens=-5"], ["--grid", "max_output_tokens=-5", "0 or more"]),
        (["--grid", "trigger=fraction:0.5,inf"], ["--grid", "'inf'", SIZE_FORMS]),
        (["--workers", "0"], ["--workers", "'0'", "1 or more"]),
        (["--workers", "-2"], ["--workers", "'-2'", "1 or more"]),
        (["--window", "0"], ["--window", "'0'", "positive whole number"]),
    ],
)
def test_sweep_flags(
    trace_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    flags: list[str],
    words: list[str],
) -> None:
    db = tmp_path / "s.duckdb"
    _refused(
        ["sweep", str(trace_file), "--db", str(db), "--policy", "deepagents", *flags],
        capsys,
        *words,
    )
    assert not db.exists()  # refused before any work


@pytest.mark.skipif(
    importlib.util.find_spec("grpc") is not None, reason="Ray's client is installed here"
)
def test_ray_address_without_rays_client(
    trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    db = tmp_path / "s.duckdb"
    address = "ray://127.0.0.1:10001"
    argv = ["sweep", str(trace_file), "--db", str(db), "--policy", "deepagents"]
    _refused(
        [*argv, "--backend", "ray", "--ray-address", address],
        capsys,
        "--ray-address",
        address,
        "ray[client]",
    )
    assert not db.exists()


def test_compare_window(trace_file: Path, capsys: pytest.CaptureFixture) -> None:
    _refused(
        ["compare", str(trace_file), "--policy", "deepagents", "--window", "0"],
        capsys,
        "--window",
        "'0'",
    )


def test_query_with_empty_sql(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = tmp_path / "s.duckdb"
    ctxlab.Store(db)
    for sql in ("", "  ;  "):
        _refused(["query", "--db", str(db), sql], capsys, "SQL", "SELECT")


@pytest.mark.parametrize("command", ["replay", "inspect", "load", "compare"])
def test_an_empty_directory_is_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    extra = {
        "load": ["--db", str(tmp_path / "s.duckdb")],
        "compare": ["--policy", "raw"],
    }.get(command, [])
    _refused([command, str(empty), *extra], capsys, str(empty), "no traces found")


def test_argparse_errors_are_one_line(capsys: pytest.CaptureFixture) -> None:
    _refused(["replay"], capsys, "ctxlab replay: error:", "PATH", "--help")


def test_good_flags_still_work(trace_file: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["replay", str(trace_file), "--window", "4000", "--trigger", "tokens:2000"]
    code, err = _run([*argv, "--keep", "messages:4", "--set", "max_output_tokens=0"], capsys)
    assert code == 0, err
    code, err = _run(["replay", str(trace_file), "--window", "none", "--trigger", "5000"], capsys)
    assert code == 0, err


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("deepagents", {"window": 0}, "window must be a positive whole number"),
        ("deepagents", {"window": -5}, "window must be a positive whole number"),
        ("deepagents", {"window": True}, "window must be a positive whole number"),
        ("deepagents", {"max_output_tokens": -5}, "max_output_tokens must be"),
        ("deepagents", {"tools": "bogus"}, "tools must be"),
        ("deepagents", {"stress": 1.5}, "stress must be a fraction"),
        ("claude-code", {"window": 0}, "window must be a positive whole number"),
        ("claude-code", {"max_output_tokens": -1}, "max_output_tokens must be"),
        ("sliding-window", {"window": -1}, "window must be a positive whole number"),
        ("clear-tool-uses+sliding-window", {"window": 0}, "window must be a positive"),
    ],
)
def test_policy_parameters_are_checked_in_python(name: str, params: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ctxlab.policies.get(name, **params)


def test_policy_defaults_and_good_values_build() -> None:
    for name in ctxlab.policies.names():
        ctxlab.policies.get(name)
    assert DeepAgents(window=1, max_output_tokens=0, tools=0).window == 1
    assert DeepAgents(window=None, tools=[{"name": "t"}]).window is None


@pytest.mark.parametrize("workers", [0, -1, True, 1.5])
def test_sweep_refuses_bad_worker_counts(tmp_path: Path, workers: object) -> None:
    db = tmp_path / "s.duckdb"
    with pytest.raises(SweepError, match="workers must be"):
        sweep([make_trace(10, seed=1)], "deepagents", store=db, workers=workers, progress=False)
    assert not db.exists()
