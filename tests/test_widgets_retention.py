"""`widgets.Retention` and `plots.retention`: real replays, real evaluations, real widgets.

The figure's numbers are read back against the evaluations' own frames; the widget is driven
as a user would (toggle, dropdown, Export button); hostile trace text must come out escaped.
"""

from __future__ import annotations

import ipywidgets as W
import plotly.graph_objects as go
import polars as pl
import pytest

import ctxlab
from ctxlab import plots
from ctxlab._view.plots.retention import STATUS_LABELS, needed_by_status
from ctxlab.policies import get
from ctxlab.summarizers import Fixed
from ctxlab.widgets import Retention
from tests.test_event_cards import DEEP, EVIL, LANGCHAIN, planted
from tests.test_widgets import _rendered

MASKING = get("observation-masking")


@pytest.fixture(scope="module")
def trace() -> ctxlab.Trace:
    return planted()


@pytest.fixture(scope="module")
def replays(trace) -> list[ctxlab.Replay]:
    return [ctxlab.replay(trace, p) for p in (DEEP, LANGCHAIN, MASKING)]


@pytest.fixture(scope="module")
def evaluations(replays) -> list:
    return [ctxlab.evaluate(r) for r in replays]


@pytest.fixture(autouse=True)
def figures(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLAB_FIGURES", str(tmp_path / "figures"))
    return tmp_path / "figures"


def _bars(fig: go.Figure, name: str, xaxis: str = "x") -> list[go.Bar]:
    return [t for t in fig.data if t.type == "bar" and t.name == name and t.xaxis == xaxis]


def test_figure_reads_the_evaluations_frames(evaluations) -> None:
    fig = plots.retention(evaluations, labels=["deep", "lc", "mask"], shares=False)
    for i, ev in enumerate(evaluations):
        axis = "x" if i == 0 else f"x{i + 1}"
        survival = {r["category"]: r for r in ev.survival.iter_rows(named=True)}
        for status, label in STATUS_LABELS.items():
            (bar,) = _bars(fig, label, axis)
            assert list(bar.x) == list(survival)  # every category this trace has
            assert list(bar.y) == [survival[c][status] for c in survival]
    # bottom left: needed facts by where they were when needed, per policy (rows in order)
    needed = [t for t in fig.data if t.type == "bar" and t.orientation == "h"]
    lost = next(t for t in needed if t.name == STATUS_LABELS["lost"])
    assert list(lost.y) == ["deep", "lc", "mask"]
    assert list(lost.x) == [needed_by_status(ev.facts)["lost"] for ev in evaluations]
    assert list(lost.x) == [ev.needed_lost for ev in evaluations]
    assert lost.x[0] == 0 and lost.x[1] >= 1  # the history file keeps what deepagents drops
    # no probes were run: the panel says so instead of drawing zeros
    assert any("no probes run" in (a.text or "") for a in fig.layout.annotations)


def test_figure_shares_are_fractions_of_each_category(evaluations) -> None:
    fig = plots.retention(evaluations[:1])
    total = [0.0] * evaluations[0].survival.height
    for label in STATUS_LABELS.values():
        (bar,) = _bars(fig, label)
        total = [a + b for a, b in zip(total, bar.y, strict=True)]
    assert all(abs(t - 1) < 1e-9 for t in total)
    assert fig.layout.yaxis.tickformat == ".0%"


def test_figure_draws_probe_scores_beside_their_ceiling(replays, evaluations) -> None:
    from tests.context_model import ContextModel

    probed = ctxlab.evaluate(replays[1], model=ContextModel())
    assert probed.probes.height and probed.probes["score"].null_count() < probed.probes.height
    fig = plots.retention([evaluations[0], probed], labels=["deep", "lc probed"])
    score = next(t for t in fig.data if t.name == "score (compacted)")
    ceiling = next(t for t in fig.data if t.name == "ceiling (full context)")
    scored = probed.probes.filter(pl.col("score").is_not_null())
    assert list(score.y) == ["lc probed"]
    assert score.x[0] == pytest.approx(scored["score"].mean())
    assert ceiling.x[0] == pytest.approx(scored["ceiling_score"].mean())
    assert ceiling.x[0] >= score.x[0]
    missing = next(t for t in fig.data if t.type == "scatter" and t.mode == "text")
    assert list(missing.y) == ["deep"] and list(missing.text) == ["no probes run"]


def test_retention_widget_state(replays, evaluations) -> None:
    with pytest.raises(ValueError, match="at least one"):
        Retention()
    other = ctxlab.evaluate(ctxlab.replay(planted(12), LANGCHAIN))
    other.trace_id = "another"
    with pytest.raises(ValueError, match="one trace"):
        Retention(evaluations[0], other)
    w = Retention(*replays, labels=["deep", "lc", "mask"])  # replays are evaluated here
    assert isinstance(w, W.VBox) and isinstance(w.figure, go.FigureWidget)
    assert [ev.needed_lost for ev in w.evaluations] == [ev.needed_lost for ev in evaluations]
    assert w.figure.layout.yaxis.tickformat == ".0%"
    w.shares.value = False
    counts = plots.retention(evaluations, labels=w.labels, shares=False)
    assert list(w.figure.data[0].y) == list(counts.data[0].y)
    assert w.figure.layout.yaxis.tickformat == ",d"
    # headline table: one row per policy with its needed-but-lost count
    for label, ev in zip(w.labels, evaluations, strict=True):
        assert f"<td>{label}</td><td>{ev.facts.height}</td>" in w.table.value
    assert "not run" in w.table.value
    # the needed-but-lost list follows the dropdown
    assert "data-count='0'" in w.lost.value  # deepagents keeps a history file
    w.policy.value = 1
    lost = evaluations[1].facts.filter(pl.col("status_when_needed") == "lost")
    assert f"data-count='{lost.height}'" in w.lost.value and lost.height >= 1
    assert "/repo/src/module_01.py" in w.lost.value


def test_retention_exports_every_format(evaluations, figures) -> None:
    w = Retention(evaluations)  # a list works like separate arguments
    for fmt in ("png", "svg", "pdf", "html"):
        w.exporter.name.value = "retention_test"
        w.exporter.format.value = fmt
        w.exporter.button.click()
        out = figures / f"retention_test.{fmt}"
        data = out.read_bytes()
        assert {
            "png": data[:8] == b"\x89PNG\r\n\x1a\n",
            "svg": b"<svg" in data[:2000],
            "pdf": data[:5] == b"%PDF-",
            "html": b"Plotly.newPlot" in data,
        }[fmt], fmt
        assert "wrote" in w.exporter.status.value


def test_retention_escapes_hostile_trace_text() -> None:
    trace = planted(evil=True)
    fixed = Fixed("Reading files.")  # a summary without the task: LangChain loses it
    evaluations = [ctxlab.evaluate(ctxlab.replay(trace, p, fixed)) for p in (DEEP, LANGCHAIN)]
    facts = pl.concat([ev.facts for ev in evaluations])
    assert facts.filter(pl.col("fact").str.contains("<script>")).height  # planted and found
    w = Retention(*evaluations, labels=[EVIL, "b"])
    w.policy.value = 1  # langchain-summarization lost the task the last message repeats
    assert "ctx-needed-lost" in w.lost.value and "&lt;script&gt;alert(" in w.lost.value
    texts = []
    for i in range(len(w.policy.options)):
        w.policy.value = i
        texts += _rendered(w)
    texts += [str(a.text) for a in w.figure.layout.annotations]
    joined = "\n".join(texts)
    assert "<script" not in joined and "&lt;script&gt;" in joined


def test_labels_alike_in_what_is_shown_stay_apart(evaluations) -> None:
    long = "deepagents(" + "x" * 60
    fig = plots.retention(evaluations[:2], labels=[long + "a)", long + "b)"])
    rows = next(t for t in fig.data if t.type == "bar" and t.orientation == "h").y
    assert len(set(rows)) == 2 and rows[0].startswith("0: ") and rows[1].startswith("1: ")
    with pytest.raises(ValueError, match="1 labels for 2 evaluations"):
        plots.retention(evaluations[:2], labels=["one"])
