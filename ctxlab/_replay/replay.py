"""The replay engine: one trace under one policy, open loop, into frames.

At each recorded model call the policy computes the request the model would have received from
the history so far (minus what the policy already did to it); the recorded output is then
appended regardless. The result is a `Replay`: a per-turn frame, an events frame and the virtual
filesystem the policy wrote (offloaded results, history files), byte-exact.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl

from ctxlab._cost.billing import BillerLike, Billing, bill
from ctxlab._cost.calibration import CountedAs
from ctxlab._messages import KINDS
from ctxlab._replay.policies._engine_facts import turn_table
from ctxlab._replay.policies.base import Call, Event, Files, Policy, PolicyRun
from ctxlab._store.schema import EVENTS, TURNS
from ctxlab._trace import Trace
from ctxlab.summarizers import Extractive, Summarizer, SummaryError

FALLBACK_SUMMARY = "Previous conversation was too long to summarize."
"""LangChain's summary when `trim_tokens_to_summarize` leaves nothing to summarise: no model
was asked (an agent trace's one human message is at its start, where trimming from the end
with `start_on="human"` never reaches)."""

_STORE_ONLY = ("replay_key", "seq")
"""Columns the store adds to a replay's frames: which replay, and the order of its events."""
_BILLED = ("billed_tokens", "late_trigger", "would_overflow")
"""Columns of `turns` that need the bill (`Replay.billing`)."""


@dataclass
class Replay:
    """A trace replayed under a policy.

    * `turns`: one row per model call: `context_tokens` is the request as the policy counts it,
      `<kind>_tokens` split it by kind (system, tools, human, ai, tool_results, stubs, summary;
      unscaled), `baseline_tokens` is the same counter on the uncompacted context,
      `recorded_input_tokens` what the provider reported, where known; `billed_tokens` the
      same request as the provider would bill it (`ctxlab._cost.billing`, by `billing_method`), and
      the flags `late_trigger` / `would_overflow` (the policy's count under its trigger /
      window, the billed count not). The billed columns are computed when the frame is first
      asked for (counting is incremental: a fraction of the replay's own time). `counts` is
      the same frame without them, for views that need only the policy's counts (live
      charts), so they never pay for the bill.
    * `events`: one row per compaction action (`ctxlab._replay.policies.base.EVENT_KINDS`), with the
      fields of `ctxlab._replay.policies.base.Event`; `summary` holds the text of each `summarize`.
    * `files`: path -> text of everything the policy wrote to its virtual filesystem.
    """

    trace_id: str
    policy: str
    params: dict[str, Any]
    calls: list[Call]
    extra_events: list[Event] = field(default_factory=list)
    files: Files = field(default_factory=Files)
    recorded: list[int | None] = field(default_factory=list)
    trace: Trace | None = field(default=None, repr=False, compare=False)
    """The replayed trace, so views can show message content without being handed it again."""
    source_policy: Policy | None = field(default=None, repr=False, compare=False)
    """The policy object itself (`policy` is its name), for thresholds and re-runs."""
    summarizer: Summarizer | None = field(default=None, repr=False, compare=False)
    biller: BillerLike | None = field(default=None, repr=False, compare=False)
    """What bills the requests (`ctxlab._cost.calibration.Biller`); None: `biller_for(trace)`."""
    counted_as: CountedAs | None = None
    """How a harness preset counted the request parts the file lacks (system prompt, tool
    schemas) in its decisions: method, tokens added, scale (`ctxlab._cost.calibration.CountedAs`).
    None: the policy counts the file as it is (every non-harness policy)."""

    @cached_property
    def billing(self) -> Billing:
        """Billed tokens and flags per call (`ctxlab._cost.billing.bill`), computed on first use so
        a replay nobody bills (a slider's intermediate one) does not pay for it."""
        return bill(self, self.biller)

    @property
    def billing_method(self) -> str | None:
        """How `billed_tokens` were counted: `exact`, `calibrated` or `estimated` (None
        without the trace)."""
        return self.billing.method

    @cached_property
    def counts(self) -> pl.DataFrame:
        """`turns` without the billed columns: the policy's own counts only, which need no
        bill (a slider's chart reads these, so a move does not pay for billing)."""
        calls = self.calls
        if len(self.recorded) != len(calls):
            raise ValueError("one recorded input count per call expected")
        return _counts_frame(
            {
                "turn": [c.turn for c in calls],
                "position": [c.position for c in calls],
                "context_tokens": [c.context_tokens for c in calls],
                **{f"{k}_tokens": [c.by_kind.get(k, 0) for c in calls] for k in KINDS},
                "messages": [c.messages for c in calls],
                "recorded_input_tokens": self.recorded,
                "baseline_tokens": [c.baseline_tokens for c in calls],
                "events": [len(c.events) for c in calls],
            }
        )

    @cached_property
    def turns(self) -> pl.DataFrame:
        """Per-turn frame (see the class docstring): `counts` and the billed columns."""
        billing = self.billing
        schema = TURNS.polars(_STORE_ONLY)
        columns: tuple[Sequence[int | bool | None], ...] = (
            billing.tokens,
            billing.late_trigger,
            billing.would_overflow,
        )
        billed = [
            pl.Series(name, values, dtype=schema[name])
            for name, values in zip(_BILLED, columns, strict=True)
        ]
        return self.counts.hstack(billed).select(list(schema))

    @cached_property
    def events(self) -> pl.DataFrame:
        """Events frame, in order of occurrence, built column by column."""
        events = self.event_list
        columns = {name: [getattr(e, name) for e in events] for name in EVENTS.polars(_STORE_ONLY)}
        columns["messages"] = [list(m) for m in columns["messages"]]
        return EVENTS.frame(columns, drop=_STORE_ONLY)

    @property
    def event_list(self) -> list[Event]:
        """Events as objects, in order (offloads no model call saw come last)."""
        return [e for c in self.calls for e in c.events] + self.extra_events

    @property
    def fallback_summaries(self) -> int:
        """`summarize` events holding LangChain's `FALLBACK_SUMMARY` instead of a summary."""
        return fallback_summaries(self.event_list)

    def file_bytes(self, path: str) -> bytes:
        """A virtual file as the backend would store it (UTF-8)."""
        return self.files[path].encode("utf-8")


