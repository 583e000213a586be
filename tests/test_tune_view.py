"""`plots.pareto` and `widgets.Tune` on a small real study of the bundled samples: the figure
draws every trial, the front on both sets and the reference points, and exports like every
figure; a click on a point opens it on a trace beside the recorded settings."""

from __future__ import annotations

from pathlib import Path

import pytest

import ctxlab
from ctxlab import plots
from ctxlab.widgets import Compare, ThresholdExplorer, Tune
from tests.figure_gallery import REPO, tune_study


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ctxlab.TuneStudy:
    return tune_study(tmp_path_factory.mktemp("tune") / "t.duckdb")


@pytest.fixture(scope="module")
def traces() -> list[ctxlab.Trace]:
    return list(ctxlab.load(REPO / "traces"))


def test_pareto_draws_trials_front_and_references(study: ctxlab.TuneStudy, tmp_path: Path) -> None:
    fig = plots.pareto(study)
    named = {t.name: t for t in fig.data if t.name}
    front = named["front, tuning traces"]
    assert sorted(front.customdata) == study.pareto
    held = named["front, held out"]
    assert list(held.customdata) == list(front.customdata)
    assert list(named["defaults, held out"].customdata) == ["defaults"]
    drawn = sum(len(t.customdata) for n, t in named.items() if n.endswith("tuning traces"))
    drawn += sum(len(named[n].customdata) for n in ("other trials", "infeasible") if n in named)
    assert drawn == len(study.trials)
    assert fig.layout.xaxis.title.text == "cost" and fig.layout.yaxis.title.text == "needed lost"
    path = plots.export(fig, tmp_path / "pareto.html")
    assert b"Plotly.newPlot" in Path(path).read_bytes()
    with pytest.raises(ValueError, match="not an objective"):
        plots.pareto(study, "peak")


def test_tune_widget_opens_a_point_beside_the_recorded_settings(
    study: ctxlab.TuneStudy, traces: list[ctxlab.Trace]
) -> None:
    widget = Tune(study, traces)
    first = study.pareto[0]
    opened = widget.select(first)
    assert isinstance(opened, Compare)
    trace = widget.traces[widget.trace_pick.value]
    assert trace.trace_id in study.splits["holdout"]  # held-out traces come first
    base = "recorded" if study.recorded.get(trace.trace_id) else "defaults"
    assert opened.labels == [f"trial {first}", base]
    assert opened.replays[0].params == study.policy_for(first).params()
    widget.view.value = "explorer"  # reopens the same point in the explorer
    explorer = widget.opened
    assert isinstance(explorer, ThresholdExplorer)
    window = int(study.point(first).params["window"])
    if explorer.control("window").min <= window <= explorer.control("window").max:
        assert explorer.control("window").value == window
    with pytest.raises(KeyError):
        widget.select(999)
