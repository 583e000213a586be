"""Errors users see when a trace file is not what a loader expected."""

from __future__ import annotations


class TraceFormatError(ValueError):
    """A trace file (or a run or line inside it) could not be read.

    The message always names the file, the line or run id when known, and what was expected,
    so a user with hundreds of exports can find the culprit without a debugger.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        run_id: str | None = None,
    ) -> None:
        self.source = source
        self.line = line
        self.run_id = run_id
        self.reason = message
        where = []
        if source:
            where.append(source)
        if line is not None:
            where.append(f"line {line}")
        if run_id:
            where.append(f"run {run_id}")
        prefix = ": ".join([", ".join(where)]) + ": " if where else ""
        super().__init__(prefix + message)

    def located(self, source: str) -> TraceFormatError:
        """The same error, naming `source` if it did not already name a file."""
        if self.source:
            return self
        return TraceFormatError(self.reason, source=source, line=self.line, run_id=self.run_id)


class UnsupportedSettingError(ValueError):
    """A policy's settings ask for what this trace does not give: a fraction of the window,
    stress mode or a window-sized policy on a trace whose model window is unknown. The
    message says what to pass (`window=N`, or a model with a known profile)."""


class StoreError(RuntimeError):
    """The store file cannot be used as asked; the message names the file and what to do."""


class StoreBusyError(StoreError):
    """Another process holds the store file for writing longer than the timeout."""


class QueryRefusedError(StoreError):
    """A statement `Store.query` will not run: it would write, attach, copy, export or load."""


class SweepError(ValueError):
    """The sweep request is wrong; raised before any work starts."""


class TuneError(ValueError):
    """The `ctxlab.tune` request is wrong (a bad space, objective or split, a stored study of
    the same name with other settings); raised before any work starts."""


class FlagError(ValueError):
    """A command-line flag with a bad value: the message names the flag, the value and the
    forms the flag takes, as argparse's own `argument --flag: ...` lines do."""

    def __init__(self, flag: str, value: str, reason: str) -> None:
        self.flag = flag
        self.value = value
        super().__init__(f"argument {flag}: invalid value {value!r}: {reason}")
