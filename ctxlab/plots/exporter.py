"""`export(fig, path)`: figures written to PNG, SVG, PDF or HTML for write-ups.

Static export (PNG, SVG, PDF) goes through kaleido 1.x driving the system `chromium` (found on
PATH, or `BROWSER_PATH`; nothing is downloaded). A cold export starts a browser (about 2 s), so
the first static export starts kaleido's sync server and keeps it for the life of the process:
later exports cost about a tenth of a second. HTML embeds plotly.js, so it opens offline.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

FORMATS = ("png", "svg", "pdf", "html")
"""What `export` writes, by file suffix."""


SHUTDOWN_LOGGERS = ("choreographer",)
"""Loggers quietened (to CRITICAL) while kaleido's browser shuts down. choreographer, which
kaleido drives chromium with, reads the browser's pipe on a worker thread; when `stop` closes
the pipe while that read holds half a message, it logs the fragment's JSON error with a full
traceback ("JSONError decoding message. Ignoring") and goes on. Python prints it on stderr
(seen in CI at interpreter exit), which reads as a failure after every export had succeeded.
A real failure to stop still raises."""


@contextmanager
def _quiet(names: tuple[str, ...]) -> Iterator[None]:
    """Raise these loggers (and their children left at NOTSET) to CRITICAL for the block."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


class _Kaleido:
    """One kaleido sync server (one chromium) per process, started on the first static export.

    kaleido's own singleton refuses to open twice; this wrapper makes starting idempotent and
    thread-safe, and stops the browser at interpreter exit so no chromium outlives Python,
    without the shutdown's log noise (`SHUTDOWN_LOGGERS`).

    The stop at exit is a `weakref.finalize` made once the server has answered (`serving`),
    not an `atexit` hook made at start: the server's thread creates the browser's profile
    folder (a `tempfile.TemporaryDirectory`, removed by its own finalizer at exit) after
    `start` returns, and an atexit hook registered before that runs after the finalizers.
    The profile was then deleted under a running chromium, which failed now and then with
    `OSError: Directory not empty: 'Default'` printed at exit. Finalizers still alive at exit
    run in reverse order of creation, so one made after the profile folder stops the browser
    first and the folder's own cleanup then finds nothing left to remove.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = False
        self._stop_at_exit: weakref.finalize | None = None

    def start(self) -> None:
        with self._lock:
            if self.started:
                return
            import kaleido

            # mathjax=False: no CDN request for MathJax (labels here are plain text).
            kaleido.start_sync_server(mathjax=False, silence_warnings=True)
            self.started = True

    def serving(self) -> None:
        """The server answered (a figure or an error), so its browser and profile folder
        exist: stop it at exit before the folder's finalizer runs (see the class docstring).
        A no-op when stopped, or when the stop at exit is arranged already."""
        with self._lock:
            if self.started and self._stop_at_exit is None:
                # The callback holds `self`, so this runs at exit only: the module keeps
                # the one instance alive anyway.
                self._stop_at_exit = weakref.finalize(self, self.stop)

    def stop(self) -> None:
        with self._lock:
            if self._stop_at_exit is not None:
                self._stop_at_exit.detach()
                self._stop_at_exit = None
            if not self.started:
                return
            import kaleido

            with _quiet(SHUTDOWN_LOGGERS):
                kaleido.stop_sync_server(silence_warnings=True)
            self.started = False


KALEIDO = _Kaleido()

NOT_LOADED = "kaleido_scopes is not defined"
"""What kaleido 1.x reports when one of its tabs runs the export in a JavaScript context where
its page script was never defined (seen once, in a full test run on a loaded 2-core machine:
`ReferenceError: kaleido_scopes is not defined`); every later export on that tab fails the
same way, so `export` stops kaleido's server, starts it again (new tabs) and retries."""
START_ATTEMPTS = 3
"""How many times `export` starts kaleido's server for one figure before giving up."""


def _as_figure(fig: Any) -> go.Figure:
    """A plain `go.Figure` copy (FigureWidget or dict in; what kaleido and write_html want)."""
    if isinstance(fig, go.Figure) and not isinstance(fig, go.FigureWidget):
        return fig
    return go.Figure(fig.to_dict() if hasattr(fig, "to_dict") else fig)


def export(
    fig: Any,
    path: str | Path,
    *,
    format: str | None = None,
    width: int | None = None,
    height: int | None = None,
    scale: float = 2.0,
) -> Path:
    """Write `fig` to `path` as PNG, SVG, PDF or HTML (from the suffix unless `format`).

    Static formats go through the process-wide kaleido server (started here on first use); HTML
    embeds plotly.js (about 4.8 MB) so the file works with no network. Returns the path.
    """
    path = Path(path)
    fmt = (format or path.suffix.lstrip(".")).lower()
    if fmt not in FORMATS:
        raise ValueError(f"cannot export {path}: format {fmt!r} is not one of {', '.join(FORMATS)}")
    figure = _as_figure(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "html":
        figure.write_html(
            path,
            include_plotlyjs=True,
            full_html=True,
            include_mathjax=False,
            config={"displaylogo": False},
        )
        return path
    import kaleido

    layout = figure.layout
    opts = {
        "format": fmt,
        "width": width or layout.width or 900,
        "height": height or layout.height or 480,
        "scale": scale if fmt == "png" else 1,
    }
    for attempt in range(1, START_ATTEMPTS + 1):
        KALEIDO.start()
        try:
            data = kaleido.calc_fig_sync(figure.to_dict(), opts=opts)
            break
        except Exception as exc:  # kaleido raises its own (private) error classes
            if NOT_LOADED not in str(exc) or attempt == START_ATTEMPTS:
                raise
            KALEIDO.stop()  # its tabs were bound to a blank page: start them afresh
        finally:  # answered or failed, the server's browser exists (unless just stopped)
            KALEIDO.serving()
    path.write_bytes(data)
    return path


__all__ = ["FORMATS", "KALEIDO", "export"]
