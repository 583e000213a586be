"""`cache_writes(replays)`: cache-write tokens by cause, one stacked bar per replay.

Compaction's hidden cost is the cache it breaks: after a summary every later token of the
request is written to the cache again. This figure splits each replay's cache writes by why
they happened (`ctxlab._cost.cache_causes`: first call, model switch, idle gap, each compaction
kind,
tool-schema or system-prompt change, ordinary new content), so that cost shows beside the
growth every agent pays. Where the provider bills no cache writes (OpenAI, Google), the bars
are the input tokens not read from the cache instead, and the axis says so.

Pure: replays in (each carrying its trace), a plotly figure out; labels are escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go
import polars as pl

from ctxlab._cost.cache_causes import CAUSES
from ctxlab._evaluate.metrics import cache_frame
from ctxlab._store.schema import int_max
from ctxlab._view.escape import esc
from ctxlab._view.palette import EVENT_STYLE, OKABE_ITO
from ctxlab._view.plots.annotations import default_labels
from ctxlab._view.plots.figures import AREA_RANK, VISIBLE_SHARE, own_legend_groups, paper_layout

if TYPE_CHECKING:
    from ctxlab._cost.pricing import Price
    from ctxlab._replay.replay import Replay

CAUSE_COLORS: dict[str, str] = {
    "first_call": OKABE_ITO["grey"],
    "model_switch": OKABE_ITO["black"],
    "idle_gap": OKABE_ITO["sky"],
    "tool_schema_change": OKABE_ITO["purple"],
    "system_change": "#7F3C8D",
    **{kind: color for kind, (_, color) in EVENT_STYLE.items()},
    "clear_tool_uses": OKABE_ITO["vermillion"],
    "mask_observations": OKABE_ITO["blue"],
    "forget": "#8C564B",
    "trim": "#B15928",
    "new_content": "#D9D9D9",
}
"""One colour per cause (`CAUSES`): event kinds keep their marker colour from the event
charts; ordinary growth is a light grey, so the breakers stand out."""

CAUSE_LABELS: dict[str, str] = {c: c.replace("_", " ") for c in CAUSES}
"""Legend text per cause."""


def measured(writes: bool) -> str:
    """What the bars count, by `cache_write_totals`' flag: billed cache writes, else (no
    replay's provider bills writes) the input the cache did not serve. Legend and axis say
    the same."""
    return "cache-write tokens" if writes else "input tokens not read from the cache"


def cache_write_totals(
    replays: Sequence[Replay],
    *,
    labels: Sequence[str] | None = None,
    model: str | None = None,
    price: Price | None = None,
    ttl_seconds: float | None = None,
) -> tuple[pl.DataFrame, bool]:
    """Per replay and cause: `calls` and `tokens` (label, cause, calls, tokens; causes in
    `CAUSES` order), and whether the tokens are billed cache writes (else: input not read
    from the cache, where no replay's provider bills writes)."""
    labels = list(labels) if labels is not None else default_labels(replays)
    if len(labels) != len(replays):
        raise ValueError(f"cache_writes: {len(labels)} labels for {len(replays)} replays")
    frames = []
    for r in replays:
        if r.trace is None:
            raise ValueError(f"cache_writes: replay of {r.trace_id!r} carries no trace")
        frames.append(cache_frame(r, r.trace, model, price, ttl_seconds=ttl_seconds))
    writes = any(not f.is_empty() and int(f["cache_write_tokens"].sum()) > 0 for f in frames)
    rows: list[dict[str, Any]] = []
    for label, f in zip(labels, frames, strict=True):
        if f.is_empty():
            continue
        tokens = f["cache_write_tokens"] if writes else f["input_tokens"] - f["cache_read_tokens"]
        by = (
            f.with_columns(tokens.alias("tokens"))
            .filter(pl.col("cache_write_cause").is_not_null() & (pl.col("tokens") > 0))
            .group_by("cache_write_cause")
            .agg(pl.len().alias("calls"), pl.col("tokens").sum())
        )
        for row in by.iter_rows(named=True):
            rows.append({"label": label, "cause": row["cache_write_cause"], **row})
    order = {c: i for i, c in enumerate(CAUSES)}
    schema = {"label": pl.String, "cause": pl.String, "calls": pl.Int64, "tokens": pl.Int64}
    out = pl.DataFrame([{k: r[k] for k in schema} for r in rows], schema=schema).sort(
        pl.col("cause").replace_strict(order, default=len(order)), "label"
    )
    return out, writes


def cache_write_bar_dicts(
    totals: pl.DataFrame, labels: Sequence[str], writes: bool
) -> list[dict[str, Any]]:
    """The stacked bars of `cache_writes` as plain trace dicts (one per cause present), for
    a widget to update in place."""
    shown = [esc(x, 40) for x in labels]
    top = int_max(totals.group_by("label").agg(pl.col("tokens").sum())["tokens"])
    data = []
    causes = list(dict.fromkeys(totals["cause"].to_list()))
    for rank, cause in enumerate(causes):
        part = totals.filter(pl.col("cause") == cause)
        got = dict(zip(part["label"].to_list(), part["tokens"].to_list(), strict=True))
        calls = dict(zip(part["label"].to_list(), part["calls"].to_list(), strict=True))
        name = esc(CAUSE_LABELS.get(cause, cause), 40)
        data.append(
            {
                "type": "bar",
                "x": shown,
                "y": [got.get(x, 0) for x in labels],
                "customdata": [calls.get(x, 0) for x in labels],
                "name": name,
                "marker": {"color": CAUSE_COLORS.get(cause, OKABE_ITO["purple"])},
                # the legend reads as the stack does, top first; a cause too thin to see in
                # any bar stays out of it (its hover text still tells)
                "legendrank": AREA_RANK + len(causes) - rank,
                "showlegend": max(got.values(), default=0) > VISIBLE_SHARE * top,
                "hovertemplate": f"{name}: %{{y:,}} tokens in %{{customdata}} calls"
                "<extra>%{x}</extra>",
            }
        )
    what = measured(writes)
    if not data:  # keep the axes: an empty figure still says what it would show
        data.append({"type": "bar", "x": shown, "y": [0] * len(shown), "name": what})
    return data


def cache_writes(
    replays: Sequence[Replay],
    *,
    labels: Sequence[str] | None = None,
    model: str | None = None,
    price: Price | None = None,
    ttl_seconds: float | None = None,
    title: str | None = None,
    width: int = 900,
    height: int = 480,
) -> go.Figure:
    """Cache-write tokens by cause, one stacked bar per replay (see the module docstring).
    `model`, `price` and `ttl_seconds` as `metrics.cache_frame` takes them; replays must
    carry their trace (`ctxlab.replay` sets it)."""
    labels = list(labels) if labels is not None else default_labels(replays)
    totals, writes = cache_write_totals(
        replays, labels=labels, model=model, price=price, ttl_seconds=ttl_seconds
    )
    what = measured(writes)
    layout = paper_layout(
        title=title or f"Why the cache was written: {what} by cause",
        width=width,
        height=height,
        xaxis={"title": {"text": "replay"}},
        yaxis={"title": {"text": what}, "tickformat": "~s", "rangemode": "tozero"},
    )
    layout["barmode"] = "stack"
    data = own_legend_groups(cache_write_bar_dicts(totals, labels, writes))
    return go.Figure({"data": data, "layout": layout})


__all__ = [
    "CAUSE_COLORS",
    "CAUSE_LABELS",
    "cache_write_bar_dicts",
    "cache_write_totals",
    "cache_writes",
]
