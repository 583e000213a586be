"""Model calls of the probes: their cache keys, the cache, and asking many at once.

Every call is keyed by sha256(model identity, prompt, input): the model as LangChain describes it
(its type and identifying parameters, so two configurations never share an answer), the probe's
prompt (a question, the judge's filled rubric, or the next-action marker) and the input (the
context messages and the tool schemas bound). A cached answer is never asked again, so a rerun
of the same probes costs nothing and reads the same answers: same cache, same results, byte for
byte. Uncached calls go through LangChain's own `Runnable.batch_as_completed` with
`max_concurrency`, and a rate limiter, when given, is LangChain's (`InMemoryRateLimiter`) set on
the chat model; each answer is cached as it arrives, so an interrupted run keeps what it paid for.
A call that fails after its retries (`ctxlab._replay.model_calls.CallSettings`) is handed back as
`Failed`, never cached, so the probe's row carries the error and a rerun asks only that call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableLambda

from ctxlab._messages import message_text
from ctxlab._replay.model_calls import DEFAULT_CALLS, CallSettings
from ctxlab._replay.overflow import is_overflow

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.rate_limiters import BaseRateLimiter


class ProbeCache(Protocol):
    """Where probe answers are kept: key -> the answer (as `Reply.encode` writes it).

    `put` keeps the first answer stored for a key (a second writer's is dropped), so every
    reader sees the same answer. `ctxlab.Store.probe_cache()` keeps them in a store's table.
    """

    def get(self, key: str) -> str | None:
        """The answer stored under `key`, or None."""
        ...

    def put(self, key: str, answer: str, model: str) -> None:
        """Store `answer` of `model` (its display name) under `key`, unless one is stored."""
        ...


@dataclass
class MemoryProbeCache:
    """A `ProbeCache` in a dict: what the probes use when given no cache."""

    answers: dict[str, str] = field(default_factory=dict)

    def get(self, key: str) -> str | None:
        """The answer stored under `key`, or None."""
        return self.answers.get(key)

    def put(self, key: str, answer: str, model: str) -> None:
        """Store `answer` under `key` unless one is stored."""
        self.answers.setdefault(key, answer)


def model_id(model: BaseChatModel) -> str:
    """The model's identity in cache keys: its type and LangChain's `asdict()` (identifying
    parameters, `_type`), as JSON with sorted keys."""
    return json.dumps({"type": type(model).__name__, **model.asdict()}, sort_keys=True, default=str)


def model_name(model: BaseChatModel) -> str:
    """A short name for the model: its `model_name` / `model` / `model_id` parameter or the
    file it loads (`model_path`: llama.cpp), else that of the model it wraps (`llm`: a
    Hugging Face pipeline's `model_id`), else its type."""
    for source in (model, getattr(model, "llm", None)):
        if source is None:
            continue
        params = source.asdict() if hasattr(source, "asdict") else {}
        for name in ("model_name", "model", "model_id", "model_path", "repo_id"):
            value = params.get(name) or getattr(source, name, None)
            if isinstance(value, str) and value:
                return value
    return str(model.asdict().get("_type") or type(model).__name__)


def with_rate_limiter(model: BaseChatModel, rate_limiter: BaseRateLimiter | None) -> BaseChatModel:
    """`model` with LangChain's `rate_limiter` set (a copy), or `model` itself if None."""
    if rate_limiter is None:
        return model
    return model.model_copy(update={"rate_limiter": rate_limiter})


@dataclass(frozen=True, slots=True)
class Reply:
    """What a call answered: its text and its tool calls (name, arguments)."""

    text: str
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()

    def encode(self) -> str:
        """The cached form: JSON with sorted keys."""
        calls = [{"name": n, "args": a} for n, a in self.tool_calls]
        return json.dumps(
            {"text": self.text, "tool_calls": calls}, sort_keys=True, ensure_ascii=False
        )

    @classmethod
    def decode(cls, cached: str) -> Reply:
        """A reply from its cached form."""
        data = json.loads(cached)
        return cls(data["text"], tuple((c["name"], c["args"]) for c in data["tool_calls"]))

    @classmethod
    def of(cls, message: AIMessage) -> Reply:
        """The reply a chat model's message carries."""
        return cls(message_text(message), tuple((c["name"], c["args"]) for c in message.tool_calls))

    def shown(self) -> str:
        """The reply as one text: its text, then each tool call as `name {arguments}`."""
        lines = [self.text] if self.text else []
        lines += [
            f"{n} {json.dumps(a, sort_keys=True, ensure_ascii=False)}" for n, a in self.tool_calls
        ]
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Call:
    """One request to a chat model: the context `messages` (the question, if any, last),
    the tool schemas bound, and the `prompt` the key names it by."""

    model: BaseChatModel
    prompt: str
    messages: tuple[BaseMessage, ...]
    tools: tuple[dict[str, Any], ...] = ()

    @property
    def key(self) -> str:
        """sha256 of (model identity, prompt, input) as hex."""
        digest = hashlib.sha256()
        for part in (model_id(self.model), self.prompt, _input(self.messages, self.tools)):
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\x00")
        return digest.hexdigest()


def _input(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> str:
    """A canonical JSON of what is sent: each message's type, content, tool calls and the
    tool call it answers, then the tools (ids and metadata a loader may vary are left out)."""
    sent = []
    for m in messages:
        item: dict[str, Any] = {"type": m.type, "content": m.content}
        if isinstance(m, AIMessage) and m.tool_calls:
            item["tool_calls"] = [[c["name"], c["args"], c.get("id")] for c in m.tool_calls]
        if isinstance(m, ToolMessage):
            item["tool_call_id"] = m.tool_call_id
        sent.append(item)
    return json.dumps(
        {"messages": sent, "tools": list(tools)},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )


@dataclass(frozen=True, slots=True)
class Failed:
    """A call that gave no answer: what went wrong, as `ExceptionType: message`."""

    error: str
    overflow: bool = False
    """Whether the input was larger than the model's window (`is_overflow`)."""

    @classmethod
    def of(cls, error: BaseException) -> Failed:
        """The failure `error` describes, on one line."""
        return cls(" ".join(f"{type(error).__name__}: {error}".split()), is_overflow(error))


def ask(
    calls: Sequence[Call],
    cache: ProbeCache,
    *,
    max_concurrency: int | None = None,
    settings: CallSettings = DEFAULT_CALLS,
) -> list[Reply | Failed]:
    """The reply to every call, in order: from `cache`, else asked (each distinct key once,
    retried and timed by `settings`) and cached as it arrives. A call that still fails gives
    `Failed` in its place and nothing is cached for it, so a rerun asks only the failed ones."""
    keys = [c.key for c in calls]
    found: dict[str, str] = {}
    failed: dict[str, Failed] = {}
    todo: dict[str, Call] = {}
    for key, call in zip(keys, calls, strict=True):
        if key in found or key in todo:
            continue
        cached = cache.get(key)
        if cached is None:
            todo[key] = call
        else:
            found[key] = cached
    for group in _groups(list(todo.items())):
        runnable = _runnable(group[0][1])
        asking = RunnableLambda(partial(_ask, settings, runnable))
        config: Any = {"max_concurrency": max_concurrency}
        inputs = [list(call.messages) for _, call in group]
        for i, out in asking.batch_as_completed(inputs, config, return_exceptions=True):
            key, call = group[i]
            if isinstance(out, Exception):
                failed[key] = Failed.of(out)
                continue
            answer = Reply.of(out).encode()
            cache.put(key, answer, model_name(call.model))
            found[key] = cache.get(key) or answer
    return [Reply.decode(found[k]) if k in found else failed[k] for k in keys]


def _ask(settings: CallSettings, runnable: Any, messages: Any) -> Any:
    """One model call with `settings`' retries, backoff and timeout (a batch's body)."""
    return settings.invoke(runnable, messages)


def _groups(items: list[tuple[str, Call]]) -> list[list[tuple[str, Call]]]:
    """Calls grouped by model and tool schemas (one runnable each), in first-seen order."""
    groups: dict[tuple[int, str], list[tuple[str, Call]]] = {}
    for key, call in items:
        tools = json.dumps(list(call.tools), sort_keys=True, default=str)
        groups.setdefault((id(call.model), tools), []).append((key, call))
    return list(groups.values())


def _runnable(call: Call) -> Any:
    """The call's model with its tools bound (the model alone if it binds no tools)."""
    if not call.tools:
        return call.model
    try:
        return call.model.bind_tools(list(call.tools))
    except NotImplementedError:
        return call.model
