"""The catalogue's fast paths change nothing: every preset and pipeline gives the same replay
with them (`_engine_counts.INCREMENTAL`, the default) as with each stage recomputing its
request from scratch on every call, on random conversations (hypothesis) and on long synthetic
traces where every policy acts many times."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlab import replay
from ctxlab._evaluate import metrics
from ctxlab._replay.policies import PRESETS, _engine_counts, get
from ctxlab._replay.policies._engine_facts import meta_of
from ctxlab._replay.policies._engine_request import RequestTotals
from ctxlab._replay.policies.catalog import Pipeline
from ctxlab._replay.policies.engine import Item, count_orphans, kind_of
from ctxlab._replay.replay import Replay
from ctxlab._trace import Trace, from_messages
from ctxlab.summarizers import Fixed
from tests.synthetic import make_trace
from tests.test_policies_properties import SMALL, conversations


@contextmanager
def full_recomputation() -> Iterator[None]:
    _engine_counts.INCREMENTAL = False
    try:
        yield
    finally:
        _engine_counts.INCREMENTAL = True


def _fingerprint(r: Replay, trace: Trace) -> tuple:
    cache = metrics.cache_frame(r, trace, model="claude-sonnet-4-5")
    return (
        r.turns.to_dicts(),
        r.events.to_dicts(),
        [c.orphans for c in r.calls],  # type: ignore[attr-defined]
        {p: r.files[p] for p in r.files},
        cache.to_dicts(),
    )


def _same(trace: Trace, policy, summarizer=None) -> None:
    summarizer = summarizer or Fixed("the summary")
    fast = replay(trace, policy, summarizer)
    with full_recomputation():
        slow = replay(trace, policy, summarizer)
    assert _fingerprint(fast, trace) == _fingerprint(slow, trace), policy.name


PIPELINES = [
    ("clear-tool-uses", "langchain-summarization"),
    ("observation-masking", "claude-code"),
    ("tool-result-offload", "openhands-llm-summarizing"),
    ("openhands-observation-masking", "sliding-window"),
    ("inspect-edit", "inspect-summary"),
    # inspect-edit edits its view in place: behind a stage that grows its own output in place,
    # and ahead of one that rebuilds its request
    ("clear-tool-uses", "inspect-edit"),
    ("inspect-edit", "claude-code"),
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_fast_paths_equal_full_recomputation_on_random_conversations(messages):
    trace = from_messages(messages)
    for name in PRESETS:
        if name != "deepagents":
            _same(trace, get(name, **SMALL[name]))
    for a, b in PIPELINES:
        _same(trace, Pipeline((get(a, **SMALL[a]), get(b, **SMALL[b]))))


LONG = {
    "langchain-summarization": {"trigger": ("tokens", 60_000), "keep": ("messages", 30)},
    "clear-tool-uses": {"trigger": 40_000, "keep": 3},
    "sliding-window": {"max_tokens": 50_000},
    "openhands-conversation-window": {"window": 60_000},
    "claude-code": {"window": 80_000},
    "codex": {"window": 60_000},
    "inspect-edit": {"threshold": 20_000},
    "inspect-trim": {"threshold": 20_000},
    "inspect-summary": {"threshold": 20_000},
    "clear-tool-uses+": {"clear_at_least": 5_000, "clear_tool_inputs": True, "trigger": 30_000},
}


@pytest.fixture(scope="module")
def long_trace() -> Trace:
    return make_trace(250, seed=3, fmt="anthropic", model="claude-sonnet-4-5")


@pytest.mark.parametrize("name", [n for n in PRESETS if n != "deepagents"] + ["clear-tool-uses+"])
def test_fast_paths_equal_full_recomputation_on_a_long_trace(long_trace, name):
    preset = name.rstrip("+")
    policy = get(preset, **LONG.get(name, {}))
    fast = replay(long_trace, policy, Fixed("the summary"))
    assert fast.events.height > 0 or preset == "raw", "the policy should act on this trace"
    _same(long_trace, policy)


@pytest.mark.parametrize(("a", "b"), PIPELINES)
def test_pipelines_equal_full_recomputation_on_a_long_trace(long_trace, a, b):
    _same(long_trace, Pipeline((get(a, **LONG.get(a, {})), get(b, **LONG.get(b, {})))))


@st.composite
def request_sequences(draw: st.DrawFn) -> tuple[list, list[list[int]]]:
    """A conversation and a sequence of requests over it: each keeps, masks, drops blocks of
    or appends to the previous one, the edits `RequestTotals` must follow exactly."""
    messages = draw(conversations())
    steps: list[list[int]] = []
    current: list[int] = []
    for _ in range(draw(st.integers(1, 12))):
        op = draw(st.sampled_from(["append", "drop", "shuffle", "mask"]))
        if op == "append" or not current:
            extra = draw(st.lists(st.integers(0, len(messages) - 1), max_size=6))
            current = current + extra
        elif op == "drop":
            a = draw(st.integers(0, len(current) - 1))
            b = draw(st.integers(a, len(current)))
            current = current[:a] + current[b:]
        elif op == "mask":
            i = draw(st.integers(0, len(current) - 1))
            current = current[:i] + [-1 - current[i]] + current[i + 1 :]
        else:
            current = draw(st.permutations(current))
        steps.append(list(current))
    return messages, steps


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request_sequences())
def test_request_bookkeeping_equals_a_fresh_count(case):
    """Totals, buckets and orphans after every edit equal a count from scratch."""
    from langchain_core.messages import ToolMessage

    from ctxlab._cost import tokens as tk

    messages, steps = case
    masked = {
        i: Item(i, ToolMessage("[masked]", tool_call_id=m.tool_call_id), "stubs")
        if isinstance(m, ToolMessage)
        else Item(i, m.model_copy(update={"content": "[masked]"}), "stubs")
        for i, m in enumerate(messages)
    }
    plain = {i: Item(i, m, kind_of(m)) for i, m in enumerate(messages)}
    tok = _engine_counts.TokenCache(tk.CHARS_PER_TOKEN)
    meta_cache: dict = {}

    def meta(m):
        return meta_cache.setdefault(id(m), meta_of(m, id(m), tok(m)))

    req = RequestTotals(7, meta_cache, meta)
    for step in steps:
        items = [plain[i] if i >= 0 else masked[-1 - i] for i in step]
        req.update(items)
        by_kind: dict[str, int] = {"tools": 7}
        for it in items:
            by_kind[it.kind] = by_kind.get(it.kind, 0) + tok(it.msg)
        assert req.total == 7 + sum(tok(it.msg) for it in items)
        assert req.by_kind == by_kind
        assert req.orphans == count_orphans([it.msg for it in items])
        assert req.toks == [7] + [tok(it.msg) for it in items]


class _Keeper:
    """A stage that declares nothing and keeps every list it is given, as a user's may."""

    def __init__(self) -> None:
        self.kept: list[tuple[list[Item], list[Item]]] = []

    def apply(self, items: list[Item], ctx) -> list[Item]:
        self.kept.append((items, list(items)))
        return items


