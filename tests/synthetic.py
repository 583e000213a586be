"""Deterministic long agent traces for tests and the benchmark.

A coding-agent-shaped conversation: a task, then turns of tool calls (often parallel) with their
results, occasional user follow-ups. Sizes are chosen to exercise every Deep Agents mechanism:
`execute`/`run_tests`/`task` results over 80,000 chars (offloaded), `read_file` results up to
~100 KB (never offloaded: they drive budget overflows and tail clips), `write_file`/`edit_file`
arguments over 2,000 chars (argument truncation), a HumanMessage over 200,000 chars (human
offload), one of 150,000 chars (kept: it overflows a 30k window) and, in Anthropic
format, list content with `tool_use` and `thinking` blocks.
"""

from __future__ import annotations

import random
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab._trace import Trace, from_messages

_WORDS = (
    "agent context tokens summary offload window budget trigger keep cutoff request model "
    "message result file path error test pass fail build module function class return value "
    "parse config cache index query frame event policy replay history"
).split()

TOOLS_OPENAI = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool of the synthetic agent.",
            "parameters": {
                "type": "object",
                "properties": {k: {"type": "string"} for k in keys},
                "required": list(keys),
            },
        },
    }
    for name, keys in (
        ("read_file", ("file_path",)),
        ("write_file", ("file_path", "content")),
        ("edit_file", ("file_path", "old_string", "new_string")),
        ("execute", ("command",)),
        ("run_tests", ("target",)),
        ("grep", ("pattern",)),
        ("task", ("description",)),
    )
]
TOOLS_ANTHROPIC = [
    {
        "name": t["function"]["name"],
        "description": t["function"]["description"],
        "input_schema": t["function"]["parameters"],
    }
    for t in TOOLS_OPENAI
]


def _text(rng: random.Random, chars: int, width: int = 80) -> str:
    """Line-structured filler of about `chars` characters.

    Each word is `rng.choice(_WORDS)` drawn the way `random.Random.choice` draws it
    (`getrandbits` of the count's bit length until one is below the count), inline: the same
    text and generator state for a seed, a third of the time (the suite makes millions of
    words, the conformance traces alone 12 million)."""
    words = _WORDS
    count = len(words)
    bits = count.bit_length()
    draw = rng.getrandbits
    per_line = max(1, width // 7)
    out: list[str] = []
    size = 0
    while size < chars:
        picked = []
        for _ in range(per_line):
            r = draw(bits)
            while r >= count:
                r = draw(bits)
            picked.append(words[r])
        line = " ".join(picked)
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)[:chars]


def _result_size(rng: random.Random, name: str, big: float) -> int:
    roll = rng.random()
    if name in {"execute", "run_tests", "task"} and roll < big:
        return rng.randint(82_000, 130_000)
    if name == "read_file" and roll < big / 2:
        return rng.randint(20_000, 100_000)
    return rng.randint(80, 3_000)


def _args(rng: random.Random, name: str, turn: int, index: int) -> dict[str, Any]:
    path = f"/src/module_{turn % 37}_{index}.py"
    if name == "write_file":
        size = rng.choice((300, 1_500, 2_500, 6_000, 20_000))
        return {"file_path": f"/out/file_{turn}_{index}.py", "content": _text(rng, size)}
    if name == "edit_file":
        return {
            "file_path": path,
            "old_string": _text(rng, rng.choice((50, 2_100))),
            "new_string": _text(rng, rng.choice((60, 3_000))),
        }
    if name == "read_file":
        return {"file_path": path}
    if name == "grep":
        return {"pattern": rng.choice(_WORDS)}
    if name == "task":
        return {"description": _text(rng, 200)}
    if name == "run_tests":
        return {"target": f"tests/test_{turn % 11}.py"}
    return {"command": f"make step{turn % 13}"}


