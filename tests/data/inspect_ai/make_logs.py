"""Write the Inspect AI `.eval` logs beside this script with the real `inspect_ai` package.

Inspect is not a ctxlab dependency: run this in a throwaway environment
(`python -m venv /tmp/inspect && /tmp/inspect/bin/pip install inspect-ai==0.3.285`, then
`/tmp/inspect/bin/python tests/data/inspect_ai/make_logs.py`). Each log is one sample of Inspect's
own `react` agent on `mockllm/model` (scripted tool calls, recorded usage with a cache split)
under one compaction strategy: none, `CompactionSummary` (its summariser another mock model),
`CompactionEdit` or `CompactionTrim`, each with a 4,000-token threshold. `react-subagent.eval`:
the agent calls a second `react` agent as a tool (`as_tool`), and a model grader scores it.
Inspect counts tokens with tiktoken, whose encoding cannot be downloaded offline, so the script
counts a quarter token per character instead; that only moves where the thresholds fire.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import inspect_ai.model._model as inspect_model
import inspect_ai.model._tokens as inspect_tokens
from inspect_ai import Task, eval
from inspect_ai.agent import as_tool, react
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    CompactionEdit,
    CompactionSummary,
    CompactionTrim,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.scorer import includes, model_graded_qa
from inspect_ai.tool import Tool, tool

HERE = Path(__file__).parent
THRESHOLD = 4000


def _count_text_tokens(text: str) -> int:
    return max(1, len(text) // 4)


for module in (inspect_tokens, inspect_model):
    if hasattr(module, "count_text_tokens"):
        module.count_text_tokens = _count_text_tokens


@tool
def bash() -> Tool:
    async def execute(cmd: str) -> str:
        """Run a command.

        Args:
            cmd: the command
        """
        return ("output line of " + cmd + "\n") * 100

    return execute


def agent_outputs() -> list[ModelOutput]:
    """Twelve tool calls, then `submit`; usage: input 10+i, cache read 1000*i, cache write 7."""
    outputs = [
        ModelOutput.for_tool_call("mockllm/model", "bash", {"cmd": f"ls {i}"}) for i in range(12)
    ]
    outputs.append(ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": "done"}))
    for i, output in enumerate(outputs):
        output.usage = ModelUsage(
            input_tokens=10 + i,
            output_tokens=5,
            input_tokens_cache_read=1000 * i,
            input_tokens_cache_write=7,
            total_tokens=10 + i + 5 + 1000 * i + 7,
        )
    return outputs


def strategies() -> dict[str, object]:
    summariser = get_model(
        "mockllm/model",
        custom_outputs=[
            ModelOutput.from_content(
                "mockllm/model", f"<analysis>a</analysis><summary>Summary {i}: ran ls.</summary>"
            )
            for i in range(20)
        ],
    )
    return {
        "none": None,
        "summary": CompactionSummary(threshold=THRESHOLD, model=summariser),
        "edit": CompactionEdit(threshold=THRESHOLD),
        "trim": CompactionTrim(threshold=THRESHOLD),
    }


def subagent_task() -> tuple[Task, object]:
    """A `researcher` react agent used as a tool, and `model_graded_qa` with a mock grader."""
    researcher_model = get_model(
        "mockllm/model",
        custom_outputs=[
            ModelOutput.for_tool_call("mockllm/model", "bash", {"cmd": "find ."}),
            ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": "found a.py"}),
        ],
    )
    researcher = react(
        name="researcher",
        description="Finds files.",
        prompt="You research.",
        tools=[bash()],
        model=researcher_model,
    )
    grader = get_model(
        "mockllm/model", custom_outputs=[ModelOutput.from_content("mockllm/model", "GRADE: C")]
    )
    task = Task(
        dataset=[Sample(input="Fix the bug.", target="done")],
        solver=react(prompt="You are an agent.", tools=[bash(), as_tool(researcher)]),
        scorer=model_graded_qa(model=grader),
    )
    model = get_model(
        "mockllm/model",
        custom_outputs=[
            ModelOutput.for_tool_call("mockllm/model", "researcher", {"input": "Find the file."}),
            ModelOutput.for_tool_call("mockllm/model", "bash", {"cmd": "cat a.py"}),
            ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": "done"}),
        ],
    )
    return task, model


def main() -> None:
    for name, strategy in strategies().items():
        with tempfile.TemporaryDirectory() as log_dir:
            task = Task(
                dataset=[Sample(input="Fix the bug.", target="done")],
                solver=react(prompt="You are an agent.", tools=[bash()], compaction=strategy),
                scorer=includes(),
            )
            model = get_model("mockllm/model", custom_outputs=agent_outputs())
            (log,) = eval(task, model=model, log_dir=log_dir, display="none")
            shutil.copy(log.location, HERE / f"react-{name}.eval")
    with tempfile.TemporaryDirectory() as log_dir:
        task, model = subagent_task()
        (log,) = eval(task, model=model, log_dir=log_dir, display="none")
        shutil.copy(log.location, HERE / "react-subagent.eval")


if __name__ == "__main__":
    main()
