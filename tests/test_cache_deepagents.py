"""The prompt-cache simulation of Deep Agents replays is exact: conformance with the real
middleware, and a hand-computed example.

The real middleware (`deepagents_oracle.run_oracle`) is driven over the same trace, and the
request each model call really received (system message, tool schemas, messages; for a call
that raised `ContextOverflowError`, the reduced request it refused to send) is recorded.
Splitting each into parts (the tool schemas, the system prompt, each message) with their
content and approximate tokens gives, per call, the tokens of the longest common prefix with
the previous request. ctxlab's `cache_frame` must report exactly those numbers, from
`Call.request`, which must hold the same parts with the same tokens.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from deepagents.middleware.summarization import SummarizationMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

import ctxlab
from ctxlab._cost.calibration import Biller, default_fit
from ctxlab._evaluate.metrics import cache_frame, common_prefixes, summary
from ctxlab._replay.replay import replay
from ctxlab._trace import Trace, from_messages
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import Fixed
from tests.deepagents_oracle import _Observer, run_oracle
from tests.synthetic import make_trace

SUMMARY = "## SESSION INTENT\nSynthetic.\n\n## SUMMARY\n" + "Progress was made. " * 80
TRACES = Path(__file__).resolve().parents[1] / "traces"

Sent = tuple[SystemMessage, list[BaseMessage], list[Any]]


@contextmanager
def _recording_requests() -> Iterator[list[Sent]]:
    """Record the request of every model call the oracle drives, in call order.

    The oracle's innermost handler sees each request the model receives; a call that ends in
    `ContextOverflowError` never reaches it, and the oracle counts the reduced request passed
    to `_check_reduction` instead, so that one is recorded for it. Both are wrapped, always
    calling through.
    """
    sent: list[Sent] = []
    reduced: list[Sent] = []
    handler, overflow = _Observer.handler, _Observer.overflow
    check = SummarizationMiddleware._check_reduction

    def on_handler(self: _Observer, request: Any) -> Any:
        sent.append((request.system_message, list(request.messages), list(request.tools)))
        return handler(self, request)

    def on_overflow(self: _Observer, reason: str) -> None:
        sent.append(reduced[-1])
        overflow(self, reason)

    def on_check(self: Any, original: Any, request: Any, error: Any) -> None:
        reduced.append((request.system_message, list(request.messages), list(request.tools)))
        check(self, original, request, error)

    with (
        mock.patch.object(_Observer, "handler", on_handler),
        mock.patch.object(_Observer, "overflow", on_overflow),
        mock.patch.object(SummarizationMiddleware, "_check_reduction", on_check),
    ):
        yield sent


def _usage_scale(counted: list[BaseMessage], raw: list[int], tools: int) -> float:
    """The factor `count_tokens_approximately(use_usage_metadata_scaling=True)` multiplies its
    count by (read from langchain_core; checked against the real count by the caller)."""
    providers, last, at_last, running = set(), None, 0, tools
    for m, toks in zip(counted, raw, strict=True):
        running += toks
        if isinstance(m, AIMessage):
            providers.add(m.response_metadata.get("model_provider"))
            if m.usage_metadata and isinstance(m.usage_metadata.get("total_tokens"), int):
                last, at_last = m.usage_metadata["total_tokens"], running
    if len(counted) <= 1 or len(providers) != 1 or None in providers or not last:
        return 1.0
    return min(1.25, max(1.0, last / at_last))


def _parts(
    sent: Sent, cpt: float, keys: dict[int, tuple[BaseMessage, str]], scaled: bool
) -> list[tuple]:
    """(content key, tokens) per part of a real request, in the order ctxlab gives them.

    With usage scaling the first k parts hold `ceil(raw_k * factor)`, so that every prefix,
    the whole request included, is counted as LangChain counts a whole request."""
    system, messages, tools = sent
    counted: list[Any] = [system, *messages]
    parts: list[tuple] = []
    if tools:
        parts.append(("tools", count_tokens_approximately([], tools=tools, chars_per_token=cpt)))
    for m in counted:
        hit = keys.get(id(m))  # the recorded lists keep each message alive: ids stay unique
        if hit is None:
            # what the provider is sent: everything but LangChain's own message id
            hit = keys[id(m)] = (m, repr(m.model_dump(exclude={"id"})))
        parts.append((hit[1], count_tokens_approximately([m], chars_per_token=cpt)))
    if not scaled:
        return parts
    tools_tokens = parts[0][1] if tools else 0
    factor = _usage_scale(counted, [t for _, t in parts[1 if tools else 0 :]], tools_tokens)
    real = count_tokens_approximately(
        counted, tools=tools, chars_per_token=cpt, use_usage_metadata_scaling=True
    )
    assert math.ceil(sum(t for _, t in parts) * factor) == real
    out, raw, before = [], 0, 0
    for key, toks in parts:
        raw += toks
        out.append((key, math.ceil(raw * factor) - before))
        before = math.ceil(raw * factor)
    return out


def _common_prefix(previous: list[tuple], parts: list[tuple]) -> tuple[int, int, int]:
    """Tokens of the longest common prefix as `parts` counts them and as `previous` did (they
    differ only under usage scaling), and how many parts it spans."""
    now = then = k = 0
    for (key_a, toks_a), (key_b, toks_b) in zip(previous, parts, strict=False):
        if key_a != key_b:
            break
        now, then, k = now + toks_b, then + toks_a, k + 1
    return now, then, k


def _check_cache_matches_oracle(
    trace: Trace, policy: DeepAgents, oracle_kwargs: dict[str, Any]
) -> tuple[int, set[str]]:
    """Replay `trace` both ways; assert ctxlab's request parts and cache prefixes equal the
    real requests'. Returns how many calls were compared and the event kinds seen."""
    cpt = 3.3 if oracle_kwargs["anthropic"] else 4.0
    with _recording_requests() as sent:
        oracle = run_oracle(trace, summary_text=SUMMARY, **oracle_kwargs)
    result = replay(trace, policy, Fixed(SUMMARY))
    # costs on the policy's own count (an estimated bill is not priced), so the simulated
    # prefixes compare with the real requests' counts (billed pricing: tests/test_billing.py)
    result.biller = Biller("estimated", trace.model, default_fit(trace.model))
    assert [(c.turn, c.context_tokens, c.messages) for c in result.calls] == oracle.turns
    assert len(sent) == len(result.calls)

    keys: dict[int, tuple[BaseMessage, str]] = {}
    real = [_parts(s, cpt, keys, policy.use_usage_metadata) for s in sent]
    for call, parts in zip(result.calls, real, strict=True):
        assert sum(t for _, t in parts) == call.context_tokens
        assert [t for _, t in call.request] == [t for _, t in parts], call.turn
    common = [_common_prefix(a, b) for a, b in zip(real, real[1:], strict=False)]
    totals = [c.context_tokens for c in result.calls]

    prefixes, exact = common_prefixes(result)
    assert exact and summary(result, trace)["cache_exact"] is True
    assert prefixes == [0] + [now for now, _, _ in common]
    frame = cache_frame(result, trace)
    assert frame["common_prefix"].to_list() == prefixes
    breaks = [k < len(a) for (_, _, k), a in zip(common, real, strict=False)]
    assert frame["cache_break"].to_list() == [False, *breaks]
    rebilled = [t - then for (_, then, _), t in zip(common, totals, strict=False)]
    assert frame["rebilled_tokens"].to_list() == [0, *rebilled]
    return len(result.calls), {e.kind for e in result.event_list}


