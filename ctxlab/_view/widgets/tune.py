"""`Tune(study, traces)`: a tuning study's front, and any point of it opened on a trace.

The chart is `ctxlab.plots.pareto(study)`. A click on a point (a trial, or a reference point)
opens that setting on the chosen trace beside the recorded settings (the preset's defaults
where the recording fixes none): a `Compare` of the two replays, or, with the view toggle, a
`ThresholdExplorer` whose sliders start at the clicked setting, to move on from there. The
trace picker lists the study's traces, held-out ones first: that is where a setting shows
whether it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets as W

from ctxlab import plots
from ctxlab._replay.replay import replay
from ctxlab._trace import Trace
from ctxlab._tune.study import TuneStudy
from ctxlab._view.escape import esc
from ctxlab._view.widgets._common import ExportBar, figure_widget
from ctxlab._view.widgets.compare import Compare
from ctxlab._view.widgets.explorer import ThresholdExplorer

VIEWS = ("compare", "explorer")
"""What a click opens: `Compare` beside the recorded settings, or a `ThresholdExplorer`."""


class Tune(W.VBox):
    """The front of `study` (a `ctxlab.TuneStudy`) over `traces` (the study's traces, or any
    of them); `select(number_or_label)` is what a click does."""

    def __init__(self, study: TuneStudy, traces: Sequence[Trace], *, view: str = "compare") -> None:
        if view not in VIEWS:
            raise ValueError(f"Tune: view must be one of {VIEWS}, got {view!r}")
        self.study = study
        known = {i for ids in study.splits.values() for i in ids}
        by_id = {t.trace_id: t for t in traces if t.trace_id in known}
        if not by_id:
            raise ValueError(f"Tune: none of the traces given was in study {study.name!r}")
        order = [*study.splits.get("holdout", []), *study.splits.get("tune", [])]
        self.traces = [by_id[i] for i in order if i in by_id]
        held = set(study.splits.get("holdout", []))
        self.trace_pick = W.Dropdown(
            options=[
                (f"{t.trace_id} ({'held out' if t.trace_id in held else 'tuning'})", i)
                for i, t in enumerate(self.traces)
            ],
            value=0,
            description="trace",
        )
        self.view = W.ToggleButtons(options=list(VIEWS), value=view)
        self.figure = figure_widget(plots.pareto(study), "ctx-chart")
        for trace_ in self.figure.data:
            if trace_.customdata is not None:
                trace_.on_click(self._clicked)
        self.title = W.HTML()
        self.detail = W.Box()
        self.opened: W.Widget | None = None
        self.selected: int | str | None = None
        self.exporter = ExportBar(lambda: self.figure, f"pareto_{study.policy}")
        self.trace_pick.observe(lambda _: self._reopen(), names="value")
        self.view.observe(lambda _: self._reopen(), names="value")
        super().__init__(
            [self.figure, self.exporter, W.HBox([self.trace_pick, self.view]), self.title,
             self.detail]
        )  # fmt: skip

    def _clicked(self, trace: Any, points: Any, _state: Any) -> None:
        if points.point_inds:
            self.select(trace.customdata[points.point_inds[0]])

    def _reopen(self) -> None:
        if self.selected is not None:
            self.select(self.selected)

    def select(self, which: int | str) -> W.Widget:
        """Open a trial (by number) or reference point (`defaults`, `recorded`) on the chosen
        trace, beside the recorded settings; returns the widget shown."""
        point = self.study.point(which)
        trace = self.traces[self.trace_pick.value]
        chosen = self.study.policy_for(which, trace)
        name = point.label or f"trial {point.number}"
        settings = ", ".join(f"{k}={v}" for k, v in point.params.items()) or "defaults"
        self.title.value = f"<b>{esc(name)}</b>: {esc(settings)} on {esc(trace.trace_id)}"
        if self.view.value == "explorer":
            opened: W.Widget = _explorer(trace, self.study, chosen)
        else:
            base = "recorded" if self.study.recorded.get(trace.trace_id) else "defaults"
            reference = self.study.policy_for(base, trace)
            opened = Compare(
                replay(trace, chosen), replay(trace, reference), labels=[name, base], trace=trace
            )
        self.selected = which
        self.opened = opened
        self.detail.children = (opened,)
        return opened


def _explorer(trace: Trace, study: TuneStudy, chosen: Any) -> ThresholdExplorer:
    """A `ThresholdExplorer` of the study's policy whose sliders start at `chosen`'s values
    where a slider has that parameter's name and takes its value (a size's number)."""
    explorer = ThresholdExplorer(trace, policy=study.policy)
    for name in study.space:
        value = getattr(chosen, name, None)
        number = value[1] if isinstance(value, tuple) and len(value) == 2 else value
        try:
            slider = explorer.control(name)
        except KeyError:
            continue
        if isinstance(number, int | float) and slider.min <= number <= slider.max:
            slider.value = number
    return explorer


__all__ = ["Tune"]
