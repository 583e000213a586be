"""`export(fig, path)`: figures written to PNG, SVG, PDF or HTML for write-ups.

Static export (PNG, SVG, PDF) goes through kaleido 1.x driving the system `chromium` (found on
PATH, or `BROWSER_PATH`; nothing is downloaded). A cold export starts a browser (about 2 s), so
the first static export opens one and keeps it for the life of the process: later exports
cost about a tenth of a second. HTML embeds plotly.js, so it opens offline.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, NamedTuple

import plotly.graph_objects as go

FORMATS = ("png", "svg", "pdf", "html")
"""What `export` writes, by file suffix."""


SHUTDOWN_LOGGERS = ("choreographer",)
"""Loggers quietened (to CRITICAL) while kaleido's browser shuts down. choreographer, which
kaleido drives chromium with, reads the browser's pipe on a worker thread; when the pipe is
closed while that read holds half a message, it logs the fragment's JSON error with a full
traceback ("JSONError decoding message. Ignoring") and goes on. Python prints it on stderr
(seen in CI at interpreter exit), which reads as a failure after every export had succeeded."""

CLOSE_SECONDS = 5.0
"""How long a browser's close may wait before it is cancelled, and then again before the
browser is killed. Closing takes well under a second; a browser that does not answer, or
whose last message was cut in half by its own exit, would otherwise hold the close (and
interpreter exit) forever."""


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


def _kill(process: subprocess.Popen[Any]) -> None:
    """SIGKILL a browser that did not close, with its helpers (chromium runs in a session of
    its own, so its process group is its helpers; elsewhere only the process is known)."""
    if process.poll() is not None:
        return
    try:
        if hasattr(os, "killpg") and os.getpgid(process.pid) == process.pid:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except ProcessLookupError:
        pass
    process.wait()


def _finished(future: concurrent.futures.Future[Any], seconds: float) -> bool:
    """Whether `future` is done (a result or an error) within `seconds`."""
    return bool(concurrent.futures.wait([future], timeout=seconds).done)


async def _open(**options: Any) -> Any:
    """A `kaleido.Kaleido` browser, opened (made on the loop that will use it)."""
    import kaleido

    browser = kaleido.Kaleido(**options)
    try:
        await browser.open()
    except BaseException:
        with suppress(Exception):  # the error worth reporting is the open's
            await _close(browser)
        raise
    return browser


async def _close(browser: Any) -> None:
    """Close `browser`. A close still waiting after `CLOSE_SECONDS` is cancelled: choreographer
    then closes its pipe anyway (which ends a read held on half a message) and finishes."""
    closing = asyncio.ensure_future(browser.close())
    done, _ = await asyncio.wait({closing}, timeout=CLOSE_SECONDS)
    if not done:
        closing.cancel()
        await asyncio.wait({closing})
    if not closing.cancelled():
        closing.result()


class _Open(NamedTuple):
    """An open browser, the event loop that drives it, and the daemon thread running that."""

    browser: Any
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread


def _end_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    """Stop `loop` and close it once its thread has ended (a thread still running after
    `CLOSE_SECONDS` keeps its loop: a daemon, it ends with the process)."""
    loop.call_soon_threadsafe(loop.stop)
    thread.join(CLOSE_SECONDS)
    if not thread.is_alive():
        loop.close()


class _Kaleido:
    """One kaleido browser (one chromium) per process, started on the first static export.

    It runs on an event loop of its own in a daemon thread, driven through kaleido's public
    `Kaleido` class rather than kaleido's sync server, so its shutdown is ours to bound:
    kaleido's server joins its thread at exit with no time limit, and a browser that exits
    in the middle of writing a message leaves choreographer's reader, and so the close,
    waiting for the rest forever (seen once in 60 exits under load: the interpreter never
    exited). `stop` asks the browser to close; after `CLOSE_SECONDS` it cancels the close
    (choreographer then closes its pipe, which ends such a read, and finishes), after as long
    again it kills the browser, and after twice that more it leaves the loop to its daemon
    thread, so exit takes seconds at worst, without the shutdown's log noise
    (`SHUTDOWN_LOGGERS`).

    The stop at exit is a `weakref.finalize` made once the browser is open, not an `atexit`
    hook: the browser's profile folder (a `tempfile.TemporaryDirectory`, removed by its own
    finalizer at exit) is made while it opens, and finalizers still alive at exit run in
    reverse order of creation, so the browser stops first and the folder's cleanup finds
    nothing left to remove. (An atexit hook registered earlier ran after the finalizers: the
    profile was deleted under a running chromium, `OSError: Directory not empty: 'Default'`.)
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: _Open | None = None
        self._stop_at_exit: weakref.finalize | None = None

    @property
    def started(self) -> bool:
        """Whether a browser is open."""
        return self._open is not None

    def start(self) -> None:
        """Open the browser (a no-op when it is open)."""
        with self._lock:
            if self._open is not None:
                return
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="ctxlab-kaleido", daemon=True)
            thread.start()
            # mathjax=False: no CDN request for MathJax (labels here are plain text).
            opening = asyncio.run_coroutine_threadsafe(_open(n=1, mathjax=False), loop)
            try:
                self._open = _Open(opening.result(), loop, thread)
            except BaseException:
                _end_loop(loop, thread)
                raise
            # The callback holds `self`, so this runs at exit only: the module keeps the one
            # instance alive anyway.
            self._stop_at_exit = weakref.finalize(self, self.stop)

    def render(self, figure: dict[str, Any], opts: dict[str, Any]) -> bytes:
        """The figure as `opts["format"]` bytes, from the open browser."""
        opened = self._open
        if opened is None:
            raise RuntimeError("kaleido's browser is not open: call start() first")
        rendering = opened.browser.calc_fig(figure, opts=opts)
        return asyncio.run_coroutine_threadsafe(rendering, opened.loop).result()

    def stop(self) -> None:
        """Close the browser (a no-op when none is open); bounded, see the class docstring."""
        with self._lock:
            if self._stop_at_exit is not None:
                self._stop_at_exit.detach()
                self._stop_at_exit = None
            opened, self._open = self._open, None
            if opened is None:
                return
            browser, loop, thread = opened
            process = getattr(browser, "subprocess", None)
            with _quiet(SHUTDOWN_LOGGERS):
                closing = asyncio.run_coroutine_threadsafe(_close(browser), loop)
                # _close cancels a close still waiting after CLOSE_SECONDS; one still running
                # CLOSE_SECONDS after that has its browser killed from here, not from the loop,
                # which may itself be blocked (choreographer's own kill waits on the process
                # synchronously). A no-op once the browser has closed; a close that failed is
                # moot once the browser is dead.
                closed = _finished(closing, 2 * CLOSE_SECONDS)
                if process is not None:
                    _kill(process)
                if not closed and not _finished(closing, 2 * CLOSE_SECONDS):
                    return  # the browser is dead; its loop is left to its daemon thread
            _end_loop(loop, thread)


