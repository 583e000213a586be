"""Notebook widgets: scrub a replay, tune thresholds live, diff summary prompts, compare
policies' tokens and what they kept of the trace's facts, open a tuning study's front.

Each widget is an `ipywidgets` box (display it as the last expression of a cell) with a plotly
`FigureWidget` updated in place and an Export button writing PNG, SVG, PDF or HTML.
"""

from ctxlab._view.widgets.compare import Compare
from ctxlab._view.widgets.explorer import ThresholdExplorer
from ctxlab._view.widgets.prompt_diff import PromptDiff
from ctxlab._view.widgets.retention import Retention
from ctxlab._view.widgets.scrubber import Scrubber
from ctxlab._view.widgets.tune import Tune

__all__ = ["Compare", "PromptDiff", "Retention", "Scrubber", "ThresholdExplorer", "Tune"]
