"""Every figure ctxlab exports, built from the bundled long session, at the sizes a paper uses.

Shared by the layout test (tests/test_figure_layout.py), which renders each in chromium and
measures it, and by anyone who wants the PNGs to look at:
`.venv/bin/python -m tests.figure_gallery OUT_DIR` writes `NAME-single.png` and
`NAME-double.png` for each.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import plotly.graph_objects as go
import polars as pl

import ctxlab
from ctxlab import plots
from ctxlab.policies import DeepAgents
from ctxlab.widgets import PromptDiff
from tests.samples import long_trace

REPO = Path(__file__).resolve().parents[1]

PAPER_SIZES = {"single": (525, 400), "double": (1050, 460)}
"""Pixels of a figure for one column (3.5 in) and two (7 in) at 150 dpi."""

NAMES = (
    "context_tokens",
    "context_tokens_dense_events",
    "composition",
    "events",
    "comparison",
    "sweep_heatmap",
    "retention",
    "cache_writes",
    "prompt_diff",
    "pareto",
)
"""The figures `builders` makes: every figure function of `ctxlab.plots` (the dense events
variant of the context chart too) and the chart `PromptDiff` exports."""


def builders() -> dict[str, Callable[[int, int], go.Figure]]:
    """Figure name -> a function of (width, height) building it, as the notebooks export."""
    trace = long_trace()
    stress = DeepAgents(stress=0.10)
    replay = ctxlab.replay(trace, stress)
    dense = ctxlab.replay(trace, dense_policy())
    policies = {
        "deepagents": DeepAgents(),
        "stress 0.10": stress,
        "observation-masking": ctxlab.policies.get("observation-masking"),
    }
    replays = [replay if p is stress else ctxlab.replay(trace, p) for p in policies.values()]
    evaluations = [ctxlab.evaluate(r) for r in replays]
    frame = pl.DataFrame(
        {
            "trigger": ["fraction:0.5", "fraction:0.5", "fraction:0.85", "fraction:0.85"],
            "keep": ["messages:6", "fraction:0.1"] * 2,
            "cumulative_input_tokens": [1_200_000, 1_350_000, 1_900_000, 2_050_000],
        }
    )
    lines = plots.thresholds(stress, trace)
    diff = PromptDiff(trace, policy=stress)  # offline extractive summaries: no model
    study = tune_study(Path(tempfile.mkdtemp(prefix="ctxlab-gallery-")) / "tune.duckdb")
    return {
        "context_tokens": lambda w, h: plots.context_tokens(
            replay, lines=lines, recorded=trace, width=w, height=h
        ),
        "context_tokens_dense_events": lambda w, h: plots.context_tokens(
            dense, lines=plots.thresholds(dense_policy(), trace), width=w, height=h
        ),
        "composition": lambda w, h: plots.composition(replay, width=w, height=h),
        "events": lambda w, h: plots.events_timeline(replay, width=w, height=h),
        "comparison": lambda w, h: plots.comparison(
            replays, labels=list(policies), cumulative=True, recorded=trace, width=w, height=h
        ),
        "sweep_heatmap": lambda w, h: plots.sweep_heatmap(
            frame, "trigger", "keep", width=w, height=h
        ),
        "retention": lambda w, h: plots.retention(
            evaluations, labels=list(policies), width=w, height=int(h * 1.5)
        ),
        "cache_writes": lambda w, h: plots.cache_writes(
            replays, labels=list(policies), width=w, height=h
        ),
        "pareto": lambda w, h: plots.pareto(study, width=w, height=h),
        "prompt_diff": lambda w, h: plots.style(
            go.Figure(diff.figure), title=diff.figure.layout.title.text, width=w, height=h
        ),
    }


def tune_study(db: Path) -> ctxlab.TuneStudy:
    """A small study of Deep Agents on both bundled samples (one held out): a front, the
    references and the held-out points to draw."""
    space = {"window": "20000..120000/1000", "trigger": "fraction:0.3..0.95"}
    return ctxlab.tune(REPO / "traces", "deepagents", space, trials=6, holdout=0.5, seed=1, db=db)


def dense_policy() -> DeepAgents:
    """Deep Agents with argument truncation from the 20th message on: one event a call."""
    truncate = {"trigger": ("messages", 20), "keep": ("messages", 6), "max_length": 200}
    return DeepAgents(stress=0.15, truncate_args_settings=truncate)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, build in builders().items():
        for size, (w, h) in PAPER_SIZES.items():
            print(plots.export(build(w, h), out / f"{name}-{size}.png"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