KALEIDO = _Kaleido()

NOT_LOADED = "kaleido_scopes is not defined"
"""What kaleido 1.x reports when one of its tabs runs the export in a JavaScript context where
its page script was never defined (seen once, in a full test run on a loaded 2-core machine:
`ReferenceError: kaleido_scopes is not defined`); every later export on that tab fails the
same way, so `export` closes the browser, opens a new one (new tabs) and retries."""
START_ATTEMPTS = 5
"""How many times `export` opens kaleido's browser for one figure before giving up. On a
2-core machine running six exporting processes at once, about one attempt in nine met
`NOT_LOADED` (7 and 6 of 60 processes retried, with this exporter and with kaleido's sync
server alike), and once three attempts in a row did, as if the load that causes it lasts:
five attempts, and a pause that grows with each, ride that out."""


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

    Static formats go through the process-wide kaleido browser (opened here on first use); HTML
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
            data = KALEIDO.render(figure.to_dict(), opts)
            break
        except Exception as exc:  # kaleido raises its own (private) error classes
            if NOT_LOADED not in str(exc) or attempt == START_ATTEMPTS:
                raise
            KALEIDO.stop()  # its tabs were bound to a blank page: start them afresh
            time.sleep(0.5 * attempt)
    path.write_bytes(data)
    return path


__all__ = ["FORMATS", "KALEIDO", "export"]