def make_messages(
    turns: int = 300,
    *,
    fmt: str = "openai",
    seed: int = 0,
    big: float = 0.06,
    system: bool = True,
    huge_human_at: int | None = None,
    large_human_at: int | None = None,
    thinking: bool = True,
    usage: bool = False,
    same_path: float = 0.0,
    episodes: bool = False,
) -> list[BaseMessage]:
    """`turns` model calls' worth of messages (the last AIMessage ends the run without calls).

    `episodes=True` ends the agent loop (an AIMessage without calls) before every later human
    message, so the conversation can be re-run as real LangGraph invocations, one per human
    message; turns then count those extra AIMessages too.
    """
    rng = random.Random(seed)
    names = ("read_file", "write_file", "edit_file", "execute", "run_tests", "grep", "task")
    weights = (30, 14, 10, 16, 8, 14, 8)
    messages: list[BaseMessage] = []
    if system:
        messages.append(SystemMessage("You are a synthetic coding agent. " + _text(rng, 1_500)))
    messages.append(HumanMessage("Task: " + _text(rng, 600)))
    seen = counted = 0
    for turn in range(turns):
        humans = []
        if turn and rng.random() < 0.04:
            humans.append(HumanMessage("Follow-up: " + _text(rng, rng.randint(40, 800))))
        if huge_human_at is not None and turn == huge_human_at:
            humans.append(HumanMessage("Log dump:\n" + _text(rng, 210_000)))
        if large_human_at is not None and turn == large_human_at:
            humans.append(HumanMessage("Paste:\n" + _text(rng, 150_000)))
        if humans and episodes and isinstance(messages[-1], ToolMessage):
            messages.append(_ai("Waiting for the user.", [], fmt, rng, False))
        messages.extend(humans)
        last = turn == turns - 1
        count = 0 if last else rng.choice((1, 1, 1, 2, 2, 3))
        calls = []
        for index in range(count):
            name = rng.choices(names, weights)[0]
            calls.append(
                {"name": name, "args": _args(rng, name, turn, index), "id": f"call_{turn}_{index}"}
            )
        if len(calls) > 1 and rng.random() < same_path:  # deepagents rejects the later ones
            for call in calls:
                call["name"] = rng.choice(("write_file", "edit_file"))
                call["args"] = {**_args(rng, call["name"], turn, 0), "file_path": "/same.py"}
        text = _text(rng, rng.randint(0, 400)) if rng.random() < 0.7 or not calls else ""
        ai = _ai(text, calls, fmt, rng, thinking)
        if usage:  # provider-reported usage, ~10% above chars/3.3
            seen = int(sum(len(str(m.content)) for m in messages[counted:]) / 3.0) + seen
            counted = len(messages)
            ai.usage_metadata = {
                "input_tokens": seen,
                "output_tokens": 50,
                "total_tokens": seen + 50,
            }
        messages.append(ai)
        for call in calls:
            size = _result_size(rng, call["name"], big)
            body = f"[{call['name']} {call['id']}]\n" + _text(rng, size)
            content: Any = body
            if fmt == "anthropic" and rng.random() < 0.3:
                content = [{"type": "text", "text": body}]
            messages.append(
                ToolMessage(content=content, tool_call_id=call["id"], name=call["name"])
            )
    return messages


def _ai(
    text: str, calls: list[dict[str, Any]], fmt: str, rng: random.Random, thinking: bool
) -> AIMessage:
    if fmt == "openai":
        return AIMessage(content=text, tool_calls=calls)
    blocks: list[dict[str, Any]] = []
    if thinking and rng.random() < 0.2:
        blocks.append({"type": "thinking", "thinking": _text(rng, 300), "signature": "sig"})
    if text:
        blocks.append({"type": "text", "text": text})
    blocks.extend(
        {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]} for c in calls
    )
    return AIMessage(
        content=blocks,
        tool_calls=calls,
        response_metadata={"model_provider": "anthropic"},
    )


def make_trace(
    turns: int = 300,
    *,
    fmt: str = "openai",
    seed: int = 0,
    model: str | None = None,
    provider: str | None = None,
    with_tools: bool = True,
    **kwargs: Any,
) -> Trace:
    """A synthetic `Trace`, one turn per AIMessage; tool schemas in the format's own shape."""
    tools = (TOOLS_OPENAI if fmt == "openai" else TOOLS_ANTHROPIC) if with_tools else []
    return from_messages(
        make_messages(turns, fmt=fmt, seed=seed, **kwargs),
        trace_id=f"synthetic-{fmt}-{turns}-{seed}",
        model=model,
        provider=provider,
        tools=list(tools),
    )
