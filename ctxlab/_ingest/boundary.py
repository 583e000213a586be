"""The last check of a loaded trace: every message and tool definition holds what replay and
evaluation walk, or the trace is refused with a located `TraceFormatError`.

Each reader checks the fields it reads (`ctxlab._ingest.formats.fields`), but what a reader
passes through untouched (content blocks, tool-call arguments, tool schemas) reaches the token
counter, the policies and fact extraction as it was in the file. A text block whose `text` is
`true` or missing, a tool definition that is `0`, arguments nested a thousand levels deep all
loaded and then failed in a replay or an evaluation with a `TypeError`, `KeyError` or
`RecursionError` naming no file. This check runs once per trace at the end of `ctxlab.load`,
for every format, and names the file, the message (its position in the history, or the call
whose input or output holds it), the field path and what was expected.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats.fields import describe
from ctxlab._ingest.inputs import Inputs, Part
from ctxlab._trace import Trace

MAX_NESTING = 100
"""Deepest nesting of objects and lists allowed inside one message or tool definition. Real
exports nest a few tens of levels at most (JSON schemas of tool parameters); the token counter
and the fact extractor walk values recursively and must stay far from Python's recursion
limit (1,000 frames)."""

TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
"""Content-block types whose `text` every step reads as a string."""


def check_trace(trace: Trace) -> None:
    """Raise `TraceFormatError` for the first message or tool definition of `trace` (or of its
    subagents) that replay or evaluation could not walk."""
    for place, message in _messages(trace):
        problem = _message_problem(message)
        if problem is not None:
            raise TraceFormatError(f"{_where(place, message)}: {problem}", source=trace.source)
    for i, tool in enumerate(trace.tools):
        if not isinstance(tool, dict):
            raise TraceFormatError(
                f"tools[{i}]: expected a tool definition (an object), got {describe(tool)}",
                source=trace.source,
            )
        if _too_deep(tool):
            raise TraceFormatError(
                f"tools[{i}]: {_nested_words()}; expected a tool definition",
                source=trace.source,
            )
    for sub in trace.subagents:
        check_trace(sub)


Place = tuple[Any, ...]
"""Where a message is, as `_where` words it: `("message", 3)`, `("inserted",)`,
`("call", 2, 5)` (input 5 of call 2) or `("call", 2)` (its output)."""


def _where(place: Place, message: BaseMessage) -> str:
    """A message's place in words ("message 3 (human)", "call 2 input 5 (ai)"), built only for
    the message at fault: formatting it for every message was a fifth of the check."""
    if place[0] == "message":
        return f"message {place[1]} ({message.type})"
    if place[0] == "inserted":
        return f"inserted message ({message.type})"
    if len(place) == 3:
        return f"{place[0]} {place[1]} input {place[2]} ({message.type})"
    return f"{place[0]} {place[1]} output"


def _messages(trace: Trace) -> Iterator[tuple[Place, BaseMessage]]:
    """Every distinct message the trace holds, with where it is (`Place`).

    Turns' inputs share slices of a few append-only lists (`ctxlab._ingest.inputs`): walking
    every input of every turn would look at n²/2 messages (10 million for a 10 MB session of
    3,700 calls), so each slice is walked only past what an earlier slice from the same list
    and start already covered."""
    seen: set[int] = set()
    reached: dict[tuple[int, int], int] = {}  # (list id, start) -> stop walked so far
    own_lists: list[list[BaseMessage]] = []

    for position, message in enumerate(trace.messages):
        if id(message) not in seen:
            seen.add(id(message))
            yield ("message", position), message
    for message in trace.inserted:
        if id(message) not in seen:
            seen.add(id(message))
            yield ("inserted",), message
    for kind, turns in (("call", trace.turns), ("harness call", trace.harness_calls)):
        for turn in turns:
            offset = 0
            for base, start, stop in _parts(turn.inputs, own_lists):
                key = (id(base), start)
                walked = reached.get(key, start)
                for i in range(walked, stop):
                    message = base[i]
                    if id(message) not in seen:
                        seen.add(id(message))
                        yield (kind, turn.index, offset + i - start), message
                reached[key] = max(walked, stop)
                offset += stop - start
            output = turn.output
            if output is not None and id(output) not in seen:
                seen.add(id(output))
                yield (kind, turn.index), output


def _parts(inputs: Sequence[BaseMessage], keep: list[list[BaseMessage]]) -> tuple[Part, ...]:
    """The shared slices of a turn's inputs (an `Inputs`), or the whole sequence as one list,
    kept alive in `keep` so that no later list can take its id."""
    if isinstance(inputs, Inputs):
        return inputs.parts
    own = list(inputs)
    keep.append(own)
    return ((own, 0, len(own)),)


def _message_problem(message: BaseMessage) -> str | None:
    content = message.content
    if isinstance(content, list):
        for i, block in enumerate(content):
            problem = _block_problem(block)
            if problem is not None:
                return f"field 'content[{i}]{problem}"
    elif not isinstance(content, str):
        return f"field 'content': expected text or a list of blocks, got {describe(content)}"
    if isinstance(message, AIMessage):
        for i, call in enumerate(message.tool_calls):
            if _too_deep(call.get("args")):
                return f"field 'tool_calls[{i}].args': {_nested_words()}"
    for name in ("additional_kwargs", "response_metadata"):
        value = getattr(message, name, None)
        if value and _too_deep(value):  # mostly empty: no call for those
            return f"field {name!r}: {_nested_words()}"
    return None


def _block_problem(block: Any) -> str | None:
    """The rest of the error for one content block (after `content[i]`), or None."""
    if isinstance(block, str):
        return None
    if not isinstance(block, dict):
        return f"': expected a content block (an object) or text, got {describe(block)}"
    if block.get("type") in TEXT_TYPES:
        text = block.get("text")
        if not isinstance(text, str):
            got = "no 'text'" if "text" not in block else describe(text)
            return f".text': expected the block's text (a string), got {got}"
    if _too_deep(block):
        return f"': {_nested_words()}"
    return None


_ATOMS = frozenset({str, int, float, bool, type(None)})
"""Types that nest nothing, most of the values walked: passed over on their exact type, which
is cheaper than the `isinstance` test every other value gets."""
_NESTED = (dict, list, tuple)


def _too_deep(value: Any, depth: int = 1) -> bool:
    """Whether `value` nests objects and lists more than `MAX_NESTING` levels.

    Recursive, but never past `MAX_NESTING` frames (a deeper value answers True there), so
    the check cannot overflow the interpreter's stack; the explicit stack it replaced cost a
    tenth of loading a small session (a stack and a generator for every flat block)."""
    if depth > MAX_NESTING:
        return True
    if isinstance(value, dict):
        children: Any = value.values()
    elif isinstance(value, list | tuple):
        children = value
    else:
        return False
    for child in children:
        if type(child) not in _ATOMS and isinstance(child, _NESTED) and _too_deep(child, depth + 1):
            return True
    return False


def _nested_words() -> str:
    return f"nested more than {MAX_NESTING} levels deep (expected the nesting of a trace export)"


__all__ = ["MAX_NESTING", "check_trace"]
