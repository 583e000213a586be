"""Every line the CLI prints fits `COLUMNS`, warnings and errors included, on real traces."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ctxlab._cli.main import main
from ctxlab._cli.tables import fit

FILES = (
    "samples/langchain-tracer-ops_deepagents_subagent.json",  # a subagent: long trace ids
    "real-traces/otel-genai-openinference-attr-fixtures/otel_genai_client_span_tool_calls.json.gz",
    "real-traces/anthropic-managed-agents-events/anthropic_managed_mcp_tools_reject.jsonl.gz",
)
COMMANDS = (
    ["inspect"],
    ["replay", "--window", "200000"],
    ["evaluate"],
    ["check-replay"],
    ["calibrate"],
)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_line_fits_100_columns(
    shared: Path,
    command: list[str],
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    for name in FILES:
        path = str(shared / "data" / name)
        assert main([command[0], path, *command[1:]]) == 0, name
        captured = capsys.readouterr()
        lines = re.split(r"[\r\n]", captured.out + captured.err)
        assert captured.out.strip()
        too_long = [line for line in lines if len(line) > 100]
        assert not too_long, (name, too_long)


def test_a_path_wider_than_the_terminal_breaks_after_a_slash() -> None:
    """A file deep in a folder (a corpus run's `events/event-<uuid>.json`) is wider than 100
    columns: it is cut after a `/`, and the pieces put together give the path back."""
    path = "/data/corpus/openhands-v1-sdk/" + "cd9456" * 8 + "/events/" + "e" * 60 + ".json"
    lines = fit(f"ctxlab: error: {path}: unknown trace format", 100, paths=True).splitlines()
    assert all(len(line) <= 100 for line in lines), lines
    assert "".join(line.strip() for line in lines[1:-1]) == path + ":"
    assert all(line.endswith("/") for line in lines[1:-2])
    short = fit("ctxlab: error: /data/a.json: unknown trace format", 100, paths=True)
    assert short == "ctxlab: error: /data/a.json: unknown trace format"


def test_a_terminal_no_wider_than_the_indent_still_ends() -> None:
    """`COLUMNS=2` with a two-space indent: every piece still takes a character of the path
    (the cut once found no room and looped for ever), and the pieces give it back."""
    path = "/data/corpus/" + "x" * 30 + "/broken.json"
    lines = fit(f"{path}: unknown", 2, paths=True).splitlines()
    assert "".join(line.strip() for line in lines) == f"{path}:unknown"
    assert all(len(line) <= 3 for line in lines), lines
