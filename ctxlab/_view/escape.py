"""`esc`: untrusted text made safe for HTML.

Trace text (tool results, file contents, model output) is untrusted: a recorded `<script>`
must show as text wherever ctxlab renders it, in widgets' HTML and in plotly hover labels
(which render a subset of HTML). Every renderer escapes through this one function.
"""

from __future__ import annotations

import html
from typing import Any


def esc(text: Any, limit: int | None = None) -> str:
    """`text` as escaped HTML, cut to `limit` characters (with "…"), newlines as `<br>`."""
    s = "" if text is None else str(text)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return html.escape(s, quote=True).replace("\n", "<br>")


__all__ = ["esc"]
