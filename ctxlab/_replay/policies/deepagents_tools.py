"""The tool schemas a default `create_deep_agent` puts in every model request.

Shipped as data (`ctxlab/_replay/policies/deepagents/tools.json`), generated from the real package
by
`scripts/deepagents_tool_schemas.py` (a test reruns it with `--check`), so ctxlab needs no
`deepagents` at run time. Each schema is stored as the approximate token counter serialises a
tool, so counting them gives the counter's number for the real tools.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any


@cache
def default_tools() -> tuple[dict[str, Any], ...]:
    """The 8 default tools (`ls, read_file, write_file, edit_file, delete, glob, grep, task`),
    as `{name, description, parameters}` dicts."""
    data = (
        files("ctxlab._replay.policies.deepagents")
        .joinpath("tools.json")
        .read_text(encoding="utf-8")
    )
    return tuple(json.loads(data)["tools"])
