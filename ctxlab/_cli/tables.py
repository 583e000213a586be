"""Every table `ctxlab` prints, fitted to the terminal: one renderer for all commands.

A cell shows its value on one line (newlines and runs of spaces become one space), integers
grouped (`170,283`) and floats rounded, with one count of decimals per column (`24,886.2`,
`3.14`, `0.0821`); `-` is a missing value. Columns of numbers are right-aligned and never cut.
When the table is wider than the terminal, headers wrap at `_` (three lines at most), then the
widest text columns are cut with an ellipsis (`…`; ids and keys in the middle, so a trace and
its subagents stay apart), and columns that still do not fit are left out, named on a line
under the table; `wide=True` (the commands' `--wide`) shows every column and cell in full.
The width is `$COLUMNS` when set, else the terminal's, else 100 (output piped to a file or
another program).

A `params` column (a replay's parameters as JSON, as the store keeps them) is shown as a short
label of what differs from the row's `policy` defaults (`ctxlab._cli.params_label`), wrapped,
never cut to `{"chars_per_to…`.

`rich` lays the table out and measures characters by their terminal width (wide CJK characters,
emoji); this module decides the column widths, so layout is the same on every terminal. Only the
`table` format of a command goes through here: its JSON, JSONL and CSV stay as they are.
"""

from __future__ import annotations

import argparse
import io
import math
import re
import shutil
import textwrap
from collections.abc import Collection, Sequence
from typing import Any

FALLBACK_WIDTH = 100
"""Columns when stdout is not a terminal and `$COLUMNS` is not set."""

GAP = 2
"""Spaces between columns."""

HEADER_LINES = 3
"""Most lines a header wraps onto."""

MIN_TEXT = 10
"""The narrowest a text column is cut to before columns are left out instead."""

WIDE_HELP = "show every column and cell in full, however wide (default: fit the terminal)"

_NUMBER = re.compile(r"^[+-]?(\d[\d,]*(\.\d+)?|\.\d+)(e[+-]?\d+)?%?$")


def add_wide_flag(parser: argparse.ArgumentParser) -> None:
    """`--wide` for a command that prints a table."""
    parser.add_argument("--wide", action="store_true", help=WIDE_HELP)


def terminal_width() -> int:
    """`$COLUMNS` if set, else the terminal's width, else `FALLBACK_WIDTH`."""
    return shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns


def decimals(values: Sequence[Any]) -> int:
    """Decimals for a column's floats, by the largest: 1 from 1,000 up, 2 from 1, else 4 (one
    count of decimals per column, so its numbers line up)."""
    floats = [abs(v) for v in values if isinstance(v, float) and math.isfinite(v)]
    largest = max(floats, default=0.0)
    return 1 if largest >= 1000 else 2 if largest >= 1 else 4


