"""A harness's own model calls as traces of their own.

Loaders keep the calls a harness made for itself (Inspect's scorers and graders, summarisers,
judges) in `Trace.harness_calls`, out of the agent's turns: they are not the agent's context,
and replaying them as its turns would be wrong. They are still model calls with a context
and a bill; a model-graded scorer re-reads the whole transcript, and on Inspect's logs its
calls can be most of the billed input. `harness_traces` gives each of them as a trace of one
call: its recorded input as the history, its answer as the call's output, its usage, and the
agent trace it came from as parent, so it can be replayed, counted and billed like any
trace.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace

from ctxlab._ingest.inputs import Inputs
from ctxlab._trace import Trace, Turn


def harness_traces(
    source: str | os.PathLike[str] | Trace | Iterable[Trace], name: str | None = None
) -> list[Trace]:
    """Every harness call of the traces `source` names (`ctxlab._ingest.load.traces_of`: a
    path, a trace or traces, subagents included) as a trace of its own, in recorded order;
    only the calls called `name` (Inspect's scorer calls are `"scorer"`) when it is given.

    Each trace is `{parent id}:{call name}:{n}` (n counts the parent's harness calls from 0),
    of the parent's format, source and tools, with the call's inputs as its history."""
    from ctxlab._ingest.load import traces_of

    out = []
    for trace in traces_of(source):
        for n, call in enumerate(trace.harness_calls):
            if name is None or call.name == name:
                out.append(_own_trace(trace, call, n))
    return out


def _own_trace(parent: Trace, call: Turn, n: int) -> Trace:
    history = list(call.inputs)
    messages = [*history, call.output] if call.output is not None else history
    turn = replace(call, index=0, position=len(history), inputs=Inputs.of(history))
    kind = call.name or "harness"
    return Trace(
        trace_id=f"{parent.trace_id}:{kind}:{n}",
        format=parent.format,
        source=parent.source,
        messages=messages,
        turns=[turn],
        tools=[],
        model=call.model or parent.model,
        provider=call.provider or parent.provider,
        parent_trace_id=parent.trace_id,
        metadata={**parent.metadata, "harness_call": kind},
        notes=[
            f"The {kind!r} call {n} of trace {parent.trace_id}, as a trace of its own (one call; "
            "the file does not say which tool schemas it was sent, so none are counted)."
        ],
    )


__all__ = ["harness_traces"]
