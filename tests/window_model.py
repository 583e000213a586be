"""Window-honest chat models: real LangChain `BaseChatModel`s that refuse, as real backends do,
any request larger than their window, and can fail a chosen share of calls.

`WindowModel` answers probe questions as `ContextModel` does (from its input only) and summary
requests with a deterministic digest of what it was sent; `WindowJudge` grades as `RubricJudge`.
Past `window` tokens (counted at `CHARS_PER_TOKEN` characters a token: fewer than LangChain's
approximation of 4, as real tokenizers often count more tokens than it) each raises the error
its `backend` raises, built with the backend's own exception class where it has one: LangChain's
`ContextOverflowError`, the OpenAI and Anthropic SDKs' `BadRequestError` with their bodies,
google-genai's `ClientError`, llama.cpp's and transformers' `ValueError` messages.

`OUTAGE` fails every call whose request digest is odd (about half of them, the same half every
run) with a `ConnectionError`, like a provider going down mid-run.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, ClassVar

import httpx
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from tests.context_model import ContextModel, RubricJudge

CHARS_PER_TOKEN = 3.0

BACKENDS = ("langchain", "openai", "anthropic", "google", "llamacpp", "transformers", "ollama")


def overflow_error(backend: str, tokens: int, window: int) -> Exception:
    """The error `backend` raises for a request of `tokens` tokens past its `window`."""
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat")
    if backend == "langchain":
        return ContextOverflowError(f"{tokens} tokens > {window}")
    if backend == "openai":
        import openai

        body = {
            "message": f"This model's maximum context length is {window} tokens. However, your "
            f"messages resulted in {tokens} tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
        response = httpx.Response(400, request=request, json={"error": body})
        return openai.BadRequestError(f"Error code: 400 - {body}", response=response, body=body)
    if backend == "anthropic":
        import anthropic

        body = {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": f"prompt is too long: {tokens} tokens > {window} maximum",
            },
        }
        response = httpx.Response(400, request=request, json=body)
        return anthropic.BadRequestError(f"Error code: 400 - {body}", response=response, body=body)
    if backend == "google":
        from google.genai.errors import ClientError

        message = (
            f"The input token count ({tokens}) exceeds the maximum number of tokens allowed "
            f"({window})."
        )
        return ClientError(
            400, {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
        )
    if backend == "llamacpp":
        return ValueError(f"Requested tokens ({tokens}) exceed context window of {window}")
    if backend == "transformers":
        return ValueError(
            f"Input length of input_ids is {tokens}, but `max_length` is set to {window}. This "
            "can lead to unexpected behavior. You should consider increasing `max_length` or, "
            "better yet, setting `max_new_tokens`."
        )
    if backend == "ollama":
        return RuntimeError(
            f"the request exceeds the available context size ({tokens} > n_ctx_slot = {window})"
        )
    raise ValueError(f"unknown backend {backend!r}")


def _size(messages: list[BaseMessage]) -> int:
    return int(sum(len(m.text) for m in messages) / CHARS_PER_TOKEN) + 1


def _digest(messages: list[BaseMessage]) -> int:
    text = "\x00".join(f"{m.type}:{m.text}" for m in messages)
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


OUTAGE = {"on": False}
"""While on, both models fail about half their calls (the same half every run)."""


class _Honest:
    """What both models check before answering: the window, the outage, the delay."""

    window: int
    backend: str
    delay: float
    outage: ClassVar[dict[str, bool]] = OUTAGE
    refused: list[int]

    def check(self, messages: list[BaseMessage]) -> None:
        if self.delay:
            time.sleep(self.delay)
        if self.outage["on"] and _digest(messages) % 2:
            raise ConnectionError("provider unavailable")
        size = _size(messages)
        if size > self.window:
            self.refused.append(size)
            raise overflow_error(self.backend, size, self.window)


class WindowModel(_Honest, ContextModel):
    """`ContextModel` with a window; a summary request (one message, no probe question) gets
    `summary of N characters: <digest>`, or `empty` if `empty` is set."""

    window: int = 4096
    backend: str = "llamacpp"
    delay: float = 0.0
    empty: bool = False
    refused: list[int] = Field(default_factory=list)
    """Sizes (tokens) of the requests it refused as too long."""
    accepted: list[int] = Field(default_factory=list)
    """Sizes of the requests it answered."""
    model_name: str = "window-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "window": self.window, "backend": self.backend}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.check(messages)
        self.accepted.append(_size(messages))
        if len(messages) == 1 and "do not call tools" not in messages[0].text:
            self.log.append(list(messages))
            text = "" if self.empty else self.summary(messages[0].text)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])
        return super()._generate(messages, stop, run_manager, **kwargs)

    @staticmethod
    def summary(prompt: str) -> str:
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:12]
        return f"summary of {len(prompt)} characters: {digest}"


class WindowJudge(_Honest, RubricJudge):
    """`RubricJudge` with a window; `ungraded` replies without a grade line."""

    window: int = 4096
    backend: str = "openai"
    delay: float = 0.0
    ungraded: bool = False
    refused: list[int] = Field(default_factory=list)

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"window": self.window, "ungraded": self.ungraded}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.check(messages)
        if self.ungraded:
            reply = AIMessage(content="The answer looks about right to me.")
            return ChatResult(generations=[ChatGeneration(message=reply)])
        return super()._generate(messages, stop, run_manager, **kwargs)


def factory() -> BaseChatModel:
    """A `module:Factory` for `--model tests.window_model:factory`."""
    return WindowModel()


__all__ = ["BACKENDS", "OUTAGE", "WindowJudge", "WindowModel", "factory", "overflow_error"]
