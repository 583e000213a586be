"""Why each cache write happened (`ctxlab._cost.cache_causes` through `metrics.cache_frame`), the
cache lifetimes, `cache_aligned` presets, the `cache_writes` figure and its Compare toggle, and
the simulation against recorded cache tokens (real Claude Code sessions; skipped without them).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from ctxlab import plots, replay
from ctxlab._cost.cache_causes import CAUSES, attribute, idle_gaps, model_switches, parse_time
from ctxlab._cost.cache_recorded import check, has_recorded_cache, recorded_context
from ctxlab._cost.pricing import ANTHROPIC_LONG_TTL, ANTHROPIC_TTL, OPENAI_TTL, cache_rule
from ctxlab._evaluate.metrics import cache_frame
from ctxlab._ingest.load import load
from ctxlab._replay.policies.base import Call, Event
from ctxlab._replay.policies.cache_aligned import CacheAligned
from ctxlab._replay.replay import Replay
from ctxlab._trace import Trace, from_messages
from ctxlab._view.plots.cache import cache_write_totals
from ctxlab.policies import get
from ctxlab.widgets import Compare
from tests._policy_traces import agent

MODEL = "claude-sonnet-4-5"
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SUMMARISING = (
    "claude-code",
    "codex",
    "langchain-summarization",
    "openhands-llm-summarizing",
    "jetbrains-llm-summary",
    "jetbrains-hybrid",
)


def _trace(n: int = 24, size: int = 4000, model: str = MODEL) -> Trace:
    """`agent(n)` with results of `size` characters: every request above 1,024 tokens."""
    return from_messages(agent(n, size), model=model)


def _stamped(trace: Trace, seconds: list[float], models: list[str] | None = None) -> Trace:
    """`trace` with turn i started `seconds[i]` after T0 (and recorded model `models[i]`)."""
    turns = [
        dataclasses.replace(
            t,
            started_at=(T0 + timedelta(seconds=s)).isoformat().replace("+00:00", "Z"),
            model=models[i] if models else t.model,
        )
        for i, (t, s) in enumerate(zip(trace.turns, seconds, strict=True))
    ]
    return dataclasses.replace(trace, turns=turns)


def _every(trace: Trace, step: float = 30.0) -> list[float]:
    return [i * step for i in range(len(trace.turns))]


# --------------------------------------------------------------------------- lifetimes


def test_cache_lifetimes_per_provider():
    assert cache_rule("claude-sonnet-4-5").ttl_seconds == ANTHROPIC_TTL == 300
    assert ANTHROPIC_LONG_TTL == 3600
    assert cache_rule("gpt-4o").ttl_seconds == OPENAI_TTL == 300
    assert cache_rule("gemini-2.5-pro").ttl_seconds is None  # none published: no idle gaps
    assert cache_rule(None).ttl_seconds is None


def test_parse_time_and_gaps():
    assert parse_time("2026-02-12T14:12:01.177Z") == datetime(
        2026, 2, 12, 14, 12, 1, 177000, tzinfo=UTC
    )
    assert parse_time(None) is None and parse_time("yesterday") is None
    trace = _stamped(_trace(3), [0, 100, 100 + 301, 100 + 301 + 300])
    assert idle_gaps(trace.turns, 300) == [False, False, True, False]
    assert idle_gaps(trace.turns, None) == [False] * 4
    assert idle_gaps(_trace(3).turns, 300) == [False] * 4  # no timestamps: never guessed


# --------------------------------------------------------------------------- causes


def test_plain_growth_is_first_call_then_new_content():
    trace = _stamped(_trace(), _every(_trace()))
    frame = cache_frame(replay(trace, "raw"), trace)
    causes = frame["cache_write_cause"].to_list()
    assert causes[0] == "first_call"
    assert set(causes[1:]) == {"new_content"}
    assert frame["cause_event"].null_count() == frame.height
    assert (frame["cache_read_tokens"][2:] > 0).all()  # the first request is under 1,024


def test_idle_gap_rewrites_the_whole_prefix():
    base = _trace()
    seconds = _every(base)
    k = 10
    seconds[k:] = [s + 600 for s in seconds[k:]]  # ten idle minutes before call k
    trace = _stamped(base, seconds)
    frame = cache_frame(replay(trace, "raw"), trace)
    row = frame.row(k, named=True)
    assert row["cache_write_cause"] == "idle_gap" and row["cause_event"] is None
    assert row["cache_read_tokens"] == 0
    assert row["cache_write_tokens"] == row["input_tokens"]
    assert frame["cache_write_cause"].to_list().count("idle_gap") == 1
    # the 1-hour lifetime outlives ten minutes: an ordinary hit, new content written
    long = cache_frame(replay(trace, "raw"), trace, ttl_seconds=ANTHROPIC_LONG_TTL)
    assert long.row(k, named=True)["cache_write_cause"] == "new_content"
    assert long.row(k, named=True)["cache_read_tokens"] == row["common_prefix"]
    # a gap under five minutes keeps the cache warm
    seconds = _every(base)
    seconds[k:] = [s + 200 for s in seconds[k:]]
    warm = cache_frame(replay(_stamped(base, seconds), "raw"), _stamped(base, seconds))
    assert "idle_gap" not in warm["cache_write_cause"].to_list()


def test_model_switch_reads_nothing():
    base = _trace()
    models = [MODEL] * 8 + ["claude-opus-4-1"] * (len(base.turns) - 8)
    trace = _stamped(base, _every(base), models)
    frame = cache_frame(replay(trace, "raw"), trace)
    assert frame["cache_write_cause"].to_list()[8] == "model_switch"
    assert frame["cache_read_tokens"][8] == 0
    assert frame["cache_write_cause"].to_list()[9] == "new_content"
    assert model_switches(trace.turns).count(True) == 1


def test_summary_is_named_with_its_event():
    trace = _stamped(_trace(30), _every(_trace(30)))
    policy = get("langchain-summarization", trigger=("tokens", 8000), keep=("messages", 4))
    replayed = replay(trace, policy)
    frame = cache_frame(replayed, trace)
    events = replayed.event_list
    summaries = [i for i, e in enumerate(events) if e.kind == "summarize"]
    assert summaries, "the trigger should fire on this trace"
    named = frame.filter(pl.col("cache_write_cause") == "summarize")
    assert named.height == len(summaries)
    for row in named.iter_rows(named=True):
        event = events[row["cause_event"]]
        assert event.kind == "summarize" and event.turn == row["turn"]
        assert row["cache_break"]


@pytest.mark.parametrize(
    ("name", "params", "kind"),
    [
        ("clear-tool-uses", {"trigger": 6000, "keep": 2}, "clear_tool_uses"),
        ("observation-masking", {"n": 3}, "mask_observations"),
        (
            "claude-code",
            {"window": 20000, "max_output_tokens": 1000, "autocompact_buffer": 0},
            "summarize",
        ),
    ],
)
def test_each_compaction_kind_is_a_cause(name, params, kind):
    trace = _stamped(_trace(30), _every(_trace(30)))
    replayed = replay(trace, get(name, **params))
    frame = cache_frame(replayed, trace)
    rows = frame.filter(pl.col("cache_write_cause") == kind)
    assert rows.height > 0
    assert all(replayed.event_list[i].kind == kind for i in rows["cause_event"].to_list())
    assert set(frame["cache_write_cause"].drop_nulls().to_list()) <= set(CAUSES)


def _hand_replay(requests, by_kind, trace: Trace, events=None) -> Replay:
    events = events or {}
    calls = [
        Call(
            i,
            t.position,
            sum(x[1] for x in r),
            dict(by_kind),
            len(r),
            events.get(i, []),
            None,
            request=r,
        )
        for i, (t, r) in enumerate(zip(trace.turns, requests, strict=True))
    ]
    return Replay(trace.trace_id, "hand", {}, calls, recorded=[None] * len(calls), trace=trace)


def test_tool_schema_and_system_changes_from_the_request_head():
    """Parts: tool schemas, system prompt, then messages (the engine's and deepagents'
    layout); a changed first part is a tool change, a changed second a system change."""
    trace = _stamped(_trace(4), [0, 10, 20, 30, 40])
    tools, system, m1, m2, m3 = (1, 1200), (2, 800), (3, 500), (4, 500), (5, 500)
    requests = [
        (tools, system, m1),
        (tools, system, m1, m2),
        ((11, 1300), system, m1, m2),  # a tool added
        ((11, 1300), (12, 900), m1, m2, m3),  # the system prompt edited
        ((11, 1300), (12, 900), m1, m2, m3),
    ]
    replayed = _hand_replay(requests, {"tools": 1200, "system": 800}, trace)
    frame = cache_frame(replayed, trace)
    assert frame["cache_write_cause"].to_list()[:4] == [
        "first_call",
        "new_content",
        "tool_schema_change",
        "system_change",
    ]
    assert frame["cache_read_tokens"].to_list()[2:4] == [0, 1300]
    assert frame["cache_write_cause"][4] is None  # nothing new: nothing written, no cause


def test_a_break_without_its_own_event_goes_to_the_latest_event():
    trace = _stamped(_trace(4), [0, 10, 20, 30, 40])
    a, b, c, d = (1, 1500), (2, 500), (3, 500), (4, 500)
    summary = Event("summarize", 1, (1, 2))
    requests = [(a, b), (a, (9, 300)), (a, (9, 300), c), (a, (8, 300), c, d), (a, (8, 300), c, d)]
    replayed = _hand_replay(requests, {}, trace, {1: [summary]})
    frame = cache_frame(replayed, trace)
    assert frame["cache_write_cause"].to_list()[:4] == [
        "first_call",
        "summarize",
        "new_content",
        "summarize",
    ]
    assert frame["cause_event"].to_list()[:4] == [None, 0, None, 0]


def test_estimated_prefixes_name_their_events_too():
    """Runs without `Call.request`: the break is estimated from events, and named by them."""
    trace = _stamped(_trace(30), _every(_trace(30)))
    policy = get("langchain-summarization", trigger=("tokens", 8000), keep=("messages", 4))
    exact = replay(trace, policy)
    calls = [dataclasses.replace(c, request=None) for c in exact.calls]
    estimated = dataclasses.replace(exact, calls=calls)
    frame = cache_frame(estimated, trace)
    assert frame.filter(pl.col("cache_write_cause") == "summarize").height == sum(
        e.kind == "summarize" for e in exact.event_list
    )


def test_attribute_rejects_mismatched_inputs():
    trace = _trace(3)
    replayed = replay(trace, "raw")
    with pytest.raises(ValueError, match="one turn and one break flag"):
        attribute(replayed.calls, trace.turns[:-1], [False] * len(replayed.calls), 300)


def test_unpriced_model_gets_no_causes():
    trace = _trace(4, model="acme-unpriced-model")
    frame = cache_frame(replay(trace, "raw"), trace)
    assert frame["cache_write_cause"].null_count() == frame.height


# --------------------------------------------------------------------------- cache_aligned


def test_cache_aligned_leaves_params_at_defaults_alone():
    for name in SUMMARISING:
        plain = get(name)
        assert "cache_aligned" not in plain.params()
        assert get(name, cache_aligned=True).params()["cache_aligned"] is True


def _claude_code(**kw):
    return get("claude-code", window=20000, max_output_tokens=1000, autocompact_buffer=6000, **kw)


def test_cache_aligned_waits_for_a_cold_cache():
    base = _trace(40)
    plain_first = replay(_stamped(base, _every(base)), _claude_code()).event_list[0].turn
    cold = plain_first + 3
    seconds = _every(base)
    seconds[cold:] = [s + 900 for s in seconds[cold:]]
    trace = _stamped(base, seconds)
    plain = replay(trace, _claude_code())
    aligned = replay(trace, _claude_code(cache_aligned=True))
    assert plain.event_list[0].turn == plain_first
    assert aligned.event_list[0].turn == cold  # deferred to the call whose cache is cold
    frame = cache_frame(aligned, trace)
    assert frame.row(cold, named=True)["cache_write_cause"] == "idle_gap"


def test_cache_aligned_compacts_when_the_window_forces_it():
    base = _trace(40)
    trace = _stamped(base, _every(base))  # never idle
    aligned = replay(trace, _claude_code(cache_aligned=True))
    assert aligned.event_list, "the window should force a compaction"
    plain = replay(trace, _claude_code())
    assert aligned.event_list[0].turn > plain.event_list[0].turn  # held past the threshold
    for event in aligned.event_list:
        assert event.tokens_before > 20000, event  # only once the window forced it
    assert max(c.context_tokens for c in aligned.calls) <= 20000


def test_cache_aligned_when_every_call_is_cold_is_the_plain_preset():
    base = _trace(40)
    trace = _stamped(base, _every(base, step=600.0))  # ten minutes between calls
    for name, kw in [
        ("claude-code", {"window": 20000, "max_output_tokens": 1000, "autocompact_buffer": 6000}),
        ("langchain-summarization", {"trigger": ("tokens", 8000), "keep": ("messages", 4)}),
        ("openhands-llm-summarizing", {"max_size": 20}),
        ("jetbrains-llm-summary", {"n": 5, "keep_last_m_turns": 2}),
    ]:
        plain = replay(trace, get(name, **kw))
        aligned = replay(trace, get(name, cache_aligned=True, **kw))
        assert plain.event_list, name
        assert [c.context_tokens for c in aligned.calls] == [c.context_tokens for c in plain.calls]
        assert [(e.kind, e.turn) for e in aligned.event_list] == [
            (e.kind, e.turn) for e in plain.event_list
        ]


def test_cache_aligned_holds_a_stage_between_cold_calls():
    class Counting:
        def __init__(self) -> None:
            self.applied = 0

        def view(self, items):
            return items

        def apply(self, items, ctx):
            self.applied += 1
            return items

    inner = Counting()
    stage = CacheAligned(inner, 300, None)
    base = _trace(6)
    trace = _stamped(base, [0, 10, 20, 400, 410, 420, 430])
    ctx = type("Ctx", (), {})()
    for turn in trace.turns:
        ctx.turn = turn
        stage.apply([], ctx)
    assert inner.applied == 2 and stage.held == 5  # the first call and the one after 380 s


# --------------------------------------------------------------------------- figure, widget

EVIL = "<script>alert('x')</script>"


def test_cache_writes_figure_sums_the_frames():
    trace = _stamped(_trace(30), _every(_trace(30)))
    replays = [
        replay(trace, "raw"),
        replay(
            trace, get("langchain-summarization", trigger=("tokens", 8000), keep=("messages", 4))
        ),
    ]
    fig = plots.cache_writes(replays, labels=["raw", EVIL])
    assert fig.layout.barmode == "stack"
    assert all(d.type == "bar" for d in fig.data)
    assert EVIL not in fig.to_json()
    for i, r in enumerate(replays):
        frame = cache_frame(r, trace)
        assert sum(d.y[i] for d in fig.data) == int(frame["cache_write_tokens"].sum())
    names = {d.name for d in fig.data}
    assert {"new content", "summarize"} <= names  # the first call is under the 1,024 minimum
    totals, writes = cache_write_totals(replays)
    assert writes and set(totals["cause"]) <= set(CAUSES)


def test_cache_writes_without_write_fees_counts_input_not_read():
    trace = _stamped(_trace(10, model="gpt-4o"), _every(_trace(10, model="gpt-4o")))
    r = replay(trace, "raw")
    fig = plots.cache_writes([r])
    frame = cache_frame(r, trace)
    assert int(frame["cache_write_tokens"].sum()) == 0
    assert "not read" in fig.layout.yaxis.title.text
    expected = int((frame["input_tokens"] - frame["cache_read_tokens"]).sum())
    assert sum(d.y[0] for d in fig.data) == expected


def test_cache_writes_needs_traces():
    r = replay(_trace(3), "raw")
    with pytest.raises(ValueError, match="carries no trace"):
        plots.cache_writes([dataclasses.replace(r, trace=None)])


def test_compare_toggles_to_cache_writes_and_back():
    trace = _stamped(_trace(20), _every(_trace(20)))
    c = Compare(replay(trace, "raw"), replay(trace, "observation-masking"), trace=trace)
    assert "cache_writes" in [v for _, v in c.metric.options]
    c.metric.value = "cache_writes"
    assert c.figure.layout.barmode == "stack" and {d.type for d in c.figure.data} == {"bar"}
    assert c.figure in c.children
    c.metric.value = "cumulative"
    assert {d.type for d in c.figure.data} == {"scatter"} and c.figure in c.children


# --------------------------------------------------------------------------- recorded


def _real(shared, folder: str) -> list[Trace]:
    files = sorted((shared / "data" / "real-traces" / folder).glob("*.gz"))
    if not files:
        pytest.skip(f"{folder} not in the shared data")
    out = []
    for f in files:
        loaded = load(f)
        out.extend(loaded if isinstance(loaded, list) else [loaded])
    return out


def test_simulation_against_recorded_claude_code_cache(shared):
    """The compacted Claude Code session (217 calls, one model switch each way, a manual
    /compact): with the unseen system prompt and tools as a constant first part, the simulated
    read share is within half a point of the recorded 98.6%, per call within 0.2 points at the
    median; without that part the per-call error is several times larger."""
    (trace,) = _real(shared, "claude-code-session-compacted")
    with_unseen = check(trace, unseen=True)
    t = with_unseen.totals
    assert t["calls"] == 217
    assert abs(t["simulated_read_share"] - t["recorded_read_share"]) < 0.005
    assert t["read_share_error_median"] < 0.002 and t["write_share_error_median"] < 0.002
    plain = check(trace).totals
    assert plain["read_share_error_median"] > 3 * t["read_share_error_median"]
    assert with_unseen.calls.filter(pl.col("cause") == "model_switch").height == 2
    assert recorded_context(trace).policy == "recorded-inputs"


def test_simulation_against_recorded_sessions_tolerances(shared):
    """Small sessions: the first call reads a cache an earlier session wrote (the simulation
    starts cold), so the totals are further off; the median call still agrees within 1 point."""
    traces = _real(shared, "claude-code-session") + _real(shared, "anthropic-managed-agents-events")
    for trace in traces:
        if not has_recorded_cache(trace):
            continue
        t = check(trace, unseen=True).totals
        assert t["read_share_error_median"] < 0.01, (trace.trace_id, t)
        assert abs(t["simulated_read_share"] - t["recorded_read_share"]) < 0.1, (trace.trace_id, t)


def test_check_refuses_a_trace_without_cache_tokens():
    with pytest.raises(ValueError, match="records no cache tokens"):
        check(_trace(3))
