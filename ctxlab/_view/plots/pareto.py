"""`pareto(study)`: a tuning study's trials on two objectives, the front, and how the front
and the reference points do on the held-out traces.

What a reader must see at once is whether the front holds: each Pareto point is drawn where
it scored on the tuning traces (filled) and where it scored on the held-out ones (hollow, the
same colour), joined by a thin line, so a point that only wins where it was tuned moves away
from the corner; the preset's defaults and the recorded settings are drawn the same way in
their own markers. Other trials are small grey dots, infeasible ones (a call over the window,
or over the budget) grey crosses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from ctxlab._view.escape import esc
from ctxlab._view.palette import OKABE_ITO
from ctxlab._view.plots.figures import style

if TYPE_CHECKING:
    from ctxlab._tune.study import Point, TuneStudy

REFERENCE_STYLE = {
    "defaults": (OKABE_ITO["vermillion"], "diamond"),
    "recorded": (OKABE_ITO["orange"], "square"),
}
"""Colour and marker of each reference point."""

FRONT_COLOR = OKABE_ITO["blue"]


def _label(point: Point) -> str:
    """A point's hover line: its number or label and its settings (escaped: they are text)."""
    name = point.label or f"trial {point.number}"
    settings = ", ".join(f"{k}={v}" for k, v in point.params.items()) or "no settings changed"
    return esc(f"{name}: {settings}")


def _xy(point: Point, which: str, x: str, y: str) -> tuple[float, float] | None:
    values = point.tune if which == "tune" else point.holdout
    if values is None:
        return None
    across = float(point.number) if x == "trial" else values[x].mean
    return across, values[y].mean


def pareto(
    study: TuneStudy,
    x: str | None = None,
    y: str | None = None,
    *,
    title: str | None = None,
    width: int = 700,
    height: int = 480,
) -> go.Figure:
    """The study's trials on objectives `x` and `y` (default its first two; with one
    objective, that objective against the trial number), the front and reference points on
    the tuning traces (filled) and the held-out ones (hollow). Each point's `customdata` is its
    trial number (references: their label), which `ctxlab.widgets.Tune` reads on a click."""
    objectives = list(study.objectives)
    if len(objectives) == 1:  # one objective: up, against the trial number
        x, y = "trial", y or x or objectives[0]
    else:
        x, y = x or objectives[0], y or objectives[1]
    for name in (x, y):
        if name != "trial" and name not in objectives:
            raise ValueError(f"{name!r} is not an objective of study {study.name!r}: {objectives}")
    front = set(study.pareto)
    fig = go.Figure()

    def add(points: list[Point], which: str, name: str, **marker: Any) -> None:
        found = [(p, _xy(p, which, x, y)) for p in points]
        kept = [(p, xy) for p, xy in found if xy is not None]
        if not kept:
            return
        fig.add_trace(
            go.Scatter(
                x=[xy[0] for _, xy in kept],
                y=[xy[1] for _, xy in kept],
                mode="markers",
                name=esc(name),
                marker=marker,
                text=[_label(p) for p, _ in kept],
                customdata=[p.label or p.number for p, _ in kept],
                hovertemplate="%{text}<br>%{x:,.4g}, %{y:,.4g}<extra>" + esc(name) + "</extra>",
            )
        )

    others = [t for t in study.trials if t.number not in front and t.feasible]
    infeasible = [t for t in study.trials if t.feasible is False]
    on_front = [t for t in study.trials if t.number in front]
    add(others, "tune", "other trials", color=OKABE_ITO["grey"], size=6, opacity=0.6)
    add(infeasible, "tune", "infeasible", color=OKABE_ITO["grey"], size=7, symbol="x")
    for point in [*on_front, *study.reference]:  # tuning -> held out, one thin line each
        a, b = _xy(point, "tune", x, y), _xy(point, "holdout", x, y)
        if a is not None and b is not None and x != "trial":
            color = REFERENCE_STYLE.get(point.label or "", (FRONT_COLOR, ""))[0]
            fig.add_trace(
                go.Scatter(
                    x=[a[0], b[0]],
                    y=[a[1], b[1]],
                    mode="lines",
                    line={"color": color, "width": 1, "dash": "dot"},
                    showlegend=False,
                    hoverinfo="skip",
                )
            )
    add(on_front, "tune", "front, tuning traces", color=FRONT_COLOR, size=10)
    add(
        on_front,
        "holdout",
        "front, held out",
        color="white",
        size=10,
        line={"color": FRONT_COLOR, "width": 2},
    )
    for ref in study.reference:
        color, symbol = REFERENCE_STYLE.get(ref.label or "", (OKABE_ITO["black"], "circle"))
        add([ref], "tune", f"{ref.label}, tuning", color=color, size=11, symbol=symbol)
        add(
            [ref],
            "holdout",
            f"{ref.label}, held out",
            color="white",
            size=11,
            symbol=symbol,
            line={"color": color, "width": 2},
        )
    fig.update_xaxes(title_text=x.replace("_", " "))
    fig.update_yaxes(title_text=y.replace("_", " "))
    return style(
        fig,
        title=title or f"Tuning {study.policy}: {len(study.trials)} trials",
        width=width,
        height=height,
    )


__all__ = ["pareto"]
