"""`ChartWidget`: plotly's FigureWidget whose browser module loads within anywidget's deadline.

Why it exists: anywidget 0.11's frontend gives each widget model 2 s to import its ES module and
run its `initialize` (`AbortSignal.timeout(2000)` in its `Runtime`); past that, the model's
`ready` promise rejects ("[anywidget] Failed to initialize model.") and every later comm message
to the model is dropped. plotly's FigureWidget ships its whole frontend, plotly.js included
(~5 MB), as that module, and each chart imports its own copy. On a busy machine (2 cores, a
kernel exporting with kaleido, several charts loading at once) the import takes longer than
2 s, and the chart stays an empty box for the rest of the session: the browser test's flake.

A `ChartWidget` *is* a FigureWidget in Python (same traits, update messages, click callbacks,
`batch_update`, export), with only the module anywidget loads replaced by `chart.js` (a few KB,
initialised at once). plotly's bundle travels as the state of one shared `PlotlyBundle` model per
kernel (binary, from the installed plotly package: no network, the kernel's plotly version),
made when `ctxlab.widgets` is imported in a kernel; the page imports it then, once for every
chart, so its one long evaluation (which blocks the page) happens before charts load rather than
inside a later chart's 2 s window. Charts queue the figure messages that arrive before plotly is
ready and hand them to plotly's own FigureModel in order before drawing.

What is left: a chart whose model is created while the page is still evaluating plotly (a chart
made in the same instant as the import, on a crowded machine) can still miss anywidget's window.
"""

from __future__ import annotations

import sys
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import anywidget
import plotly.graph_objects as go
import traitlets
from ipywidgets import widget_serialization

LOADER = Path(__file__).with_name("chart.js")
"""The ES module anywidget loads for every chart (the loader, not plotly)."""


@cache
def plotly_bundle() -> bytes:
    """plotly's widget bundle (plotly.js and its FigureWidget frontend, an ES module) from the
    installed plotly package: the file plotly's own FigureWidget gives anywidget."""
    return (resources.files("plotly") / "package_data" / "widgetbundle.js").read_bytes()


def bundle_key() -> str:
    """Which bundle the page caches: one import per page and plotly version."""
    return f"plotly {metadata.version('plotly')}"


class PlotlyBundle(anywidget.AnyWidget):
    """plotly's widget bundle as binary widget state: sent to the page once per kernel (not once
    per chart), and kept once in a saved notebook's widget state."""

    _esm = LOADER  # the same module: for this model it only starts plotly's import
    bundle = traitlets.Bytes().tag(sync=True)
    key = traitlets.Unicode().tag(sync=True)


_shared: PlotlyBundle | None = None


def shared_bundle() -> PlotlyBundle:
    """This kernel's `PlotlyBundle`, made on first use (again if it was closed)."""
    global _shared
    if _shared is None or _shared.comm is None:
        _shared = PlotlyBundle(bundle=plotly_bundle(), key=bundle_key())
    return _shared


def in_kernel() -> bool:
    """Whether this Python runs in a Jupyter kernel (where widgets reach a page); imports
    nothing, so plain Python stays quick."""
    app = sys.modules.get("ipykernel.kernelapp")
    return app is not None and bool(app.IPKernelApp.initialized())


class ChartWidget(go.FigureWidget):
    """A plotly FigureWidget that renders however long plotly.js takes to load (module docstring).

    Takes what `go.FigureWidget` takes (`data=`, `layout=`, ...) and behaves as one in Python."""

    _esm = LOADER
    _bundle = traitlets.Instance(PlotlyBundle).tag(sync=True, **widget_serialization)
    _bundle_key = traitlets.Unicode().tag(sync=True)

    # defaults, not assignments after `__init__`: the chart's first state message (its comm
    # open) must already name the bundle, which the page reads when the model initialises
    @traitlets.default("_bundle")
    def _default_bundle(self) -> PlotlyBundle:
        return shared_bundle()

    @traitlets.default("_bundle_key")
    def _default_bundle_key(self) -> str:
        return self._bundle.key

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # FigureWidget opens its comm (the model's first state in the page) before it fills
        # `_widget_data` and `_widget_layout`, which then follow as updates. anywidget holds
        # updates back until the module has initialised, while a view may already draw: with
        # plotly already loaded in the page the chart drew empty. So the comm opens once the
        # figure is complete, and the first state holds it.
        self._constructing = True
        try:
            super().__init__(*args, **kwargs)
        finally:
            self._constructing = False
        self.open()

    def open(self) -> None:
        """Open the comm, except while the constructor is still filling the figure in."""
        if not getattr(self, "_constructing", False):
            super().open()


# In a kernel, the bundle goes to the page when `ctxlab.widgets` is imported: the page imports
# plotly (one evaluation of 5 MB that blocks the page, seconds on a crowded machine) while no
# chart is loading yet, instead of while the next chart's module races anywidget's deadline.
if in_kernel():
    shared_bundle()
