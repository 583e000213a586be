"""A chat model's input window, and telling a "context too long" error from any other failure.

LangChain raises its own `ContextOverflowError` only from the partner packages that translate
the provider's error; many backends do not. OpenAI answers `context_length_exceeded`, Anthropic
"prompt is too long", Google "input token count ... exceeds the maximum", llama.cpp
`ValueError("Requested tokens (7907) exceed context window of 2048")`, transformers "Input
length of input_ids is ..., but `max_length` is set to ...", Ollama and llama-server "the
request exceeds the available context size". The summariser and the probes must treat all of
these alike: cut the input and ask again (summaries), or record the call as too long (probes),
instead of dying on a message they do not recognise. Where the error names the window
("context window of 2048"), `stated_window` reads it, so a model without a profile still gets
an input cut to fit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from langchain_core.exceptions import ContextOverflowError

OVERFLOW_CODES = frozenset(
    {"context_length_exceeded", "string_above_max_length", "request_too_large"}
)
"""Error codes providers give an input larger than the model's window (OpenAI, Anthropic)."""

OVERFLOW_TEXT = re.compile(
    r"context[_ ]length[_ ]exceeded"
    r"|maximum context length"
    r"|exceeds? (?:the )?(?:model'?s? )?context (?:window|length|size)"
    r"|exceed(?:s|ed)? (?:the )?available context size"
    r"|context window (?:of \d+ )?(?:is )?exceeded"
    r"|prompt is too long"
    r"|input is too long"
    r"|too many (?:input )?tokens"
    r"|input token count.{0,40}exceeds"
    r"|exceeds the maximum number of tokens"
    r"|requested tokens \(\d+\) exceed"
    r"|input length of input_ids is \d+, but `?max_length`? is set to"
    r"|sequence length is longer than the specified maximum"
    r"|longer than the model'?s? (?:maximum|max)",
    re.IGNORECASE,
)
"""What the common backends say when the input does not fit (see the module docstring)."""

_STATED = re.compile(
    r"context window of (\d+)"
    r"|maximum context length is (\d+)"
    r"|maximum number of tokens allowed \((\d+)\)"
    r"|> (\d+) maximum"
    r"|`?max_length`? is set to (\d+)"
    r"|n_ctx(?:_slot)?\s*[=:]\s*(\d+)",
    re.IGNORECASE,
)


def is_overflow(error: BaseException) -> bool:
    """Whether `error` says the input is larger than the model's window, whichever backend
    raised it: LangChain's `ContextOverflowError`, a provider's error code (`code`, or
    `body["error"]["code"]` as the OpenAI and Anthropic SDKs keep it) or its message."""
    if isinstance(error, ContextOverflowError):
        return True
    codes = {getattr(error, "code", None), getattr(error, "type", None)}
    body = getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            codes |= {inner.get("code"), inner.get("type")}
            if OVERFLOW_TEXT.search(str(inner.get("message", ""))):
                return True
    if codes & OVERFLOW_CODES:
        return True
    return OVERFLOW_TEXT.search(str(error)) is not None


def stated_window(error: BaseException) -> int | None:
    """The window an overflow error states ("exceed context window of 2048" -> 2048), or None."""
    found = _STATED.search(str(error))
    if found is None:
        return None
    return int(next(g for g in found.groups() if g))


def model_window(model: Any, window: int | None = None) -> int | None:
    """The input window of `model` in tokens: `window` when given; else its LangChain profile's
    `max_input_tokens`; else what a local backend was built with (`n_ctx` of llama.cpp's
    `ChatLlamaCpp`, `num_ctx` of Ollama, the transformers model's `max_position_embeddings`
    behind a Hugging Face pipeline); None when nothing says."""
    if window is not None:
        return window
    profile = getattr(model, "profile", None)
    limit = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
    if _count(limit):
        return limit
    for name in ("max_input_tokens", "n_ctx", "num_ctx"):
        if _count(value := getattr(model, name, None)):
            return value
    pipeline = getattr(getattr(model, "llm", None), "pipeline", None)
    config = getattr(getattr(pipeline, "model", None), "config", None)
    value = getattr(config, "max_position_embeddings", None)
    return value if _count(value) else None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


__all__ = ["OVERFLOW_CODES", "is_overflow", "model_window", "stated_window"]
