"""One chat-model call with retries, backoff and a time limit, shared by summaries and probes.

Real models fail in passing (a rate limit, a dropped connection, a local server still loading)
and sometimes never answer. A replay of hundreds of summaries or an evaluation of hundreds of
probes should neither die on the first such failure nor hang on one call: each call is retried
`retries` times, waiting `backoff * 2**attempt` seconds between tries, and abandoned after
`timeout` seconds. An input too long for the model (`ctxlab._replay.overflow.is_overflow`) is
never retried as it is: asking again cannot make it fit, so the caller cuts it or records it.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from ctxlab._replay.overflow import is_overflow


class CallTimeout(TimeoutError):
    """A model call that gave no answer within its time limit."""


@dataclass(frozen=True)
class CallSettings:
    """How model calls are made: `retries` after the first try (0: none), `backoff` seconds
    before the first retry (doubling each time), `timeout` seconds per try (None: no limit)."""

    retries: int = 2
    backoff: float = 1.0
    timeout: float | None = None

    def __post_init__(self) -> None:
        if self.retries < 0 or self.backoff < 0 or (self.timeout is not None and self.timeout <= 0):
            raise ValueError(
                f"call settings need retries >= 0, backoff >= 0 and timeout > 0 or None: {self}"
            )

    def invoke(self, runnable: Any, request: Any) -> Any:
        """`runnable.invoke(request)`, retried and timed as these settings say; the last error
        is raised as it is (an overflow at once)."""
        for attempt in range(self.retries + 1):
            try:
                return self._once(runnable, request)
            except Exception as exc:
                if is_overflow(exc) or attempt == self.retries:
                    raise
            time.sleep(self.backoff * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _once(self, runnable: Any, request: Any) -> Any:
        if self.timeout is None:
            return runnable.invoke(request)
        # The thread of a call that timed out cannot be stopped: it finishes on its own and its
        # answer is dropped; `shutdown(wait=False)` lets this call return at the time limit.
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxlab-call")
        try:
            return pool.submit(runnable.invoke, request).result(timeout=self.timeout)
        except FutureTimeout:
            raise CallTimeout(f"no answer within {self.timeout:g} s") from None
        finally:
            pool.shutdown(wait=False)


DEFAULT_CALLS = CallSettings()

__all__ = ["DEFAULT_CALLS", "CallSettings", "CallTimeout"]
