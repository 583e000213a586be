"""`retention(evaluations)`: what several policies kept of one trace's facts, in one figure.

Token savings say what a policy costs; this figure says what it lost. Top row, one panel per
policy: each fact category's facts by where they are at the last turn (still in the context,
only in a summary, only in a file a `read_file` would recover, lost), as shares of the
category. Bottom left: the facts the recorded agent used again after they were evicted, by
where they were when it needed them (the lost part is the headline *needed-but-lost*). Bottom
right: the mean probe score beside its full-context ceiling, when probes were run.

Pure: evaluations (`ctxlab.Evaluation`, or anything with `policy`, `params` and the `facts`,
`survival` and `probes` frames) in, a plotly figure out. Category names and policy labels are
escaped like every other string taken from a trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from ctxlab._store.schema import int_max
from ctxlab._view.escape import esc
from ctxlab._view.palette import FACT_STATUS_COLORS, OKABE_ITO
from ctxlab._view.plots.annotations import default_labels, trace_name
from ctxlab._view.plots.figures import NARROW, style

if TYPE_CHECKING:
    from ctxlab._evaluate.evaluation import Evaluation

STATUSES = ("context", "summary", "file", "lost")
"""Where a fact can be (`ctxlab._evaluate.survival.STATUSES`), in stacking order."""

SHOWN = 40
"""Characters of a policy label shown in panel titles and row labels."""

STATUS_LABELS = {
    "context": "in context",
    "summary": "only in a summary",
    "file": "only in a file",
    "lost": "lost",
}


def labels_for(evaluations: Sequence[Any], labels: Sequence[str] | None) -> list[str]:
    """`labels`, checked against `evaluations`, or `policy(changed params)` per evaluation;
    labels alike in their first `SHOWN` characters get their position as a prefix, so panel
    titles and rows tell them apart."""
    out = list(labels) if labels is not None else default_labels(evaluations)
    if len(out) != len(evaluations):
        raise ValueError(f"retention: {len(out)} labels for {len(evaluations)} evaluations")
    if len({esc(label, SHOWN) for label in out}) < len(out):
        out = [f"{i}: {label}" for i, label in enumerate(out)]
    return out


def categories(evaluations: Sequence[Any]) -> list[str]:
    """Categories with facts in any evaluation, in the survival frames' order."""
    seen: list[str] = []
    for ev in evaluations:
        for cat in ev.survival["category"].to_list():
            if cat not in seen:
                seen.append(cat)
    return seen


def needed_by_status(facts: pl.DataFrame) -> dict[str, int]:
    """Facts used again after eviction, counted by where they were when needed."""
    needed = facts.filter(pl.col("needed_turn").is_not_null())
    counts = dict(needed.group_by("status_when_needed").len().iter_rows())
    return {s: int(counts.get(s, 0)) for s in STATUSES}


def probe_means(probes: pl.DataFrame) -> tuple[float | None, float | None, int]:
    """Mean score and mean ceiling over the probes that were scored, and how many there are."""
    scored = probes.filter(pl.col("score").is_not_null())
    if scored.height == 0:
        return None, None, 0
    ceiling = scored["ceiling_score"].drop_nulls()
    return (
        float(scored["score"].mean()),  # type: ignore[arg-type]
        float(ceiling.mean()) if ceiling.len() else None,  # type: ignore[arg-type]
        scored.height,
    )


