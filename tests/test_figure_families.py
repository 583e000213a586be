"""Each family of series has colours of its own; dense events are a rug; zoom keeps the data."""

from __future__ import annotations

import pytest

import ctxlab
from ctxlab import plots
from ctxlab._view.palette import BASELINE_COLOR, RECORDED_COLOR, REFERENCE_COLOR
from ctxlab._view.widgets._common import y_axis_layout, y_extent
from tests.figure_gallery import dense_policy
from tests.samples import long_trace


@pytest.fixture(scope="module")
def trace() -> ctxlab.Trace:
    return long_trace()


def _colour(t: object) -> str:
    line = getattr(t, "line", None)
    return (line.color if line is not None and line.color else None) or t.marker.color


def test_no_two_families_share_a_colour(trace: ctxlab.Trace) -> None:
    policy = dense_policy()
    replay = ctxlab.replay(trace, policy)
    fig = plots.context_tokens(replay, lines=plots.thresholds(policy, trace), recorded=trace)
    family: dict[str, set[str]] = {
        "area": set(),
        "reference": set(),
        "event": set(),
        "other": set(),
    }
    for t in fig.data:
        if t.stackgroup:
            family["area"].add(t.fillcolor)
        elif t.meta == "reference":
            family["reference"].add(_colour(t))
            assert t.showlegend is False and t.name in t.text  # labelled on the plot
        elif t.name.startswith("event: "):
            if "truncate" in t.name or "tail_clip" in t.name:
                family["event"].add(t.marker.color)
        else:
            family["other"].add(_colour(t))
    assert family["reference"] == {REFERENCE_COLOR}
    assert {BASELINE_COLOR, RECORDED_COLOR} <= family["other"]
    assert not family["event"] & family["area"]
    for a, b in [("area", "reference"), ("reference", "other"), ("event", "reference")]:
        assert not family[a] & family[b], (a, b)
    compared = plots.comparison([replay, replay], labels=["a", "b"], recorded=trace)
    series = {t.line.color for t in compared.data[:2]}
    assert not series & {BASELINE_COLOR, RECORDED_COLOR, REFERENCE_COLOR}


def test_dense_events_are_a_rug_with_their_count(trace: ctxlab.Trace) -> None:
    replay = ctxlab.replay(trace, dense_policy())
    count = sum(1 for e in replay.event_list if e.kind == "truncate_args")
    assert count > 20
    fig = plots.context_tokens(replay)
    (rug,) = [t for t in fig.data if t.name.startswith("event: truncate_args")]
    assert rug.name == f"event: truncate_args ({count}, rug)"
    assert rug.marker.symbol == "line-ns-open" and set(rug.y) == {0}
    timeline = plots.events_timeline(replay)
    assert f"truncate_args ({count})" in list(timeline.layout.yaxis.categoryarray)


def test_thin_bands_leave_the_legend_and_the_stack_reads_top_down(trace: ctxlab.Trace) -> None:
    replay = ctxlab.replay(trace, dense_policy())
    fig = plots.composition(replay)
    ranks = [t.legendrank for t in fig.data]
    assert ranks == sorted(ranks, reverse=True)  # the top band first in the legend
    top = max(sum(col) for col in zip(*(t.y for t in fig.data), strict=True))
    for t in fig.data:
        assert t.showlegend == (max(t.y) > 0.005 * top), t.name
    # cache writes: causes stacked first at the bottom, so ranked top first; masking every
    # observation rewrites the cache a hundred times more than `dense` does in all
    masked = ctxlab.replay(trace, ctxlab.policies.get("observation-masking"))
    bars = plots.cache_writes([replay, masked], labels=["dense", "masked"])
    ranks = [t.legendrank for t in bars.data]
    assert ranks == sorted(ranks, reverse=True)
    stack = max(sum(col) for col in zip(*(t.y for t in bars.data), strict=True))
    for t in bars.data:
        assert t.showlegend == (max(t.y) > 0.005 * stack), t.name
    assert {t.showlegend for t in bars.data} == {True, False}


def test_the_data_zoom_keeps_the_baseline_and_the_recording(trace: ctxlab.Trace) -> None:
    policy = ctxlab.policies.get("deepagents", stress=0.1)
    replay = ctxlab.replay(trace, policy)
    data = plots.context_trace_dicts(replay, lines=plots.thresholds(policy, trace), recorded=trace)
    top, full, _ = y_extent(data)
    assert top >= max(replay.turns["baseline_tokens"]) and full >= 200_000 > top
    zoomed = y_axis_layout(data, "data", False)["yaxis.range"]
    assert zoomed[1] >= max(replay.turns["baseline_tokens"])
