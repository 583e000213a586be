"""The scripted chat model: answers from a script, reports itself as Claude Sonnet 4.5."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from typing import Any

from langchain_anthropic.chat_models import convert_to_anthropic_tool
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import PrivateAttr

from .script import Step
from .seeded import ID_ALPHABET, stable_int, token_stream

MODEL_NAME = "claude-sonnet-4-5"
MODEL_VERSION = "claude-sonnet-4-5-20250929"
CHARS_PER_TOKEN = 3.3  # what Anthropic's tokenizer gives on code-heavy English, roughly


def message_chars(message: BaseMessage) -> int:
    """Characters a request spends on one message (text plus tool-call arguments)."""
    calls = getattr(message, "tool_calls", None) or []
    return len(message.text) + sum(len(json.dumps(c["args"])) for c in calls)


def tokens(chars: int) -> int:
    """Token estimate used for the fake usage numbers."""
    return math.ceil(chars / CHARS_PER_TOKEN)


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers from scripts, reporting itself as Claude Sonnet 4.5.

    The next reply is looked up from the request's last message: the tool-call id of the last
    tool result, or the text of the opening human message (main task or subagent task). That
    keeps it stateless across deepagents' summarisation, which rewrites earlier history. A
    request that is the summarisation prompt gets a summary built by `summarise`. Usage
    numbers mimic Anthropic's, prompt caching included, so deepagents' usage-based token
    scaling and triggers see plausible values.
    """

    model: str = MODEL_NAME
    # An explicit output cap, as agents set on ChatAnthropic; deepagents reserves it in its
    # input budget (0.95 * max_input_tokens - max_tokens), which is what triggers summaries.
    max_tokens: int = 8_192
    _replies: dict[str, Step] = PrivateAttr()
    _summarise: Callable[[str], str] = PrivateAttr()
    _previous: dict[str, list[str]] = PrivateAttr(default_factory=dict)

    def __init__(
        self, replies: dict[str, Step], summarise: Callable[[str], str], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._replies = replies
        self._summarise = summarise

    @property
    def _llm_type(self) -> str:
        return "scripted-anthropic-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        """Model and output cap, which ChatAnthropic also puts in its invocation params."""
        return {"model": self.model, "max_tokens": self.max_tokens}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """Trace metadata as ChatAnthropic reports it (provider, model, max tokens)."""
        return LangSmithParams(
            ls_provider="anthropic",
            ls_model_name=self.model,
            ls_model_type="chat",
            ls_max_tokens=self.max_tokens,
        )

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        """Bind tool schemas in Anthropic's format, as ChatAnthropic does.

        Bound kwargs become invocation params, which is how the schemas reach the traced
        `extra.invocation_params["tools"]`.
        """
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_anthropic_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1]
        summarising = len(messages) == 1 and "Context Extraction Assistant" in last.text
        if summarising:
            step = Step(self._summarise(last.text), None)
        elif isinstance(last, ToolMessage):
            step = self._replies[last.tool_call_id]
        else:
            step = self._replies[last.text]
        calls = [{**step.call, "type": "tool_call"}] if step.call else []
        output_tokens = tokens(len(step.text) + len(json.dumps(calls))) + 9
        total, cache_read = self._input_tokens(messages, kwargs.get("tools", []))
        # Agent calls go through AnthropicPromptCachingMiddleware (breakpoint on the last
        # message: whatever is not read from the cache is written to it); the summariser's
        # direct call is not cached.
        cache_write = 0 if summarising else total - cache_read
        system = messages[0].text if messages[0].type == "system" else ""
        msg_rng = random.Random(stable_int(system, len(messages), step.text))
        response_metadata = {
            "id": "msg_01" + token_stream(msg_rng, ID_ALPHABET, 22),
            "model": MODEL_VERSION,
            "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": total - cache_read - cache_write,
                "cache_creation_input_tokens": cache_write,
                "cache_read_input_tokens": cache_read,
                "output_tokens": output_tokens,
            },
            "model_name": MODEL_VERSION,
            "model_provider": "anthropic",
        }
        usage = {
            "input_tokens": total,
            "output_tokens": output_tokens,
            "total_tokens": total + output_tokens,
            "input_token_details": {"cache_read": cache_read, "cache_creation": cache_write},
        }
        message = AIMessage(
            content=step.text,
            tool_calls=calls,
            usage_metadata=usage,
            response_metadata=response_metadata,
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _input_tokens(
        self, messages: list[BaseMessage], tools: list[dict[str, Any]]
    ) -> tuple[int, int]:
        """(input tokens, tokens of the prefix unchanged since this agent's previous call).

        Agents are told apart by their system prompt (main, subagent, none for the summariser).
        """
        system = messages[0].text if messages[0].type == "system" else ""
        tools_chars = len(json.dumps(tools))
        signature = [f"{m.type}:{m.text}:{message_chars(m)}" for m in messages]
        previous = self._previous.get(system, [])
        self._previous[system] = signature
        common = 0
        while common < min(len(previous), len(signature)) and previous[common] == signature[common]:
            common += 1
        total = tokens(tools_chars + sum(message_chars(m) for m in messages))
        if not common:
            return total, 0
        return total, tokens(tools_chars + sum(message_chars(m) for m in messages[:common]))


# Every LLM run's `serialized.id` names the model's class by module and name, and the samples
# say `["__main__", "ScriptedChatModel"]`: the class keeps that name wherever it is imported from.
ScriptedChatModel.__module__ = "__main__"
