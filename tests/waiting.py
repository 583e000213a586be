"""Waiting for the thing a test needs, not for a length of time.

A sleep is either too short on a loaded machine (the test flakes) or too long on an idle one (the
suite crawls). So every wait in the suite blocks on the event itself and gives up only after a
generous timeout whose message names what never came:

- `Lines` reads a process's output (or a FIFO) on a thread and wakes a waiter the moment a line
  matching its pattern arrives: a server's "running at" line, Ray's "Ray runtime started.", a
  child script's "saved" report.
- `wait_port` waits for a listener on a port (the one wait that must retry: see there).
- `wait_exit` blocks on a pidfd until a process that is not our child ends (the kernel signals
  the descriptor at exit; a zombie counts as ended).
- `trait_until` awaits the change of a widget trait that gives it the value a test needs, on
  the running event loop (what a debounced callback does when it finally runs).
"""

from __future__ import annotations

import asyncio
import os
import re
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any


class Lines:
    """Every line of `stream`, read on a daemon thread as it arrives (and copied to `log` when
    given); `wait` blocks until a line matches. `stream` may be a text pipe or a FIFO path
    (opened read-write, so it never reports end of file while nothing writes to it)."""

    def __init__(self, stream: IO[str] | Path, log: Path | None = None) -> None:
        if isinstance(stream, Path):
            stream = open(os.open(stream, os.O_RDWR), encoding="utf-8")  # noqa: SIM115
        self._stream = stream
        self._log = open(log, "a", encoding="utf-8") if log else None  # noqa: SIM115
        self.lines: list[str] = []
        self.ended = False
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self._stream:
            if self._log is not None:
                self._log.write(line)
                self._log.flush()
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    @property
    def text(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def wait_end(self, what: str, timeout: float) -> None:
        """Block until the stream ended (every line its writer wrote is read): after its
        process exited, before reading its last lines. `TimeoutError` naming `what`."""
        with self._changed:
            if not self._changed.wait_for(lambda: self.ended, timeout):
                raise TimeoutError(f"{what} still open after {timeout:g} s")

    def wait(self, pattern: str, what: str, timeout: float, count: int = 1) -> re.Match[str]:
        """The `count`-th line matching `pattern` (a regex searched in each line), as soon as it
        is read. `TimeoutError` naming `what` (with everything read) when it has not come after
        `timeout` seconds; `EOFError` when the stream ended without it."""
        regex = re.compile(pattern)

        def found() -> list[re.Match[str]]:
            return [m for m in map(regex.search, self.lines) if m]

        with self._changed:
            done = self._changed.wait_for(lambda: len(found()) >= count or self.ended, timeout)
            matches = found()
            if len(matches) >= count:
                return matches[count - 1]
            everything = "\n".join(self.lines)
        if done:
            raise EOFError(f"the output ended before {what}:\n{everything}")
        raise TimeoutError(f"no {what} after {timeout:g} s; output so far:\n{everything}")


def wait_port(port: int, what: str, timeout: float, alive: Callable[[], bool]) -> None:
    """Block until something accepts connections on 127.0.0.1:`port`. A refused connection
    answers at once and a socket cannot wait for a listener, so this is the one wait that
    retries: every 50 ms, while `alive()` (the process meant to listen) holds.
    `TimeoutError` naming `what` after `timeout` seconds; `EOFError` if `alive()` turns false."""
    end = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=timeout).close()
            return
        except ConnectionRefusedError:
            if not alive():
                raise EOFError(f"{what}: the process exited before listening on {port}") from None
            if time.monotonic() > end:
                raise TimeoutError(
                    f"nothing listens on {port} ({what}) after {timeout:g} s"
                ) from None
            time.sleep(0.05)


def wait_exit(pids: Iterable[int], what: str, timeout: float) -> None:
    """Block until every process in `pids` has ended (they need not be our children).
    `TimeoutError` naming `what` and the pids still running after `timeout` seconds."""
    fds: dict[int, int] = {}
    for pid in pids:
        try:
            fds[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            continue  # already gone (and reaped)
    try:
        live, remaining = set(fds), timeout
        end = time.monotonic() + timeout
        while live and remaining > 0:
            ready, _, _ = select.select(list(live), [], [], remaining)
            live -= set(ready)
            remaining = end - time.monotonic()
        if live:
            running = sorted(fds[fd] for fd in live)
            raise TimeoutError(f"{what}: pids {running} still running after {timeout:g} s")
    finally:
        for fd in fds:
            os.close(fd)


async def trait_until(
    widget: Any, name: str, test: Callable[[Any], bool], what: str, timeout: float
) -> Any:
    """`widget`'s trait `name` once its value passes `test`: now, or at the change that makes it
    so, awaited on the running loop (where a debounced or deferred callback sets it).
    `TimeoutError` naming `what` and the last value otherwise."""
    if test(getattr(widget, name)):
        return getattr(widget, name)
    loop = asyncio.get_running_loop()
    passed: asyncio.Future[Any] = loop.create_future()

    def seen(change: dict[str, Any]) -> None:
        if not passed.done() and test(change["new"]):
            passed.set_result(change["new"])

    widget.observe(seen, names=name)
    try:
        return await asyncio.wait_for(passed, timeout)
    except TimeoutError:
        last = getattr(widget, name)
        raise TimeoutError(f"no {what} after {timeout:g} s; {name} is {last!r}") from None
    finally:
        widget.unobserve(seen, names=name)
