"""Charts a reader understands at a glance: the y axis zooms to the data when they use less
than a third of the chart (and on request), a log-scale toggle, and titles that name the trace
(its name, or its first request) instead of a bare UUID, escaped where rendered as HTML.

Real widgets and real replays; the expected ranges are computed from the replays' own frames.
"""

from __future__ import annotations

import dataclasses
import math

import plotly.graph_objects as go
import pytest
from langchain_core.messages import AIMessage, HumanMessage

import ctxlab
from ctxlab import plots
from ctxlab._trace import from_messages
from ctxlab._view.widgets._common import y_axis_layout
from ctxlab.policies import DeepAgents
from ctxlab.widgets import Compare, Scrubber, ThresholdExplorer
from tests.synthetic import make_trace

UUID = "019e1625-789d-76c0-80ab-3724b5ddb799"


@pytest.fixture(scope="module")
def trace() -> ctxlab.Trace:
    made = make_trace(150, fmt="anthropic", model="claude-sonnet-4-5", provider="anthropic")
    return dataclasses.replace(made, trace_id=UUID)


@pytest.fixture(scope="module")
def stressed(trace):
    policy = DeepAgents(stress=0.1)
    return policy, ctxlab.replay(trace, policy)


@pytest.fixture(autouse=True)
def figures(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLAB_FIGURES", str(tmp_path / "figures"))


def _window(policy, trace) -> int:
    return plots.thresholds(policy, trace)["window"]


def _data_top(fig) -> float:
    """The highest point of the data a fitted axis must show: the stacked context, the
    baseline, the recording (every trace but the reference lines)."""
    stacked = [list(t.y) for t in fig.data if t.stackgroup]
    top = max(map(sum, zip(*stacked, strict=True)), default=0)
    for t in fig.data:
        if not t.stackgroup and t.meta != "reference" and t.y is not None:
            top = max([top, *(v for v in t.y if v is not None)])
    return float(top)


def test_scrubber_zoom_keeps_the_baseline_and_the_recording(trace, stressed) -> None:
    """Under stress the context sits low, but the uncompacted baseline climbs past a third of
    the window: `auto` shows everything and `data` fits the baseline and the recording too
    (fitting the context alone pushed them off the chart)."""
    policy, replay = stressed
    peak = replay.turns["context_tokens"].max()
    baseline = replay.turns["baseline_tokens"].max()
    assert peak < _window(policy, trace) / 3 <= baseline
    s = Scrubber(replay, trace, policy=policy)
    assert s.yaxis.zoom.value == "auto"
    assert s.figure.layout.yaxis.autorange is True
    s.yaxis.zoom.value = "window"
    assert s.figure.layout.yaxis.autorange is True and s.figure.layout.yaxis.range is None
    s.yaxis.zoom.value = "data"
    top = _data_top(s.figure)
    assert top >= baseline
    assert list(s.figure.layout.yaxis.range) == pytest.approx([0, top * 1.08])
    s.slider.value = 3  # moving the cursor keeps the zoom
    assert list(s.figure.layout.yaxis.range) == pytest.approx([0, top * 1.08])


def test_log_scale_toggle(trace, stressed) -> None:
    policy, replay = stressed
    s = Scrubber(replay, trace, policy=policy)
    s.yaxis.log_scale.value = True
    axis = s.figure.layout.yaxis
    assert axis.type == "log"
    lowest = replay.turns["context_tokens"].filter(replay.turns["context_tokens"] > 0).min()
    peak = replay.turns["context_tokens"].max()
    low, high = axis.range
    assert 10**low <= lowest and 10**high >= peak  # every point of the context on the chart
    s.yaxis.log_scale.value = False
    assert s.figure.layout.yaxis.type == "linear"


def test_full_window_when_the_data_fill_it(trace) -> None:
    policy = DeepAgents()  # deepagents' defaults: the context climbs to the trigger
    replay = ctxlab.replay(trace, policy)
    assert replay.turns["baseline_tokens"].max() >= _window(policy, trace) / 3
    data = plots.context_trace_dicts(replay, lines=plots.thresholds(policy, trace))
    top = max(replay.turns["context_tokens"].max(), replay.turns["baseline_tokens"].max())
    if replay.turns["context_tokens"].max() >= top / 3:
        assert y_axis_layout(data, "auto", False)["yaxis.autorange"] is True
    assert y_axis_layout(data, "window", False)["yaxis.autorange"] is True
    with pytest.raises(ValueError, match="auto, window, data"):
        y_axis_layout(data, "tight", False)


def test_explorer_zoom_follows_the_slider(trace) -> None:
    ex = ThresholdExplorer(trace, debounce=0)
    ex.yaxis.zoom.value = "data"
    ex.control("trigger").value = 0.1
    top = _data_top(ex.figure)
    assert top >= ex.replay.turns["baseline_tokens"].max()
    assert list(ex.figure.layout.yaxis.range) == pytest.approx([0, top * 1.08])
    ex.control("trigger").value = 0.5
    top = _data_top(ex.figure)
    assert list(ex.figure.layout.yaxis.range) == pytest.approx([0, top * 1.08])
    ex.yaxis.log_scale.value = True
    assert ex.figure.layout.yaxis.type == "log"
    assert math.isclose(10 ** ex.figure.layout.yaxis.range[1], top * 1.3, rel_tol=1e-9)


def test_a_move_restores_the_axis_after_the_browser_changed_it(trace) -> None:
    """A move skips y-axis keys the chart already holds; what it compares with is the chart's
    layout as it is now, so an axis the browser changed (a relayout from the page) is set back
    to what the controls say at the next move."""
    ex = ThresholdExplorer(trace, debounce=0)
    ex.control("trigger").value = 0.1
    assert ex.figure.layout.yaxis.type == "linear"
    zoom = ex.figure.layout.yaxis.autorange
    ex.figure.plotly_relayout({"yaxis.type": "log", "yaxis.autorange": not zoom})
    ex.control("trigger").value = 0.5
    assert ex.figure.layout.yaxis.type == "linear"
    assert ex.figure.layout.yaxis.autorange is zoom


def test_in_place_updates_stay_valid_plotly(trace, tmp_path) -> None:
    """Moves send plain arrays without validation; the figure must still be one plotly accepts
    whole (an HTML export validates it) and hold the new replay's numbers."""
    ex = ThresholdExplorer(trace, debounce=0)
    ex.control("trigger").value = 0.2
    ex.control("keep").value = 0.3
    expected = ctxlab.replay(trace, ex.policy)
    assert list(ex.figure.data[0].y) == expected.turns["system_tokens"].to_list()
    fig = go.Figure(ex.figure)  # validates every property again
    assert list(fig.data[3].y) == expected.turns["ai_tokens"].to_list()
    assert ex.export(tmp_path / "moved.html").stat().st_size > 0


# ------------------------------------------------------------------------------- titles


def test_trace_name_prefers_names_then_readable_ids_then_the_first_request(trace) -> None:
    first = " ".join(next(m for m in trace.messages if isinstance(m, HumanMessage)).text.split())
    assert plots.trace_name(trace) == (first if len(first) <= 60 else first[:59] + "…")
    assert UUID not in plots.trace_name(trace)
    named = dataclasses.replace(trace, metadata={"task": "browser"})
    assert plots.trace_name(named) == "browser"
    readable = dataclasses.replace(trace, trace_id="marshmallow-code__marshmallow-1867")
    assert plots.trace_name(readable) == "marshmallow-code__marshmallow-1867"
    opaque = dataclasses.replace(trace, trace_id="sesn_01KW5vhbxfVqMHgLH2dWKbJG")
    assert "01KW5" not in plots.trace_name(opaque)
    assert plots.trace_name(None, UUID) == UUID  # nothing better known: the id itself


def test_every_figure_title_names_the_trace_escaped() -> None:
    messages = [
        HumanMessage("<script>alert(1)</script> fix the\nparser please " + "x" * 200),
        AIMessage("on it"),
        HumanMessage("thanks"),
        AIMessage("done"),
    ]
    trace = from_messages(messages, trace_id=UUID)
    policy = DeepAgents(window=10_000)
    replay = ctxlab.replay(trace, policy)
    name = plots.trace_name(trace)
    assert name.startswith("<script>alert(1)</script> fix the parser please x")
    assert len(name) == 60 and name.endswith("…")
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt; fix the parser"
    titles = {
        "context_tokens": plots.context_tokens(replay).layout.title.text,
        "composition": plots.composition(replay).layout.title.text,
        "events_timeline": plots.events_timeline(replay).layout.title.text,
        "comparison": plots.comparison([replay]).layout.title.text,
        "scrubber": Scrubber(replay).figure.layout.title.text,
        "explorer": ThresholdExplorer(trace, debounce=0).figure.layout.title.text,
        "compare": Compare(replay).figure.layout.title.text,
    }
    for where, title in titles.items():
        assert escaped in title, where
        assert "<script>" not in title and UUID not in title, where
