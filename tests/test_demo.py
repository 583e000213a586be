"""The README's main command: the demo loads, replays and stores the bundled samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab._cli.main import main
from ctxlab._store.store import Store


def test_demo_stores_and_replays_the_samples(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = tmp_path / "demo.duckdb"
    assert main(["demo", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "2 traces loaded" in out and "stress 0.10" in out
    store = Store(db, read_only=True)
    assert store.traces().height == 3  # two samples + the long session's subagent
    summary = store.replays()
    assert summary.height == 4
    long = summary.filter(summary["turns"] == 159)
    assert long["events"].min() >= 4  # four tool results over 80,000 chars are offloaded
    assert main(["demo", "--db", str(db)]) == 0  # rerunning changes nothing
    assert Store(db, read_only=True).replays().height == 4
