"""Reference harnesses: the REAL deepagents middleware driven over a recorded conversation.

`run_graph` is graph mode: a real `create_deep_agent` (its whole middleware stack, LangGraph
runs with a checkpointer) whose chat model replays the recorded AIMessages and whose tool calls
are answered with the recorded ToolMessages by a middleware placed where `middleware=[...]`
goes (inside FilesystemMiddleware, so offloading still applies). It records the final request of
every call. `run_oracle` (hooks mode, below) drives the same middleware instances directly and
also observes each decision.

Hooks mode (docs/deepagents.md §10): real `FilesystemMiddleware` and the real summarisation
middleware from deepagents' own factory (or its class with explicit settings), hooks chained
with LangChain's own `_chain_model_call_handlers` / `_chain_tool_call_wrappers`, state updates
applied with deepagents' own messages reducer, a real `StateBackend` whose `files` channel is a
dict, a scripted chat model whose only real call is the summariser (fixed text), and an
innermost handler that records the final request of every call. Decisions are observed by wrapping
private methods on the instances, always calling through; nothing is altered. On
`ContextOverflowError` (the real agent would crash) an `overflow_error` event is recorded and
the recorded AIMessage is appended anyway.

Messages get ids `m{position}` (their full-history position) so events can name positions.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from unittest import mock

import deepagents.middleware.summarization as da_summarization
from deepagents import create_deep_agent
from deepagents._messages_reducer import _messages_delta_reducer
from deepagents.backends import StateBackend
from deepagents.middleware.filesystem import FilesystemMiddleware
from deepagents.middleware.summarization import (
    SummarizationMiddleware,
    create_summarization_middleware,
)
from langchain.agents.factory import _chain_model_call_handlers, _chain_tool_call_wrappers
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ModelRequest, ModelResponse, ToolCallRequest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver

from ctxlab._trace import Trace

TOOL_SCHEMAS_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "deepagents_tool_schemas.py"


@cache
def tool_schemas_script() -> Any:
    """`scripts/deepagents_tool_schemas.py`, which builds the real default tools and writes
    ctxlab's copy of their schemas, loaded as a module."""
    spec = importlib.util.spec_from_file_location("deepagents_tool_schemas", TOOL_SCHEMAS_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upstream_default_tools() -> list[Any]:
    """The real `BaseTool`s a default deep agent's request carries (see the script)."""
    return list(_upstream_default_tools())


@cache
def _upstream_default_tools() -> tuple[Any, ...]:
    return tuple(tool_schemas_script().upstream_tools())


class ScriptedModel(BaseChatModel):
    """Chat model whose only real calls are summaries; `llm_type` picks LangChain's counter."""

    summary_text: str = "summary"
    llm_type: str = "scripted"
    ls_provider: str = "scripted"
    max_tokens: int | None = None

    @property
    def _llm_type(self) -> str:
        return self.llm_type

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        return {**super()._get_ls_params(stop=stop, **kwargs), "ls_provider": self.ls_provider}

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.summary_text))])


class ReplayedModel(ScriptedModel):
    """Answers agent calls with the recorded AIMessages in order, summary calls with fixed text."""

    outputs: list[AIMessage] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ReplayedModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if len(messages) == 1 and "Context Extraction Assistant" in messages[0].text:
            return super()._generate(messages, stop, run_manager, **kwargs)
        return ChatResult(generations=[ChatGeneration(message=self.outputs.pop(0))])


class _Recorded(AgentMiddleware):
    """Innermost-but-one layer: records each final request, answers tools from the trace."""

    def __init__(self, results: dict[str, ToolMessage], cpt: float) -> None:
        super().__init__()
        self.results, self.cpt = results, cpt
        self.rows: list[tuple[int, int]] = []

    def wrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
        counted = [request.system_message, *request.messages]
        count = count_tokens_approximately(counted, tools=request.tools, chars_per_token=self.cpt)
        self.rows.append((count, len(request.messages)))
        return handler(request)

    def wrap_tool_call(self, request: ToolCallRequest, handler: Any) -> Any:
        return self.results[request.tool_call["id"]]


def run_graph(
    trace: Trace,
    *,
    window: int | None,
    anthropic: bool,
    max_tokens: int | None = None,
    summary_text: str = "summary",
) -> list[tuple[int, int, int]]:
    """Per-turn (turn, request tokens, request messages) from real `create_deep_agent` runs.

    The trace must be episodic (a call-less AIMessage before each later human message); each
    human message starts one `invoke` on the same thread. Tools in the request are the deep
    agent's own default set.
    """
    messages = list(trace.messages)
    system = messages.pop(0).text if trace.system_prompt is not None else None
    model = ReplayedModel(
        summary_text=summary_text,
        llm_type="anthropic-chat" if anthropic else "scripted",
        max_tokens=max_tokens,
        profile={"max_input_tokens": window} if window is not None else None,
        outputs=[m for m in messages if isinstance(m, AIMessage)],
    )
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    recorder = _Recorded(results, 3.3 if anthropic else 4.0)
    agent = create_deep_agent(
        model=model,
        system_prompt=system,
        middleware=[recorder],
        checkpointer=InMemorySaver(),
        backend=StateBackend(),
    )
    config = {"configurable": {"thread_id": trace.trace_id}, "recursion_limit": 1_000_000}
    for message in messages:
        if isinstance(message, HumanMessage):
            agent.invoke({"messages": [message]}, config)
    return [(i, count, n) for i, (count, n) in enumerate(recorder.rows)]


