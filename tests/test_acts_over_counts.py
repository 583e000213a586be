"""The count-only form the engine derives for a stage that declares `acts_over`
(`ctxlab._replay.policies.acts_over_counts`), on docs/writing-a-policy.md's `DigestStage`:
exact across slider moves that reuse remembered requests, running the stage only at calls no
earlier move reached; exact for stages whose acted-on positions come back (the walk without
stored differences) or that send fewer messages than the history, and for a policy whose
threshold field also sets something else (no reuse across thresholds); never taken by a
subclass that overrides `apply` without declaring again. tests/test_fast_paths.py checks the
form on generated traces and settings."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ctxlab._replay.policies import catalog
from ctxlab._replay.policies.base import Event
from ctxlab._replay.policies.engine import Context, Item, acts_over, replaced
from ctxlab._replay.replay import counted, replay
from ctxlab._trace import Trace
from ctxlab.summarizers import CachedExtractive
from tests.synthetic import make_trace

DOCS = Path(__file__).resolve().parents[1] / "docs" / "writing-a-policy.md"


def _docs_module() -> types.ModuleType:
    """docs/writing-a-policy.md's first Python block run as printed, its registration undone
    (other test files list the registered policies)."""
    block = DOCS.read_text().split("```python\n", 1)[1].split("```", 1)[0]
    name = "docs_policy_acts_over"
    module = sys.modules.setdefault(name, types.ModuleType(name))  # @dataclass looks it up
    before = dict(catalog._REGISTERED)
    exec(compile(block, str(DOCS), "exec"), module.__dict__)  # noqa: S102
    catalog._REGISTERED.clear()
    catalog._REGISTERED.update(before)
    return module


DOC = _docs_module()
DigestStage: Any = DOC.DigestStage
DigestOldResults: Any = DOC.DigestOldResults


class CountedDigest(DigestStage):  # type: ignore[misc]
    """`DigestStage` counting its calls over the threshold (a shared list), declaring again."""

    capabilities = frozenset({acts_over("trigger")})
    acted: ClassVar[list[int]] = []

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        if ctx.count(items) > self.trigger:
            self.acted.append(ctx.turn.index)
        return super().apply(items, ctx)  # type: ignore[no-any-return]


class FlickerDigest(DigestStage):  # type: ignore[misc]
    """Digests the results but the newest `keep`, of the older half of the request only when
    it holds an even number of messages: positions leave its set and come back (a stage's
    acted-on positions need not only grow), and each is reported once, as `DigestStage`
    reports them."""

    capabilities = frozenset({acts_over("trigger")})

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        before = ctx.count(items)
        if before <= self.trigger:
            return items
        window = range(len(items) // 2 if len(items) % 2 == 0 else len(items))
        results = [i for i in window if items[i].kind == "tool_results"]
        acted = results[: max(0, len(results) - self.keep)]
        out = list(items)
        for i in acted:
            pos, msg, _ = items[i]
            out[i] = Item(pos, replaced(msg, "digest", lambda m=msg: DOC.digest(m)), "stubs")
        new = tuple(items[i].pos for i in acted if items[i].pos not in self.reported)
        if new:
            self.reported.update(new)
            event = Event("mask_observations", ctx.turn.index, new, before, ctx.count(out))
            ctx.events.append(event)
        return out


class DropsSystem(DigestStage):  # type: ignore[misc]
    """Over the threshold, sends the request without its first message (fewer messages than
    the history), reporting position 0 once."""

    capabilities = frozenset({acts_over("trigger")})

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        before = ctx.count(items)
        if before <= self.trigger:
            return items
        if 0 not in self.reported:
            self.reported.add(0)
            ctx.events.append(Event("trim", ctx.turn.index, (0,), before, ctx.count(items[1:])))
        return items[1:]


class Undeclared(DigestStage):  # type: ignore[misc]
    """A user's subclass overriding `apply` (it sends its input unchanged) and declaring
    nothing: it must get the plain engine, not its parent's form."""

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        return items