def _counts_frame(columns: dict[str, Any]) -> pl.DataFrame:
    """`Replay.counts` from its columns, typed as the store's turns table."""
    return TURNS.frame(columns, drop=(*_STORE_ONLY, *_BILLED))


@dataclass
class Counted:
    """What a replay's chart reads (`counts`, `event_list`), from a policy's count-only form
    (`counted`), with no requests or calls made: a slider draws this, then replays in full."""

    trace_id: str
    policy: str
    counts: pl.DataFrame
    """Equal to the full replay's `Replay.counts`."""
    event_list: list[Event]
    """Equal to the full replay's `Replay.event_list`."""
    trace: Trace | None = field(default=None, repr=False, compare=False)


def counted(trace: Trace, policy: Policy, summarizer: Summarizer | None = None) -> Counted | None:
    """`replay(trace, policy, summarizer)`'s counts and events by the policy's count-only form
    (`StagePolicy.counts_only`, `ctxlab._replay.policies.counts_only`), or None when the policy has
    none for `trace`; a setting the policy refuses raises as `replay` does."""
    form = getattr(policy, "counts_only", None)
    found = form(trace, summarizer or Extractive()) if form is not None else None
    if found is None:
        return None
    calls = turn_table(trace)
    columns: dict[str, Any] = {  # arrays as they are: polars takes them without a copy
        "turn": calls.index,
        "position": calls.position,
        "context_tokens": found.context_tokens,
        **{f"{k}_tokens": found.by_kind[k] for k in KINDS},
        "messages": found.messages,
        "recorded_input_tokens": calls.recorded,
        "baseline_tokens": found.baseline_tokens,
        "events": np.fromiter(map(len, found.events), dtype=np.int64, count=len(found.events)),
    }
    events = [*itertools.chain.from_iterable(found.events), *found.extra_events]
    return Counted(trace.trace_id, policy.name, _counts_frame(columns), events, trace)


def replay(trace: Trace, policy: Policy | str, summarizer: Summarizer | None = None) -> Replay:
    """Replay `trace` under `policy` (a policy, or a registered name at its defaults, as
    `ctxlab policies` lists them); the default summariser is the offline `Extractive`."""
    return replay_with_run(trace, policy, summarizer)[0]


def replay_with_run(
    trace: Trace, policy: Policy | str, summarizer: Summarizer | None = None
) -> tuple[Replay, PolicyRun]:
    """`replay`, also handing back the finished run, so the caller chooses when its working
    state is freed: a slider frees it, and the replay it replaces, after the chart is sent
    (freeing a 1,000-turn run and replay took up to 2 ms of a 14 ms move)."""
    if isinstance(policy, str):
        from ctxlab._replay.policies.catalog import get

        policy = get(policy)
    summarizer = summarizer or Extractive()
    run = policy.start(trace, summarizer)
    calls = []
    for turn in trace.turns:
        try:
            calls.append(run.call(turn))
        except SummaryError as exc:
            raise SummaryError(f"trace {trace.trace_id!r}, turn {turn.index}: {exc}") from exc
    extra = run.finish()
    _warn_fallbacks(trace, policy, calls)
    return Replay(
        trace_id=trace.trace_id,
        policy=policy.name,
        params=policy.params(),
        calls=calls,
        extra_events=extra,
        files=run.files,
        recorded=[t.input_tokens for t in trace.turns],
        trace=trace,
        source_policy=policy,
        summarizer=summarizer,
        counted_as=harness_count(policy, trace),
    ), run


def harness_count(policy: Policy, trace: Trace) -> CountedAs | None:
    """`policy.harness_count(trace)` for the harness presets that estimate what a file lacks
    (Claude Code, Codex), else None."""
    method = getattr(policy, "harness_count", None)
    return method(trace) if method is not None else None


def fallback_summaries(events: list[Event]) -> int:
    """How many `summarize` events hold LangChain's `FALLBACK_SUMMARY`, not a summary."""
    return sum(e.kind == "summarize" and e.summary == FALLBACK_SUMMARY for e in events)


def _warn_fallbacks(trace: Trace, policy: Policy, calls: list[Call]) -> None:
    """One warning per replay whose summaries fell back to `FALLBACK_SUMMARY` (never silent:
    the summariser under test was then never asked)."""
    count = fallback_summaries([e for c in calls for e in c.events])
    if count:
        import warnings

        warnings.warn(
            f"trace {trace.trace_id!r} under {policy.name}: {count} summar"
            f"{'y' if count == 1 else 'ies'} fell back to LangChain's placeholder "
            f"{FALLBACK_SUMMARY!r} (trim_tokens_to_summarize left no human message to start "
            "from), so the summariser was not asked; raise or unset trim_tokens_to_summarize",
            UserWarning,
            stacklevel=3,
        )