class DictStateBackend(StateBackend):
    """The real `StateBackend` logic with its `files` channel held in a dict."""

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[str, Any] = {}

    def _read_files(self) -> dict[str, Any]:
        return self.store

    def _send_files_update(self, update: dict[str, Any]) -> None:
        for path, data in update.items():
            if data is None:
                self.store.pop(path, None)
            else:
                self.store[path] = data

    def text(self, path: str) -> str:
        return self.download_files([path])[0].content.decode("utf-8")


@dataclass
class OracleResult:
    """Per-turn (turn, context_tokens, messages) rows, events as tuples, files as text, and
    each sent request's messages by turn (turns that overflowed sent none)."""

    turns: list[tuple[int, int, int]] = field(default_factory=list)
    requests: dict[int, list[BaseMessage]] = field(default_factory=dict)
    events: list[tuple] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)


_PATH_IN_STUB = re.compile(r"saved in the filesystem at this path: (\S+)")


def run_oracle(
    trace: Trace,
    *,
    window: int | None,
    anthropic: bool,
    max_tokens: int | None = None,
    tools: list[Any] | None = None,
    summary_text: str = "summary",
    settings: dict[str, Any] | None = None,
    ls_provider: str = "scripted",
) -> OracleResult:
    """Drive the real middleware over `trace`.

    `settings` (trigger, keep, truncate_args_settings) selects the middleware class with those
    arguments; without it, deepagents' factory picks its profile-based defaults. A turn's
    recorded `max_output_tokens` goes into `model_settings["max_tokens"]`, as the request would
    carry it. `ls_provider` is what the model reports to LangSmith (the reported-usage trigger
    only trusts usage from messages of that provider).
    """
    model = ScriptedModel(
        summary_text=summary_text,
        llm_type="anthropic-chat" if anthropic else "scripted",
        max_tokens=max_tokens,
        ls_provider=ls_provider,
        profile={"max_input_tokens": window} if window is not None else None,
    )
    backend = DictStateBackend()
    fs = FilesystemMiddleware(backend=backend)
    if settings is None:
        summ = create_summarization_middleware(model, backend)
    else:
        summ = SummarizationMiddleware(
            model=model, backend=backend, trim_tokens_to_summarize=None, **settings
        )
    out = OracleResult()
    obs = _Observer(summ, out)
    model_call = _chain_model_call_handlers([fs.wrap_model_call, summ.wrap_model_call])
    tool_call = _chain_tool_call_wrappers([fs.wrap_tool_call])

    messages = [m.model_copy(update={"id": f"m{i}"}) for i, m in enumerate(trace.messages)]
    system = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
    system = system or SystemMessage("")
    start = 1 if trace.system_prompt is not None else 0
    state: dict[str, Any] = {"messages": []}
    request_tools = list(tools or [])
    turn_at = {t.position: t for t in trace.turns}

    with obs.patch():
        for pos in range(start, len(messages)):
            msg = messages[pos]
            if pos in turn_at:
                turn = turn_at[pos]
                obs.begin(turn.index, system, request_tools)
                request = ModelRequest(
                    model=model,
                    messages=list(state["messages"]),
                    system_message=system,
                    tools=request_tools,
                    state=state,
                    model_settings={"max_tokens": turn.max_output_tokens}
                    if turn.max_output_tokens is not None
                    else {},
                )
                try:
                    result = model_call(request, obs.handler)
                    for command in result.commands:
                        update = dict(command.update or {})
                        if "messages" in update:
                            state["messages"] = _messages_delta_reducer(
                                state["messages"], [update.pop("messages")]
                            )
                        state.update(update)
                except ContextOverflowError as exc:
                    obs.overflow(str(exc))
                obs.end()
            if isinstance(msg, ToolMessage):
                msg = _run_tool(tool_call, state, msg, pos, obs)
            state["messages"] = _messages_delta_reducer(state["messages"], [[msg]])
    out.files = {path: backend.text(path) for path in sorted(backend.store)}
    return out


def _run_tool(
    wrapper: Any, state: dict[str, Any], msg: ToolMessage, pos: int, obs: _Observer
) -> ToolMessage:
    last_ai = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
    call = next(
        (c for c in (last_ai.tool_calls if last_ai else []) if c["id"] == msg.tool_call_id),
        None,
    ) or {"name": msg.name, "args": {}, "id": msg.tool_call_id, "type": "tool_call"}
    request = ToolCallRequest(tool_call=call, tool=None, state=state, runtime=None)
    result = wrapper(request, lambda _r: msg)
    if result.id is None:  # deepagents' parallel-mutation error; the reducer would assign one
        result = result.model_copy(update={"id": f"m{pos}"})
    if result.content != msg.content and result.status != "error":
        found = _PATH_IN_STUB.search(result.text)
        obs.pending.append(
            (
                "offload_tool_result",
                pos,
                obs.count1(msg),
                obs.count1(result),
                found.group(1) if found else None,
            )
        )
    return result


