"""Write a large synthetic LangSmith export shaped exactly like LangChainTracer's ops.

Each model call carries the full history in the `lc` constructor form, as the tracer logs it,
so an export grows quadratically with turns, like real long-agent exports. Content is
deterministic (seeded), sized like a coding session: short AI turns with tool calls, tool
results of a few hundred to a few thousand characters, now and then a very large one.
"""

from __future__ import annotations

import argparse
import json
import random
import uuid
from pathlib import Path
from typing import Any

from langchain_core.load import dumpd
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

NS = uuid.UUID("6f1c2a4e-0000-4000-8000-000000000000")


def _id(*parts: object) -> str:
    return str(uuid.uuid5(NS, "/".join(map(str, parts))))


def conversation(turns: int, seed: int = 7) -> list[BaseMessage]:
    rng = random.Random(seed)
    words = "def class return import self value path test error result file line data".split()
    msgs: list[BaseMessage] = [
        SystemMessage("You are a coding agent. " * 40),
        HumanMessage("Fix the failing tests in the repository.", id=_id("h")),
    ]
    for t in range(turns):
        call_id = f"toolu_{t:05d}"
        size = rng.choice([300, 800, 1500, 2500, 4000]) if t % 40 else 60_000
        body = "\n".join(" ".join(rng.choices(words, k=10)) for _ in range(size // 60))
        msgs.append(
            AIMessage(
                content=" ".join(rng.choices(words, k=25)),
                tool_calls=[{"name": "bash", "args": {"cmd": f"pytest -k t{t}"}, "id": call_id}],
                id=_id("ai", t),
                usage_metadata={
                    "input_tokens": 1000 + t,
                    "output_tokens": 50,
                    "total_tokens": 1050 + t,
                },
            )
        )
        msgs.append(ToolMessage(body, tool_call_id=call_id, name="bash", id=_id("tool", t)))
    msgs.append(AIMessage("All tests pass.", id=_id("ai", "final")))
    return msgs


def ops(msgs: list[BaseMessage], trace: str) -> list[dict[str, Any]]:
    out = [
        {
            "op": "post",
            "id": trace,
            "trace_id": trace,
            "run_type": "chain",
            "name": "LangGraph",
            "dotted_order": f"20260101T000000000000Z{trace}",
            "inputs": {},
            "extra": {},
        }
    ]
    ai_positions = [i for i, m in enumerate(msgs) if isinstance(m, AIMessage)]
    for n, pos in enumerate(ai_positions):
        rid = _id("run", n)
        clock = f"{n // 3600:02d}{n // 60 % 60:02d}{n % 60:02d}"
        dotted = f"20260101T000000000000Z{trace}.20260101T{clock}000000Z{rid}"
        inputs = {"messages": [[dumpd(m) for m in msgs[:pos]]]}
        out.append(
            {
                "op": "post",
                "id": rid,
                "trace_id": trace,
                "parent_run_id": trace,
                "run_type": "llm",
                "name": "ChatAnthropic",
                "dotted_order": dotted,
                "inputs": inputs,
                "extra": {
                    "metadata": {"ls_provider": "anthropic", "ls_model_name": "claude-sonnet-4-5"}
                },
            }
        )
        gen = {"text": "", "type": "ChatGeneration", "message": dumpd(msgs[pos])}
        out.append(
            {
                "op": "patch",
                "id": rid,
                "trace_id": trace,
                "dotted_order": dotted,
                "outputs": {"generations": [[gen]], "llm_output": None, "type": "LLMResult"},
            }
        )
    return out


def write(path: Path, turns: int) -> int:
    with path.open("w", encoding="utf-8") as fh:
        for op in ops(conversation(turns), _id("trace", turns)):
            fh.write(json.dumps(op) + "\n")
    return path.stat().st_size


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", type=Path)
    parser.add_argument("--turns", type=int, default=330)
    args = parser.parse_args()
    print(f"{args.path}: {write(args.path, args.turns) / 1e6:.1f} MB")
