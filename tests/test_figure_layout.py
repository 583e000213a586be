"""Every exported figure, at a paper's single- and double-column size, laid out in chromium.

plotly places text at draw time (legend rows, wrapped titles, annotations), so the layout is
measured where it is drawn: each figure of `tests.figure_gallery` is drawn by plotly.js in the
system chromium at both sizes, and the boxes of its title, axis titles, legend, annotations
and on-plot labels are read back. None may overlap another, and the legend and title must lie
inside the canvas. Each figure is also exported as PNG (kaleido) at both sizes, which must
succeed: what a paper gets.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import plotly.io as pio
import pytest
from plotly.offline import get_plotlyjs

from ctxlab import plots
from tests.browser_lab import chromium_missing, chromium_page
from tests.figure_gallery import PAPER_SIZES, builders

MEASURE = """() => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; };
  const all = (css) => [...document.querySelectorAll(css)]
    .filter((el) => el.getBoundingClientRect().width > 0)
    .filter((el) => css === '.legend' || (el.textContent || '').trim() !== '')
    .map((el) => ({what: css, text: (el.textContent || '').slice(0, 40), ...box(el)}));
  const svg = document.querySelector('.main-svg').getBoundingClientRect();
  return {
    width: svg.width, height: svg.height,
    parts: [
      ...all('.gtitle'), ...all('.g-xtitle'), ...all('.g-ytitle'), ...all('.legend'),
      ...all('.annotation-text-g'), ...all('.textpoint text'),
    ],
  };
}"""


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
@pytest.mark.parametrize(
    "name",
    [
        "context_tokens",
        "context_tokens_dense_events",
        "composition",
        "events",
        "comparison",
        "sweep_heatmap",
        "retention",
        "cache_writes",
    ],
)
def test_figure_text_fits_and_nothing_overlaps(
    figures: dict[str, Any], page: Any, name: str, size: str, tmp_path: Path
) -> None:
    width, height = PAPER_SIZES[size]
    fig = figures[name](width, height)
    drawn = measure(page, fig)
    assert drawn["width"] == fig.layout.width and drawn["height"] == fig.layout.height
    parts = drawn["parts"]
    assert any(p["what"] == ".gtitle" for p in parts)
    for part in parts:
        if part["what"] in (".legend", ".gtitle"):
            assert part["x0"] >= -1 and part["y0"] >= -1, part
            assert part["x1"] <= drawn["width"] + 1 and part["y1"] <= drawn["height"] + 1, part
    for a, b in itertools.combinations(parts, 2):
        assert _overlap(a, b) < 4, (a, b)
    assert plots.export(fig, tmp_path / f"{name}-{size}.png").stat().st_size > 10_000
