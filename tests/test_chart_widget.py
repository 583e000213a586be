"""`ChartWidget` in Python: a FigureWidget in every way the widgets use, whose anywidget module
is the small loader and whose plotly bundle travels once per kernel (the browser side is
tests/test_browser.py, including plotly loading slowly)."""

from __future__ import annotations

from importlib import metadata

import plotly.graph_objects as go

from ctxlab._view.widgets._common import figure_widget
from ctxlab._view.widgets.chart import (
    LOADER,
    ChartWidget,
    PlotlyBundle,
    plotly_bundle,
    shared_bundle,
)


def test_a_chart_is_a_figure_widget_with_a_small_module() -> None:
    chart = figure_widget(go.Figure(go.Scatter(y=[1, 2]), layout={"title": {"text": "t"}}), "c")
    assert isinstance(chart, ChartWidget) and isinstance(chart, go.FigureWidget)
    state = chart.get_state()
    assert state["_esm"] == LOADER.read_text() and len(state["_esm"]) < 20_000
    assert "c" in state["_dom_classes"]
    assert state["_widget_layout"]["title"]["text"] == "t"  # built in the constructor
    clicked = []
    chart.data[0].on_click(lambda *args: clicked.append(args))  # FigureWidget callbacks work
    chart.plotly_relayout({"title.text": "u"})
    assert chart.layout.title.text == "u"


def test_every_chart_names_the_one_bundle_of_the_installed_plotly() -> None:
    a, b = ChartWidget(), ChartWidget()
    bundle = shared_bundle()
    assert isinstance(bundle, PlotlyBundle)
    # the first state message already names it (the page reads it when the model initialises)
    for chart in (a, b):
        assert chart.get_state()["_bundle"] == f"IPY_MODEL_{bundle.model_id}"
        assert chart.get_state()["_bundle_key"] == f"plotly {metadata.version('plotly')}"
    assert bundle.bundle == plotly_bundle() and len(bundle.bundle) > 1_000_000
    assert b"FigureModel" in bundle.bundle  # plotly's own FigureWidget frontend, plotly.js in it


def test_a_closed_bundle_is_made_again() -> None:
    first = shared_bundle()
    first.close()
    chart = ChartWidget()
    assert chart._bundle is not first and chart._bundle.comm is not None


def test_the_first_state_message_holds_the_whole_figure(monkeypatch) -> None:
    """The page may draw a view before later updates are applied (anywidget holds them until
    the module initialised), so the comm's opening state must already hold data and layout."""
    import comm

    opened: list[dict] = []
    create = comm.create_comm

    def recording(**kwargs):
        opened.append(kwargs["data"]["state"])
        return create(**kwargs)

    monkeypatch.setattr(comm, "create_comm", recording)
    ChartWidget(data=[go.Bar(y=[1, 2, 3])], layout={"title": {"text": "whole"}})
    charts = [s for s in opened if s.get("_model_name") == "AnyModel" and "_widget_data" in s]
    assert len(charts) == 1, "one comm, opened once"
    assert charts[0]["_widget_layout"]["title"]["text"] == "whole"
    assert [t["type"] for t in charts[0]["_widget_data"]] == ["bar"]
