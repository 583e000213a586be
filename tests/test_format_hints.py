"""The "unknown trace format" error: the three closest formats and where the rest are listed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab._cli.main import main
from ctxlab._ingest.format_hints import closest, descriptions
from tests.cli_text import messages


def test_the_closest_formats_share_the_files_keys() -> None:
    first = closest([{"sessionId": "s", "uuid": "u", "parentUuid": None}])[0]
    assert first.startswith("a Claude Code session")
    assert closest({"schema_version": "ATIF-v1.4", "steps": []})[0].startswith("a Harbor")
    assert len(closest({"x": 1})) == 3 and len(descriptions()) > 10


def test_the_error_fits_the_terminal_and_points_to_the_list(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"sessionId": "s", "uuid": "u"}))
    assert main(["inspect", str(path)]) == 2
    (error,) = messages(capsys.readouterr().err)
    assert "odd.json" in error and "closest: a Claude Code session" in error
    assert "docs/formats.md" in error and len(error) < 500
