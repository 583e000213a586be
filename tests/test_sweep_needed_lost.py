"""`needed_lost` beside tokens and cost: in sweeps (computed in the worker, stored as facts), in
`ctxlab._evaluate.metrics.summary`, `ctxlab compare` and the `Compare` widget's table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import ctxlab
from ctxlab._cli.commands.compare import COLUMNS
from ctxlab._cli.main import main
from ctxlab._evaluate.evaluation import evaluate
from ctxlab._evaluate.metrics import needed_lost, summary
from ctxlab._replay.replay import replay
from ctxlab._store.store import Store
from ctxlab._store.sweep import sweep
from ctxlab._view.widgets.compare import metrics_table_html
from ctxlab.policies import get
from tests.samples import long_trace

REPO = Path(__file__).resolve().parents[1]
LONG = REPO / "traces" / "deepagents_long_session.jsonl.xz"
GRID = {"trigger": ["fraction:0.5", "fraction:0.85"], "keep": ["messages:4"]}
PARAMS = {"window": 30000, "keep": ("messages", 4)}
TRIGGERS = {"fraction:0.5": ("fraction", 0.5), "fraction:0.85": ("fraction", 0.85)}


@pytest.fixture(scope="module")
def trace() -> ctxlab.Trace:
    return long_trace()


@pytest.mark.parametrize("workers", [1, 2])
def test_every_cell_is_evaluated_and_its_facts_stored(
    tmp_path: Path, trace: ctxlab.Trace, workers: int
) -> None:
    """Serial and worker processes alike: each cell's `needed_lost` and stored facts are what
    `ctxlab.evaluate` gives on the same replay."""
    policy = get("langchain-summarization", window=30000)
    out = sweep(LONG, policy, GRID, store=tmp_path / "s.duckdb", workers=workers, progress=False)
    assert out.height == 2
    assert out.columns.index("needed_lost") > out.columns.index("cumulative_input_tokens")
    store = Store(tmp_path / "s.duckdb")
    for row in out.iter_rows(named=True):
        cell = get("langchain-summarization", **PARAMS, trigger=TRIGGERS[row["trigger"]])
        expected = evaluate(replay(trace, cell))
        assert row["needed_lost"] == expected.needed_lost
        assert store.facts(row["replay_key"]).drop("replay_key", "seq").equals(expected.facts)


def test_sweep_command_prints_needed_lost(capsys, tmp_path: Path) -> None:
    argv = ["sweep", str(LONG), "--db", str(tmp_path / "s.duckdb"), "--policy", "deepagents"]
    argv += ["--window", "30000", "--grid", "trigger=fraction:0.5", "--format", "json"]
    argv += ["--workers", "1"]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 1 and isinstance(rows[0]["needed_lost"], int)
    best = Store(tmp_path / "s.duckdb").query("SELECT best_needed_lost FROM trace_policy")
    assert best.item() == rows[0]["needed_lost"]


def test_summary_and_compare_report_needed_lost(capsys, trace: ctxlab.Trace) -> None:
    policies = ("deepagents", "langchain-summarization")
    expected = {
        name: evaluate(replay(trace, get(name, **PARAMS, trigger=("fraction", 0.5)))).needed_lost
        for name in policies
    }
    result = replay(trace, get("langchain-summarization", **PARAMS, trigger=("fraction", 0.5)))
    assert summary(result, trace)["needed_lost"] == expected["langchain-summarization"]
    assert "needed_lost" in COLUMNS
    argv = ["compare", str(LONG), "--window", "30000", "--json"]
    for name in policies:
        argv += ["--policy", name]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)["replays"]
    got = {r["policy"]: r["needed_lost"] for r in rows if r["trace_id"] == trace.trace_id}
    window_only = {
        name: evaluate(replay(trace, get(name, window=30000))).needed_lost for name in policies
    }
    assert got == window_only
    assert main([a for a in argv if a != "--json"]) == 0  # the table
    out = capsys.readouterr().out
    header = "".join(line.strip() for line in out.split("---")[0].splitlines())
    assert "needed_" in header and "lost" in header  # shown, its header wrapped at '_'
    assert "needed_lost:" in out  # and explained in the legend


def test_compare_widget_table_has_needed_lost(trace: ctxlab.Trace) -> None:
    replays = [replay(trace, get(n, **PARAMS)) for n in ("deepagents", "langchain-summarization")]
    html = metrics_table_html(replays, ["a", "b"], trace)
    rows = [row.split("</tr>")[0] for row in html.split("<tr>")[1:]]
    column = re.findall(r"<th[^>]*>(.*?)</th>", rows[0]).index("needed lost")
    for row, r in zip(rows[1:], replays, strict=True):
        assert re.findall(r"<td[^>]*>(.*?)</td>", row)[column] == f"{needed_lost(r):,}"