def cell(value: Any, places: int = 2) -> str:
    """One value as one line of text: integers grouped, floats grouped with `places`
    decimals, text with each run of whitespace (newlines too) as one space."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{places}f}" if math.isfinite(value) else str(value)
    return " ".join(str(value).split())


def _middle(text: str, width: int) -> str:
    """`text` cut to `width` in the middle, keeping both ends (`c0134…kkWfd`): ids that share a
    prefix (a trace and its subagents) stay apart."""
    if len(text) <= width:
        return text
    head = width // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :] if width > 1 else "…"


def _is_id(column: str) -> bool:
    """Ids and keys are cut in the middle, not at the end."""
    return column in {"trace", "id", "key"} or column.endswith(("_id", "_key"))


def _is_number(value: Any) -> bool:
    """A number, a missing value, or text spelling a number (`+1`, `2.9%`): right-aligned."""
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and bool(_NUMBER.match(value.strip()))


def _header_lines(header: str, width: int) -> list[str]:
    """`header` in lines of at most `width` characters, broken after `_` where it can be."""
    parts = re.findall(r"[^_]*_|[^_]+", header) or [header]
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + len(part) <= width:
            lines[-1] += part
        else:
            lines.append(part)
    return [chunk for line in lines for chunk in textwrap.wrap(line, width) or [""]]


def _header_min(header: str) -> int:
    """The narrowest `header` gets in at most `HEADER_LINES` lines, wrapped at `_`."""
    longest = max(len(p) for p in re.findall(r"[^_]*_|[^_]+", header) or [header])
    return next(
        w
        for w in range(longest, len(header) + 1)
        if len(_header_lines(header, w)) <= HEADER_LINES or w == len(header)
    )


def _fill(wants: list[int], floors: list[int], room: int) -> list[int]:
    """Widths between `floors` and `wants` summing to at most `room`: every column gets its
    floor, then the space left rises evenly like water, so the columns that want least are
    shown whole and only the widest are cut."""
    widths = list(floors)
    left = room - sum(widths)
    hungry = sorted(
        (i for i, (w, f) in enumerate(zip(wants, floors, strict=True)) if w > f),
        key=lambda i: wants[i] - floors[i],
    )
    for n, i in enumerate(hungry):
        step = min(wants[i] - widths[i], max(0, left) // (len(hungry) - n))
        widths[i] += step
        left -= step
    return widths


def _layout(
    columns: Sequence[str],
    texts: list[list[str]],
    numeric: list[bool],
    width: int,
    wrap: Collection[str],
    whole: Collection[str],
) -> tuple[list[int], list[int]]:
    """`(shown column indexes, their widths)` for a table at most `width` characters wide."""
    from rich.cells import cell_len

    content = [max([0, *(cell_len(r[i]) for r in texts)]) for i in range(len(columns))]
    header_min = [_header_min(c) for c in columns]
    full = [max(content[i], len(c)) for i, c in enumerate(columns)]
    shown = list(range(len(columns)))

    def room(idx: list[int]) -> int:
        return width - GAP * (len(idx) - 1)

    if sum(full) <= room(shown):
        return shown, full
    floors = [
        max(content[i], header_min[i])
        if numeric[i] or c in whole
        else max(header_min[i], min(content[i], MIN_TEXT if c not in wrap else 2 * MIN_TEXT))
        for i, c in enumerate(columns)
    ]
    while len(shown) > 1 and sum(floors[i] for i in shown) > room(shown):
        shown.pop()
    wants = [max(content[i], header_min[i]) for i in shown]
    widths = [floors[i] for i in shown]
    for ids_too in (False, True):  # ids last: cut in the middle, they still tell rows apart
        goal = [
            w if ids_too or not _is_id(columns[i]) else f
            for i, w, f in zip(shown, wants, widths, strict=True)
        ]
        widths = _fill(goal, widths, room(shown))
    if sum(widths) < room(shown):  # room to spare: unwrap headers where it helps
        widths = _fill([full[i] for i in shown], widths, room(shown))
    return shown, widths


def table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    wide: bool = False,
    width: int | None = None,
    wrap: Collection[str] = (),
    whole: Collection[str] = (),
    legend: str | None = None,
) -> str:
    """`rows` under `columns` as text at most `width` (default: the terminal's) characters
    wide; `wide` shows everything in full. Columns named in `wrap` wrap their cells onto more
    lines instead of cutting them; columns named in `whole` (names, like numbers) are never
    cut. `legend` is printed under the table, wrapped to the width."""
    from rich.box import Box
    from rich.cells import cell_len
    from rich.console import Console, JustifyMethod
    from rich.table import Table
    from rich.text import Text

    width = terminal_width() if width is None else width
    if "params" in columns:
        rows, wrap = _labelled(columns, rows), {*wrap, "params"}
    places = [decimals([r[i] for r in rows]) for i in range(len(columns))]
    texts = [[cell(v, p) for v, p in zip(row, places, strict=True)] for row in rows]
    numeric = [all(_is_number(r[i]) for r in rows) for i in range(len(columns))]
    if wide:
        shown = list(range(len(columns)))
        widths = [max([len(c), *(cell_len(r[i]) for r in texts)]) for i, c in enumerate(columns)]
    else:
        shown, widths = _layout(columns, texts, numeric, width, wrap, whole)
    plain = Box("    \n    \n -  \n    \n    \n    \n    \n    \n", ascii=True)
    grid = Table(box=plain, show_edge=False, pad_edge=False, padding=(0, GAP - 1, 0, 0))
    for i, w in zip(shown, widths, strict=True):
        justify: JustifyMethod = "right" if numeric[i] else "left"
        head = "\n".join(_header_lines(columns[i], w))
        grid.add_column(
            Text(head, justify=justify),
            justify=justify,
            width=w,
            no_wrap=columns[i] not in wrap,
            overflow="fold" if columns[i] in wrap else "ellipsis",
        )
    ids = {i for i in shown if _is_id(columns[i])}
    for r in texts:
        grid.add_row(
            *(
                Text(_middle(r[i], w) if i in ids else r[i])
                for i, w in zip(shown, widths, strict=True)
            )
        )
    out = io.StringIO()
    console = Console(
        file=out,
        width=sum(widths) + GAP * len(widths) + 1,
        color_system=None,
        force_terminal=False,
        highlight=False,
        markup=False,
        emoji=False,
        legacy_windows=False,
    )
    console.print(grid)
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    left_out = [columns[i] for i in range(len(columns)) if i not in shown]
    if left_out:
        lines.append(
            fit(
                f"({len(left_out)} more column{'s' if len(left_out) != 1 else ''} not shown: "
                f"{', '.join(left_out)}; --wide shows every column)",
                width,
            )
        )
    if legend:
        lines.append(fit(legend, width))
    return "\n".join(lines)


def _labelled(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """`rows` with each JSON `params` cell as its short label (`params_label`), read against
    the row's `policy` when the table has that column."""
    from ctxlab._cli.params_label import params_label

    at = columns.index("params")
    policy = columns.index("policy") if "policy" in columns else None
    out = []
    for row in rows:
        row = list(row)
        if isinstance(row[at], str):
            name = row[policy] if policy is not None else None
            row[at] = params_label(name if isinstance(name, str) else None, row[at])
        out.append(row)
    return out


def fit(text: str, width: int | None = None, indent: str = "  ", paths: bool = False) -> str:
    """A line of prose wrapped to `width` (default: the terminal's), continuation lines
    indented by `indent`; a word longer than the width (a subagent's trace id) is broken,
    unless the line holds `paths`, which stay whole to be copied as long as one fits on a
    line; a longer one is broken after a `/` (`_after_slashes`). Bytes of a file name that
    are not UTF-8 (which Python holds as lone surrogates) are shown escaped, `\\udcff`: the
    line must reach the terminal even when the name cannot."""
    width = terminal_width() if width is None else width
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    lines = textwrap.wrap(
        " ".join(text.split()),
        width,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=not paths,
    )
    return "\n".join(piece for line in lines for piece in _after_slashes(line, width, indent))


def _after_slashes(line: str, width: int, indent: str) -> list[str]:
    """`line` cut after its last `/` within `width` (at `width` where it has none), and the
    rest, indented, likewise, until every piece fits: a file deep in a folder of a folder
    (`corpus/<run>/events/event-00000-<uuid>.json`) is wider than a 100-column terminal,
    and a piece ending in `/` reads as a path that goes on."""
    out = []
    while len(line) > width:
        cut = line.rfind("/", len(indent) + 1, width) + 1 or width
        cut = max(cut, len(indent) + 1)  # a width no wider than the indent: a byte a piece
        out.append(line[:cut])
        line = indent + line[cut:]
    return [*out, line]


def clip(text: str, width: int) -> str:
    """`text` on one line, cut with an ellipsis to at most `width` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(0, width - 1)] + "…"


def plural(count: int, noun: str) -> str:
    """`1 trace`, `2 traces`, `1,204 turns` (a noun that takes `s`)."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