@pytest.mark.parametrize("name", ["observation-masking", "clear-tool-uses", "raw"])
def test_a_stage_without_keeps_marks_never_sees_a_list_change(long_trace, name) -> None:
    """A stage that does not declare `KEEPS_MARKS` may keep what it is given: the history and
    the stages' outputs handed to it are copied before they grow, and the replay is the
    same as without it."""
    policy = get(name, **LONG.get(name, {}))

    def calls(*extra: _Keeper) -> list[tuple]:
        run = policy.start(long_trace, Fixed("the summary"))
        run.stages = [*run.stages, *extra]
        run._wary = [*run._wary, *(True for _ in extra)]
        return [
            (c.context_tokens, c.by_kind, c.messages, c.events, list(c.request))
            for c in map(run.call, long_trace.turns)
        ]

    keeper = _Keeper()
    assert calls(keeper) == calls()
    assert len(keeper.kept) == len(long_trace.turns)
    assert all(kept == copy for kept, copy in keeper.kept)


def test_only_its_owner_grows_a_list_in_place() -> None:
    prev = _engine_counts.Grown([])
    owner, other = object(), object()
    mine = _engine_counts.extended(prev, [], edits=False, owner=owner)
    assert mine is not prev  # nobody owned it: copied, now `owner`'s
    assert _engine_counts.extended(mine, [], edits=True, owner=owner) is mine
    assert _engine_counts.extended(mine, [], edits=True, owner=other) is not mine
    mine.handed = True
    assert _engine_counts.extended(mine, [], edits=True, owner=owner) is not mine


def test_inspect_edit_edits_its_request_in_place(long_trace, monkeypatch):
    # Inspect's edit compacts at nearly every call once over its threshold; copying the whole
    # request for each edit (and again to grow it at the next call) made long replays
    # quadratic. Only the first edits, before the stage settles, may copy.
    copies = []
    real = _engine_counts.grown
    monkeypatch.setattr(_engine_counts, "grown", lambda *a: copies.append(1) or real(*a))
    edits = replay(long_trace, get("inspect-edit", threshold=20_000), Fixed("the summary"))
    assert edits.events.height > 100
    assert len(copies) <= 5, (len(copies), edits.events.height)