def _policy(stage_type: type) -> type:
    @dataclass(frozen=True)
    class Policy(DigestOldResults):  # type: ignore[misc,valid-type]
        name: ClassVar[str] = f"digest-{stage_type.__name__.lower()}"

        def stages(self, trace: Trace, window: int | None) -> list[Any]:
            return [stage_type(self.keep, self.trigger)]

    return Policy


@dataclass(frozen=True)
class TiedKeep(DigestOldResults):  # type: ignore[misc]
    """Its `trigger` also sets how many results stay: a request over the threshold depends on
    the field, so the form must not reuse one threshold's requests for another."""

    name: ClassVar[str] = "digest-tied-keep"

    def stages(self, trace: Trace, window: int | None) -> list[Any]:
        return [CountedDigest(self.trigger // 4_000, self.trigger)]


@pytest.fixture(scope="module")
def trace() -> Trace:
    return make_trace(60, seed=3, model="claude-sonnet-4-5", provider="anthropic")


def _same(trace: Trace, policy: Any, summarizer: Any) -> None:
    quick = counted(trace, policy, summarizer)
    full = replay(trace, policy, summarizer)
    assert quick is not None
    assert quick.counts.equals(full.counts), policy
    assert quick.event_list == full.event_list, policy


def test_a_move_runs_the_stage_only_at_calls_no_earlier_move_reached(trace: Trace) -> None:
    policy_type = _policy(CountedDigest)
    summarizer = CachedExtractive()
    counts = replay(trace, DigestOldResults()).counts["baseline_tokens"].to_list()
    low, mid, high = (counts[len(counts) * k // 4] for k in (1, 2, 3))
    acted = CountedDigest.acted
    runs = []
    for trigger in (mid, high, low, mid):
        acted.clear()
        quick = counted(trace, policy_type(keep=2, trigger=trigger), summarizer)
        runs.append(len(acted))
        assert quick is not None and quick.event_list
        full = replay(trace, policy_type(keep=2, trigger=trigger), summarizer)
        assert quick.counts.equals(full.counts) and quick.event_list == full.event_list
    over = [sum(c > t for c in counts) for t in (mid, low)]
    # the first draw runs it at every call over `mid`; `high` and `mid` again at none; `low`
    # only at the calls between `low` and `mid`
    assert runs == [over[0], 0, over[1] - over[0], 0]
    acted.clear()
    counted(trace, policy_type(keep=3, trigger=mid), summarizer)  # another setting: anew
    assert len(acted) == over[0]
    for keep in (4, 5, 6):  # the four settings used last are kept: keep=2 is dropped
        counted(trace, policy_type(keep=keep, trigger=mid), summarizer)
    for keep, again in ((6, 0), (2, over[0])):
        acted.clear()
        counted(trace, policy_type(keep=keep, trigger=mid), summarizer)
        assert len(acted) == again, keep


def test_stages_whose_positions_come_back_or_that_drop_messages_count_exactly(
    trace: Trace,
) -> None:
    summarizer = CachedExtractive()
    counts = replay(trace, DigestOldResults()).counts["baseline_tokens"].to_list()
    for k in (0, 1, 3, 2):
        trigger = counts[len(counts) * k // 4]
        _same(trace, _policy(FlickerDigest)(keep=1, trigger=trigger), summarizer)
        _same(trace, _policy(DropsSystem)(keep=1, trigger=trigger), summarizer)


def test_a_threshold_field_that_sets_more_than_the_threshold_is_not_reused(trace: Trace) -> None:
    summarizer = CachedExtractive()
    for trigger in (12_000, 8_000, 16_000, 4_000):
        _same(trace, TiedKeep(trigger=trigger), summarizer)


def test_a_subclass_overriding_apply_without_declaring_gets_the_plain_engine(
    trace: Trace,
) -> None:
    policy = _policy(Undeclared)(keep=2, trigger=1)
    assert counted(trace, policy) is None
    assert not replay(trace, policy).event_list
    parent = counted(trace, DigestOldResults(keep=2, trigger=1))  # what the subclass is not
    assert parent is not None and parent.event_list