def _pos(message: BaseMessage) -> int:
    return int(message.id[1:])


class _Observer:
    """Records what the real middleware decided, by wrapping (and calling through) its methods."""

    def __init__(self, summ: Any, out: OracleResult) -> None:
        self.summ = summ
        self.out = out
        self.pending: list[tuple] = []
        self.turn = -1

    def count1(self, message: BaseMessage) -> int:
        return self.summ._lc_helper._partial_token_counter([message])

    def count(self, messages: list[BaseMessage]) -> int:
        return self.summ._count_tokens(messages, self.system, self.tools)

    def begin(self, turn: int, system: SystemMessage, tools: list[Any]) -> None:
        self.turn, self.system, self.tools = turn, system, tools
        self.events: list[tuple] = [
            (kind, turn, (pos,), before, after, path)
            for kind, pos, before, after, path in self.pending
        ]
        self.pending = []
        self.last_reduced: tuple[int, int] | None = None
        self.summary: list[Any] | None = None
        self.recorded = False

    def end(self) -> None:
        self.out.events.extend(self.events)

    def handler(self, request: ModelRequest) -> ModelResponse:
        """Innermost handler: the request as the model would receive it."""
        count = self.count(request.messages)
        self.out.turns.append((self.turn, count, len(request.messages)))
        self.out.requests[self.turn] = list(request.messages)
        self.recorded = True
        self._close_summary(count)
        for m in request.messages:
            if isinstance(m, HumanMessage) and m.additional_kwargs.get("lc_evicted_to"):
                path = m.additional_kwargs["lc_evicted_to"]
                if not any(
                    e[0] == "offload_human_message" and e[5] == path
                    for e in self.out.events + self.events
                ):
                    self.events.append(
                        ("offload_human_message", self.turn, (_pos(m),), None, self.count1(m), path)
                    )
        return ModelResponse(result=[AIMessage("recorded")])

    def overflow(self, reason: str) -> None:
        count, n = self.last_reduced
        self.out.turns.append((self.turn, count, n))
        self._close_summary(count)
        self.events.append(("overflow_error", self.turn, (), count, None, None))

    def _close_summary(self, count: int) -> None:
        if self.summary is not None:
            kind, turn, touched, before, _after, path = self.summary
            self.events.append((kind, turn, touched, before, count, path))
            self.summary = None

    def patch(self) -> Any:
        summ = self.summ
        stack = _Patches()

        effective = summ._get_effective_messages

        def get_effective(request: ModelRequest) -> list[BaseMessage]:
            self.system, self.tools = request.system_message, request.tools
            return effective(request)

        stack.add(mock.patch.object(summ, "_get_effective_messages", get_effective))

        truncate = summ._truncate_args

        def truncate_args(messages: list[BaseMessage], total: int) -> Any:
            self.total = total
            result, modified = truncate(messages, total)
            if modified:
                touched = tuple(
                    _pos(b) for a, b in zip(messages, result, strict=True) if a is not b
                )
                self.total = self.count(result)
                self.events.append(("truncate_args", self.turn, touched, total, self.total, None))
            return result, modified

        stack.add(mock.patch.object(summ, "_truncate_args", truncate_args))

        create = summ._create_summary

        def create_summary(messages: list[BaseMessage]) -> str:
            touched = tuple(_pos(m) for m in messages if m.id is not None)
            self.summary = ("summarize", self.turn, touched, self.total, None, "history")
            return create(messages)

        stack.add(mock.patch.object(summ, "_create_summary", create_summary))

        check = summ._check_reduction

        def check_reduction(original: Any, reduced: Any, error: Any) -> None:
            self.last_reduced = (self.count(reduced.messages), len(reduced.messages))
            check(original, reduced, error)

        stack.add(mock.patch.object(summ, "_check_reduction", check_reduction))

        clip = da_summarization._clip_overflow_tail

        def clip_tail(messages: list[BaseMessage], backend: Any, **kwargs: Any) -> Any:
            before = self.count(messages)
            new, replacements = clip(messages, backend, **kwargs)
            if replacements:
                paths = [m.group(1) for r in replacements if (m := _PATH_IN_STUB.search(r.text))]
                self.events.append(
                    (
                        "tail_clip",
                        self.turn,
                        tuple(_pos(r) for r in replacements),
                        before,
                        self.count(new),
                        paths[0] if paths else None,
                    )
                )
            return new, replacements

        stack.add(mock.patch.object(da_summarization, "_clip_overflow_tail", clip_tail))
        return stack


class _Patches:
    def __init__(self) -> None:
        self.items: list[Any] = []

    def add(self, patcher: Any) -> None:
        self.items.append(patcher)

    def __enter__(self) -> _Patches:
        for p in self.items:
            p.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for p in reversed(self.items):
            p.stop()