def retention(
    evaluations: Sequence[Evaluation],
    *,
    labels: Sequence[str] | None = None,
    shares: bool = True,
    title: str | None = None,
    width: int = 1000,
    height: int = 720,
) -> go.Figure:
    """Survival by category per policy, needed-but-lost per policy and probe score against its
    ceiling (see the module docstring); `shares=False` draws survival as counts of facts, not
    shares of each category. An empty `evaluations` raises `ValueError`."""
    evaluations = list(evaluations)
    if not evaluations:
        raise ValueError("retention needs at least one evaluation")
    names = labels_for(evaluations, labels)
    n = len(evaluations)
    cats = categories(evaluations)
    fig = make_subplots(
        rows=2,
        cols=2 * n,
        specs=[
            [{"colspan": 2}, None] * n,
            [{"colspan": n}] + [None] * (n - 1) + [{"colspan": n}] + [None] * (n - 1),
        ],
        subplot_titles=[
            *[esc(name, max(16, min(SHOWN, 84 // n))) for name in names],
            *(
                ("needed again: where it was", "probe score vs ceiling")
                if width < NARROW
                else (
                    "needed again after eviction: where it was",
                    "probe score vs full-context ceiling",
                )
            ),
        ],
        row_heights=[0.58, 0.42],
        vertical_spacing=0.2,
        horizontal_spacing=0.06 / n,
    )
    for i, (ev, name) in enumerate(zip(evaluations, names, strict=True)):
        _survival_panel(fig, ev.survival, cats, name, col=2 * i + 1, legend=i == 0, shares=shares)
    _needed_panel(fig, evaluations, names, col=1)
    _probe_panel(fig, evaluations, names, col=n + 1, narrow=width < NARROW)
    fig.update_layout(barmode="stack", bargap=0.25)
    style(
        fig,
        title=title or f"What the compaction lost · {esc(_trace_title(evaluations[0]))}",
        width=width,
        height=height,
        legend_beside=False,  # the panels need the width; four entries fit in a row under
    )
    fig.update_layout(margin={"b": 90})  # the legend flows by status group (legend_layout)
    fig.update_annotations(font_size=13)
    top = max((int_max(ev.survival["total"]) for ev in evaluations), default=0)
    for i in range(n):
        fig.update_yaxes(
            range=[0, 1] if shares else [0, max(top, 1) * 1.05],
            tickformat=".0%" if shares else ",d",
            showticklabels=i == 0,
            title_text=("share of facts" if shares else "facts") if i == 0 else None,
            row=1,
            col=2 * i + 1,
        )
        # upright in a single column: at -40 degrees eight category names in a third of
        # 525 px ran into each other ("number" over "identifier")
        angle, size = (-90, 10) if width < NARROW else (-40, 11)
        fig.update_xaxes(tickangle=angle, tickfont_size=size, row=1, col=2 * i + 1)
    rows = {"categoryorder": "array", "categoryarray": [esc(name, SHOWN) for name in names]}
    fig.update_yaxes(autorange="reversed", showgrid=False, row=2, col=1, **rows)
    fig.update_yaxes(autorange="reversed", showgrid=False, row=2, col=n + 1, **rows)
    fig.update_xaxes(title_text="facts", showgrid=True, gridcolor="#E5E5E5", row=2, col=1)
    return fig


def _trace_title(evaluation: Any) -> str:
    """The figure title's trace: its readable name (`trace_name`), from the replay's trace
    when the evaluation kept it, else its id."""
    replay = getattr(evaluation, "replay", None)
    return trace_name(replay.trace if replay is not None else None, evaluation.trace_id, 50)


def _survival_panel(
    fig: go.Figure,
    survival: pl.DataFrame,
    cats: list[str],
    name: str,
    *,
    col: int,
    legend: bool,
    shares: bool,
) -> None:
    rows = {r["category"]: r for r in survival.iter_rows(named=True)}
    totals = [int(rows[c]["total"]) if c in rows else 0 for c in cats]
    for status in STATUSES:
        counts = [int(rows[c][status]) if c in rows else 0 for c in cats]
        fig.add_trace(
            go.Bar(
                x=[esc(c) for c in cats],
                y=[
                    (k / t if t else 0) if shares else k
                    for k, t in zip(counts, totals, strict=True)
                ],
                customdata=list(zip(counts, totals, strict=True)),
                name=STATUS_LABELS[status],
                legendgroup=status,
                showlegend=legend,
                marker_color=FACT_STATUS_COLORS[status],
                marker_line={"color": "white", "width": 0.5},
                hovertemplate=(
                    f"{esc(name, 60)} · %{{x}}: %{{customdata[0]}} of %{{customdata[1]}} "
                    f"{STATUS_LABELS[status]}<extra></extra>"
                ),
            ),
            row=1,
            col=col,
        )


def _needed_panel(
    fig: go.Figure, evaluations: Sequence[Any], names: list[str], *, col: int
) -> None:
    counts = [needed_by_status(ev.facts) for ev in evaluations]
    shown = [esc(name, SHOWN) for name in names]
    for status in STATUSES:
        fig.add_trace(
            go.Bar(
                y=shown,
                x=[c[status] for c in counts],
                orientation="h",
                name=STATUS_LABELS[status],
                legendgroup=status,
                showlegend=False,
                marker_color=FACT_STATUS_COLORS[status],
                text=[str(c[status]) if c[status] and status == "lost" else "" for c in counts],
                textposition="inside",
                hovertemplate=(
                    f"%{{y}}: %{{x}} needed facts {STATUS_LABELS[status]} when needed"
                    "<extra></extra>"
                ),
            ),
            row=2,
            col=col,
        )


def _probe_panel(
    fig: go.Figure, evaluations: Sequence[Any], names: list[str], *, col: int, narrow: bool
) -> None:
    means = [probe_means(ev.probes) for ev in evaluations]
    shown = [esc(name, SHOWN) for name in names]
    if not any(count for _, _, count in means):
        axes = fig.get_subplot(2, col)
        fig.add_annotation(
            text="no probes run:<br>evaluate(replay,<br>model=...) adds them"
            if narrow
            else "no probes run:<br>evaluate(replay, model=...) adds them",
            xref="paper",
            yref="paper",
            x=sum(axes.xaxis.domain) / 2,
            y=sum(axes.yaxis.domain) / 2,
            xanchor="center",
            yanchor="middle",
            showarrow=False,
            font={"size": 13, "color": "#555555"},
        )
        fig.update_xaxes(visible=False, row=2, col=col)
        fig.update_yaxes(visible=False, row=2, col=col)
        return
    ys = [y for y, m in zip(shown, means, strict=True) if m[2]]
    scored = [m for m in means if m[2]]
    gaps_x: list[float | None] = []
    gaps_y: list[str | None] = []
    for y, (score, ceiling, _) in zip(ys, scored, strict=True):
        if score is not None and ceiling is not None:
            gaps_x += [score, ceiling, None]
            gaps_y += [y, y, None]
    fig.add_trace(
        go.Scatter(
            x=gaps_x,
            y=gaps_y,
            mode="lines",
            line={"color": "#BBBBBB", "width": 6},
            showlegend=False,
            hoverinfo="skip",
        ),
        row=2,
        col=col,
    )
    for key, label, marker in (
        (1, "ceiling (full context)", {"symbol": "diamond-open", "color": "#555555"}),
        (0, "score (compacted)", {"symbol": "circle", "color": OKABE_ITO["blue"]}),
    ):
        fig.add_trace(
            go.Scatter(
                x=[m[key] for m in scored],
                y=ys,
                mode="markers+text",
                name=label,
                marker={**marker, "size": 13, "line": {"width": 2, "color": marker["color"]}},
                text=[f"{m[key]:.2f}" if m[key] is not None else "" for m in scored],
                textposition="middle right" if key else "middle left",
                textfont={"size": 11},
                customdata=[m[2] for m in scored],
                hovertemplate=f"%{{y}}: {label} %{{x:.2f}} (mean of %{{customdata}} probes)"
                "<extra></extra>",
            ),
            row=2,
            col=col,
        )
    missing = [y for y, m in zip(shown, means, strict=True) if not m[2]]
    if missing:
        fig.add_trace(
            go.Scatter(
                x=[0] * len(missing),
                y=missing,
                mode="text",
                text=["no probes run"] * len(missing),
                textposition="middle right",
                textfont={"size": 11, "color": "#777777"},
                showlegend=False,
                hoverinfo="skip",
            ),
            row=2,
            col=col,
        )
    top = max((v for m in scored for v in m[:2] if v is not None), default=1.0) or 1.0
    fig.update_xaxes(title_text="mean probe score", range=[0, top * 1.25], row=2, col=col)
    fig.update_yaxes(showticklabels=False, row=2, col=col)


__all__ = [
    "STATUSES",
    "STATUS_LABELS",
    "categories",
    "needed_by_status",
    "probe_means",
    "retention",
]