def _trunc(trigger: float, keep: float = 0.10) -> dict[str, Any]:
    return {
        "trigger": ("fraction", trigger),
        "keep": ("fraction", keep),
        "truncate_args_settings": {"trigger": ("fraction", trigger), "keep": ("fraction", keep)},
    }


# id: (format, turns, window, reserved max_tokens, explicit settings or None, trace kwargs)
CASES: dict[str, tuple] = {
    "anthropic-200k-trigger-0.85": ("anthropic", 300, 200_000, 64_000, None, {"big": 0.15}),
    "anthropic-200k-trigger-0.25": (
        "anthropic",
        300,
        200_000,
        8_000,
        _trunc(0.25),
        {"big": 0.1, "huge_human_at": 150},
    ),
    "openai-30k-trigger-0.25": (
        "openai",
        300,
        30_000,
        None,
        _trunc(0.25),
        {"large_human_at": 120, "huge_human_at": 200},
    ),
    "anthropic-30k-overflow": (
        "anthropic",
        300,
        30_000,
        4096,
        None,
        {"big": 0.4, "large_human_at": 120, "huge_human_at": 200},
    ),
    "openai-truncation-by-messages": (
        "openai",
        300,
        100_000,
        None,
        {
            "trigger": [{"tokens": 40_000, "messages": 120}, ("fraction", 0.6)],
            "keep": ("messages", 12),
            "truncate_args_settings": {
                "trigger": ("messages", 40),
                "keep": ("tokens", 6_000),
                "max_length": 500,
            },
        },
        {"same_path": 0.5},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_cache_prefixes_match_the_real_requests(case: str) -> None:
    """Synthetic 300-turn traces through the mechanisms: Deep Agents' defaults (trigger 0.85),
    trigger and truncation at 0.25, tail clips and overflows, truncation by message count."""
    fmt, turns, window, max_tokens, settings, kwargs = CASES[case]
    trace = make_trace(turns, fmt=fmt, seed=len(case), **kwargs)
    anthropic = fmt == "anthropic"
    policy = DeepAgents(
        window=window,
        chars_per_token=3.3 if anthropic else 4.0,
        max_output_tokens=max_tokens,
        **(settings or {}),
    )
    oracle_kwargs = dict(
        window=window,
        anthropic=anthropic,
        max_tokens=max_tokens,
        tools=trace.tools,
        settings=settings,
    )
    compared, kinds = _check_cache_matches_oracle(trace, policy, oracle_kwargs)
    assert compared == turns
    assert {"summarize", "offload_tool_result"} <= kinds
    if settings is not None:
        assert "truncate_args" in kinds
    if case == "anthropic-30k-overflow":
        assert {"tail_clip", "overflow_error"} <= kinds


def test_cache_prefixes_match_the_real_requests_with_usage_scaling() -> None:
    """Counts scaled by recorded usage (`use_usage_metadata=True`, which also trusts reported
    usage as a trigger): the parts are scaled so that they still add up to each count."""
    trace = make_trace(300, fmt="anthropic", seed=21, provider="anthropic", usage=True)
    policy = DeepAgents(window=200_000, max_output_tokens=64_000, use_usage_metadata=True)
    oracle_kwargs = dict(
        window=200_000,
        anthropic=True,
        max_tokens=64_000,
        tools=trace.tools,
        ls_provider="anthropic",
    )
    compared, kinds = _check_cache_matches_oracle(trace, policy, oracle_kwargs)
    assert compared == 300 and "summarize" in kinds


def _without_usage(trace: Trace) -> Trace:
    """The trace with no recorded usage on its AIMessages (nothing to scale counts by)."""
    messages = [
        m.model_copy(update={"usage_metadata": None}) if isinstance(m, AIMessage) else m
        for m in trace.messages
    ]
    return dataclasses.replace(trace, messages=messages)


SAMPLES = ("deepagents_long_session.jsonl.xz", "deepagents_short_session.jsonl.xz")


@pytest.fixture(scope="module")
def samples() -> dict[str, Trace]:
    """The bundled samples, loaded once for the module: the cases below only read them (the
    oracle replays copies of the messages, `_without_usage` builds a new trace)."""
    return {name: ctxlab.load(TRACES / name)[0] for name in SAMPLES}


@pytest.mark.parametrize(("window", "usage"), [(16_000, False), (20_000, False), (20_000, True)])
def test_cache_prefixes_match_the_real_requests_on_the_samples(
    window: int, usage: bool, samples: dict[str, Trace]
) -> None:
    """The bundled sample sessions (the long one, its subagent, the short one), at windows
    small enough to summarise, truncate arguments and clip tails. Their AIMessages carry the
    recorded usage, which the real counter scales by: as recorded with `use_usage_metadata`,
    and without the usage under the default policy. Calls keep their recorded max_tokens."""
    compared, kinds = 0, set()
    for name in SAMPLES:
        for trace in samples[name].walk():
            trace = trace if usage else _without_usage(trace)
            policy = DeepAgents(window=window, chars_per_token=3.3, use_usage_metadata=usage)
            oracle_kwargs = dict(
                window=window, anthropic=True, tools=trace.tools, ls_provider="anthropic"
            )
            n, seen = _check_cache_matches_oracle(trace, policy, oracle_kwargs)
            compared += n
            kinds |= seen
    assert compared == 159 + 6 + 6
    assert {"summarize", "truncate_args", "offload_tool_result", "tail_clip"} <= kinds


def test_cache_prefixes_by_hand() -> None:
    """Argument truncation rewrites an old AIMessage in the middle of the request: the cache
    keeps the system prompt and the task only. No tools, no summary: every part a message.

    Truncation fires at 3 messages and spares the last 2; calls are made before positions
    2 (request: system, task), 4 (+ write, ok: 3 messages, the write is the newest but 2, so
    it is kept whole) and 6 (+ read, data: the write is now truncated)."""
    content = "x" * 100
    write = AIMessage(
        "",
        tool_calls=[
            {"name": "write_file", "args": {"file_path": "/a", "content": content}, "id": "w"}
        ],
    )
    msgs = [
        SystemMessage("sys"),
        HumanMessage("go"),
        write,
        ToolMessage("ok", tool_call_id="w", name="write_file"),
        AIMessage("", tool_calls=[{"name": "read_file", "args": {"file_path": "/a"}, "id": "r"}]),
        ToolMessage("data", tool_call_id="r", name="read_file"),
        AIMessage("done"),
    ]
    trace = from_messages(msgs)
    policy = DeepAgents(
        window=None,
        trigger=("tokens", 10**9),
        truncate_args_settings={
            "trigger": ("messages", 3),
            "keep": ("messages", 2),
            "max_length": 50,
        },
    )
    result = replay(trace, policy, Fixed("s"))

    def tok(m: BaseMessage) -> int:
        return count_tokens_approximately([m])

    short = write.model_copy()
    short.tool_calls = [
        {
            **write.tool_calls[0],
            "args": {"file_path": "/a", "content": "x" * 20 + "...(argument truncated)"},
        }
    ]
    sys_, task, ok, read, data = (tok(msgs[i]) for i in (0, 1, 3, 4, 5))
    assert (sys_, task, tok(write), ok, tok(short)) == (6, 5, 56, 8, 41)
    assert [[t for _, t in c.request] for c in result.calls] == [
        [sys_, task],
        [sys_, task, tok(write), ok],
        [sys_, task, tok(short), ok, read, data],
    ]
    assert [e.kind for e in result.event_list] == ["truncate_args"]
    prefixes, exact = common_prefixes(result)
    assert exact and prefixes == [0, sys_ + task, sys_ + task]
    frame = cache_frame(result, trace)
    assert frame["cache_break"].to_list() == [False, False, True]
    assert frame["rebilled_tokens"].to_list() == [0, 0, tok(write) + ok]
