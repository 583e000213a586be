"""Reading what `ctxlab` prints on stderr: one message per problem, wrapped to the terminal."""

from __future__ import annotations

import shutil


def messages(text: str, width: int | None = None) -> list[str]:
    """The messages in `text`, each a first line and its indented continuation lines joined
    with one space; every line is checked to fit `width` (default: the terminal's, 100 under
    pytest unless `COLUMNS` says otherwise)."""
    width = width or shutil.get_terminal_size((100, 24)).columns
    lines = text.strip().splitlines()
    # only a word that cannot be broken (a path, kept whole to be copied) may pass the width
    wide = [ln for ln in lines if len(ln) > width and len(ln.split()) > 1]
    assert not wide, wide
    out: list[str] = []
    for line in lines:
        if line.startswith("  ") and out:
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out
