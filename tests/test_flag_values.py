"""Every nonsense parameter value is refused in one line naming the flag, exit 2, before any
work; settings a trace cannot support raise `ctxlab.UnsupportedSettingError`; `ctxlab query`
has a time and a memory limit; a missing store folder is created with one line saying so."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import ctxlab
from ctxlab._cli.main import main
from ctxlab.policies import get, names
from tests.cli_text import messages

MESSAGES = [
    {"role": "user", "content": "list the files"},
    {"role": "assistant", "content": "a.py b.py"},
    {"role": "user", "content": "thanks"},
    {"role": "assistant", "content": "done"},
]

NONSENSE = [
    ("deepagents", "chars_per_token=0"),
    ("deepagents", "chars_per_token=-1"),
    ("deepagents", "tool_token_limit_before_evict=-1"),
    ("tool-result-offload", "tool_token_limit_before_evict=-1"),
    ("clear-tool-uses", "keep=-1"),
    ("claude-code", "autocompact_buffer=-1"),
    ("codex", "auto_compact_fraction=-0.5"),
    ("codex", "auto_compact_fraction=1.5"),
    ("inspect-trim", "preserve=2"),
    ("clear-tool-uses", "exclude_tools=bash"),
    ("observation-masking", "n=0"),
    ("openhands-recent", "max_events=x"),
    ("sliding-window", "include_system=3"),
]


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(MESSAGES))
    return path


@pytest.mark.parametrize(("policy", "setting"), NONSENSE)
def test_nonsense_settings_exit_2_in_one_line(
    trace_file: Path, policy: str, setting: str, capsys: pytest.CaptureFixture
) -> None:
    code = main(["replay", str(trace_file), "--policy", policy, "--set", setting])
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    (line,) = messages(out.err)
    assert line.startswith("ctxlab: error: argument --set: ") and setting.split("=")[0] in line


def test_a_summary_file_that_is_not_utf8_is_a_flag_error(
    trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    latin = tmp_path / "summary.txt"
    latin.write_bytes("résumé".encode("latin-1"))
    assert main(["replay", str(trace_file), "--summary-text-file", str(latin)]) == 2
    (line,) = messages(capsys.readouterr().err)
    assert "--summary-text-file" in line and "not UTF-8" in line


def test_every_numeric_field_refuses_text() -> None:
    """Each int or float parameter of every registered policy refuses a string."""
    for name in names():
        policy = get(name)
        for field in dataclasses.fields(policy):
            value = getattr(policy, field.name)
            if not isinstance(value, int | float) or isinstance(value, bool):
                continue
            with pytest.raises(ValueError, match=field.name):
                dataclasses.replace(policy, **{field.name: "many"})


def test_a_window_policy_without_a_window_is_an_unsupported_setting(trace_file: Path) -> None:
    (trace,) = ctxlab.load(trace_file)
    with pytest.raises(ctxlab.UnsupportedSettingError, match="window"):
        ctxlab.replay(trace, get("sliding-window", window=None))


def test_query_limits(trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = tmp_path / "new" / "folder" / "store.duckdb"
    assert main(["load", str(trace_file), "--db", str(db)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ctxlab: created folder {db.parent} for the store {db}"]
    slow = "SELECT count(*) FROM range(100000000000) a"
    assert main(["query", "--db", str(db), slow, "--timeout", "0.5"]) == 2
    assert "stopped after 0.5 s" in capsys.readouterr().err
    big = "SELECT list(range) FROM range(300000000)"
    assert main(["query", "--db", str(db), big, "--memory-limit", "64MB"]) == 2
    assert "memory limit (64MB" in capsys.readouterr().err
    for flag, value in (("--timeout", "-1"), ("--memory-limit", "lots"), ("--timeout", "x")):
        assert main(["query", "--db", str(db), "SELECT 1", flag, value]) == 2
        assert f"argument {flag}" in capsys.readouterr().err
    assert main(["query", "--db", str(db), "SELECT 1 AS x", "--format", "csv"]) == 0
    assert capsys.readouterr().out.split() == ["x", "1"]
