"""Every exported figure, at a paper's single- and double-column size, laid out in chromium.

plotly places text at draw time (legend rows, wrapped titles, annotations), so the layout is
measured where it is drawn: each figure of `tests.figure_gallery` is drawn by plotly.js in the
system chromium at both sizes, and the boxes of its title, axis titles, legend, annotations,
on-plot labels, markers and plot area are read back. No text may overlap other text or a
marker, the legend and title must lie inside the canvas, a legend may take at most
`LEGEND_SHARE` of the figure's height (of its width, beside the plot), the plot area must
keep `PLOT_SHARE` of the height (a single column's context chart had a legend of seven rows,
35% of its height), and every marker must lie within the plot area's width (the events
timeline cut its last marker at the axis end). Each figure is also exported as PNG (kaleido)
at both sizes, which must succeed: what a paper gets.
"""

from __future__ import annotations

import inspect
import itertools
import json
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly.offline import get_plotlyjs

from ctxlab import plots
from tests import figure_gallery
from tests.browser_lab import chromium_missing, chromium_page
from tests.figure_gallery import NAMES, PAPER_SIZES, builders

MEASURE = """() => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; };
  const all = (css) => [...document.querySelectorAll(css)]
    .filter((el) => el.getBoundingClientRect().width > 0)
    .filter((el) => css === '.legend' || (el.textContent || '').trim() !== '')
    .map((el) => ({what: css, text: (el.textContent || '').slice(0, 40), ...box(el)}));
  const svg = document.querySelector('.main-svg').getBoundingClientRect();
  const size = document.getElementById('fig')._fullLayout._size;
  const markers = [...document.querySelectorAll('.scatterlayer .points path.point')]
    .filter((el) => el.getBoundingClientRect().width > 0).map(box);
  return {
    width: svg.width, height: svg.height,
    plot: {x0: size.l, x1: size.l + size.w, y0: size.t, y1: size.t + size.h},
    markers: markers,
    parts: [
      ...all('.gtitle'), ...all('.g-xtitle'), ...all('.g-ytitle'), ...all('.legend'),
      ...all('.annotation-text-g'), ...all('.textpoint text'),
    ],
  };
}"""

LEGEND_SHARE = 0.3
"""Most of a figure's height a legend under the plot may take (of its width, beside it)."""

PLOT_SHARE = 0.4
"""Least of a figure's height its plot area must keep (subplots: the area they share)."""


@pytest.fixture(scope="module")
def figures() -> dict[str, Any]:
    return builders()


@pytest.fixture(scope="module")
def page() -> Any:
    if reason := chromium_missing():
        pytest.skip(reason)
    with chromium_page() as page:
        body = f"<div id='fig'></div><script>{get_plotlyjs()}</script>"
        page.set_content(f"<html><body style='margin:0'>{body}</body></html>")
        yield page


def _overlap(a: dict[str, float], b: dict[str, float]) -> float:
    """Area two boxes share, in square pixels."""
    w = min(a["x1"], b["x1"]) - max(a["x0"], b["x0"])
    h = min(a["y1"], b["y1"]) - max(a["y0"], b["y0"])
    return max(0.0, w) * max(0.0, h)


def measure(page: Any, fig: Any) -> dict[str, Any]:
    """The figure drawn by plotly.js in `page`, and the boxes of its text parts."""
    spec = json.loads(pio.to_json(fig))
    page.evaluate(
        "(spec) => Plotly.newPlot('fig', spec.data, spec.layout, {staticPlot: true})", spec
    )
    return page.evaluate(MEASURE)


@pytest.mark.parametrize("size", sorted(PAPER_SIZES))
@pytest.mark.parametrize("name", NAMES)
def test_figure_text_fits_and_nothing_overlaps(
    figures: dict[str, Any], page: Any, name: str, size: str, tmp_path: Path
) -> None:
    width, height = PAPER_SIZES[size]
    fig = figures[name](width, height)
    drawn = measure(page, fig)
    assert drawn["width"] == fig.layout.width and drawn["height"] == fig.layout.height
    parts, plot = drawn["parts"], drawn["plot"]
    assert any(p["what"] == ".gtitle" for p in parts)
    for part in parts:
        if part["what"] in (".legend", ".gtitle"):
            assert part["x0"] >= -1 and part["y0"] >= -1, part
            assert part["x1"] <= drawn["width"] + 1 and part["y1"] <= drawn["height"] + 1, part
        if part["what"] == ".legend" and part["x0"] >= plot["x1"]:  # beside the plot
            assert part["x1"] - part["x0"] <= LEGEND_SHARE * drawn["width"], part
        elif part["what"] == ".legend":  # under it
            assert part["y1"] - part["y0"] <= LEGEND_SHARE * drawn["height"], part
    assert plot["y1"] - plot["y0"] >= PLOT_SHARE * drawn["height"], plot
    for a, b in itertools.combinations(parts, 2):
        assert _overlap(a, b) < 4, (a, b)
    labels = [p for p in parts if p["what"] == ".textpoint text"]
    for label, marker in itertools.product(labels, drawn["markers"]):
        assert _overlap(label, marker) < 4, (label, marker)
    for marker in drawn["markers"]:
        assert plot["x0"] - 1 <= marker["x0"] and marker["x1"] <= plot["x1"] + 1, (marker, plot)
    assert plots.export(fig, tmp_path / f"{name}-{size}.png").stat().st_size > 10_000


def _builds_a_figure(name: str) -> bool:
    """Whether `ctxlab.plots.<name>` makes a figure from data (not styles one it is given)."""
    fn = getattr(plots, name)
    if not inspect.isfunction(fn) or "fig" in inspect.signature(fn).parameters:
        return False
    # annotations are strings here (`from __future__ import annotations`), not evaluated:
    # their TYPE_CHECKING-only names would not resolve
    return inspect.signature(fn).return_annotation in ("go.Figure", go.Figure)


def test_the_gallery_draws_every_figure_function() -> None:
    """A figure function added to `ctxlab.plots` is checked here too, once the gallery draws it."""
    source = inspect.getsource(figure_gallery)
    made = [name for name in plots.__all__ if _builds_a_figure(name)]
    assert len(made) >= 7, made
    assert [name for name in made if f"plots.{name}(" not in source] == []
