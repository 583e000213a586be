"""Layouts that keep a widget inside a 1,000-pixel notebook column.

A table as wide as its longest cell (a policy's label, a fact's text) pushed the widget past
the column's edge, where the notebook cut it off; in a box of its own that scrolls sideways,
the table keeps its columns and the widget keeps the column's width.
"""

from __future__ import annotations

import ipywidgets as W


def scrolls_sideways() -> W.Layout:
    """A fresh layout for an HTML widget holding a table: never wider than its column, and
    scrolling sideways when the table is (a new one each time: a `Layout` is shared state)."""
    return W.Layout(max_width="100%", overflow="auto")


__all__ = ["scrolls_sideways"]
