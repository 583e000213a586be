"""The progress bar long runs draw on stderr (sweeps, tuning studies), in one place.

`rich` already lays out ctxlab's tables, so it draws the bar too: done of all, a run's own
words after the count, time spent and time left.
"""

from __future__ import annotations

import sys
from typing import Any


def stderr_bar(description: str, unit: str, total: int, **fields: Any) -> tuple[Any, Any]:
    """A started `rich` progress bar on stderr and its one task; `unit` follows the count
    and may name the task's `fields` (`"trials, front {task.fields[front]}"`)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
    )
    task = progress.add_task(description, total=total, **fields)
    progress.start()
    return progress, task
