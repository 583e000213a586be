"""Small hand-built conversations shared by the policy tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab._trace import Trace


def agent(n: int, size: int = 400, *, system: bool = True) -> list:
    """system?, task, then n (tool call, result) turns, then a final answer."""
    msgs = [SystemMessage("sys")] if system else []
    msgs.append(HumanMessage("fix the bug in /src/app.py"))
    for i in range(n):
        msgs.append(AIMessage("", tool_calls=[{"name": "run", "args": {"i": i}, "id": f"c{i}"}]))
        msgs.append(ToolMessage("line\n" * (size // 5), tool_call_id=f"c{i}", name="run"))
    msgs.append(AIMessage("done"))
    return msgs


def real_traces(shared: Path) -> Iterator[Trace]:
    """Every trace in ../shared/data/real-traces, each subagent's too (`Trace.walk`)."""
    for path in sorted((shared / "data" / "real-traces").glob("*/*")):
        if path.is_dir() or path.name == "SOURCE.txt":
            continue
        loaded = ctxlab.load(path)
        for trace in loaded if isinstance(loaded, list) else [loaded]:
            yield from trace.walk()
