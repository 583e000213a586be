"""Every fast path equals the plain replay: one generated check (hypothesis).

A slider draws a policy's count-only form (`counts_only`, `ctxlab._replay.replay.counted`)
instead of replaying it, so each form must give exactly the replay's per-call counts and
events. This test runs every registered policy (the built-in ones, any plugged in through
`register` or an entry point, the one docs/writing-a-policy.md builds, and a subclass of a
stage with a form that overrides `apply`, which must not get its parent's form) on random
conversations under random settings of every numeric parameter, and compares the form's
`counts` frame and event list with a plain `replay` of the same trace, policy and summariser.
A setting the policy refuses must be refused the same way by both. Each policy that has a form
must have used it, with events, on some of the drawn examples, so no form goes unchecked.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import sys
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab._cost.tokens import (
    ANTHROPIC_CHARS_PER_TOKEN,
    CHARS_PER_TOKEN,
    tokens_list,
    tool_schema_tokens,
)
from ctxlab._ingest.inputs import Inputs
from ctxlab._messages import message_text
from ctxlab._replay.policies import catalog
from ctxlab._replay.policies._engine_facts import turn_table
from ctxlab._replay.policies._engine_rules import NEVER, RANKED, WINDOW, RuleStage
from ctxlab._replay.policies.catalog import get, names
from ctxlab._replay.policies.claude_code import ClaudeCode
from ctxlab._replay.policies.engine import (
    JUMPS,
    Context,
    Item,
    StagePolicy,
    acting_threshold,
    declares,
)
from ctxlab._replay.policies.langchain import ClearStage, ClearToolUses
from ctxlab._replay.policies.masking import LastNStage
from ctxlab._replay.policies.openhands import RecentStage
from ctxlab._replay.replay import counted, replay
from ctxlab._trace import Trace, Turn, from_messages
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import CachedExtractive
from tests.test_policies_properties import SMALL

DOCS = Path(__file__).resolve().parents[1] / "docs" / "writing-a-policy.md"
MODEL = "claude-sonnet-4-5"
TOOLS = ("run", "read_file", "write_file")


def _register_docs_policy() -> str:
    """Run docs/writing-a-policy.md's first Python block as printed (it registers its policy)
    and give the name it registered."""
    block = DOCS.read_text().split("```python\n", 1)[1].split("```", 1)[0]
    name = "docs_writing_a_policy"
    module = sys.modules.setdefault(name, types.ModuleType(name))  # @dataclass looks it up
    exec(compile(block, str(DOCS), "exec"), module.__dict__)  # noqa: S102
    return str(module.DigestOldResults.name)


class NeverClears(ClearStage):
    """A user's subclass of a stage that has a count-only form, overriding `apply` (it sends
    its input unchanged) and declaring nothing: it must get the plain engine, never a chart
    drawn from its parent's arithmetic."""

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        return items


@dataclass(frozen=True)
class SubclassedClear(ClearToolUses):
    """`clear-tool-uses` run by `NeverClears`."""

    name: ClassVar[str] = "subclassed-clear"

    def stages(self, trace: Trace, window: int | None) -> list[Any]:
        return [
            NeverClears(
                trigger=int(self.trigger),
                keep=int(self.keep),
                clear_at_least=int(self.clear_at_least),
                clear_tool_inputs=self.clear_tool_inputs,
                exclude_tools=tuple(self.exclude_tools),
                placeholder=self.placeholder,
                trace=trace,
            )
        ]


@dataclass(frozen=True)
class CompactThenMask(ClaudeCode):
    """A user's policy of two built-in stages: Claude Code's auto-compact, then observation
    masking of what it sends. The stage engine's generic form (`threshold_counts`) covers it,
    masking after the stage included, which no built-in preset reaches (JetBrains' hybrid has
    a form of its own). Its defaults act on short runs."""

    name: ClassVar[str] = "compact-then-mask"
    window: int | None | Literal["auto"] = 1_200
    max_output_tokens: int = 0
    autocompact_buffer: int = 300
    n: int = 2
    polling: int = 1

    def stages(self, trace: Trace, window: int | None) -> list[Any]:
        masking = LastNStage(int(self.n), int(self.polling), frozenset(), frozenset())
        return [*super().stages(trace, window), masking]


class OldResultsStub(RuleStage):
    """A user's own rule (`RuleStage`): every tool result but the newest `keep` becomes a
    stub. The engine derives its count-only form from the rule; nothing else is written."""

    capabilities = frozenset()
    ranks = True
    horizon = ("keep",)

    def __init__(self, keep: int) -> None:
        super().__init__(f"keep={keep}")
        self.keep = keep

    def observe(self, new: Sequence[Item]) -> list[int]:
        return [(WINDOW + RANKED) if isinstance(it.msg, ToolMessage) else NEVER for it in new]

    def bounds(self, length: Any, ranked: Any) -> tuple[Any, Any]:
        return 0, ranked - self.keep

    def edit(self, it: Item) -> Item:
        return Item(it.pos, ToolMessage("[old]", tool_call_id=it.msg.tool_call_id), "stubs")


class ForgetsNothing(OldResultsStub):
    """A subclass of a rule stage that overrides `apply`: no form of its parent's rule."""

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        return items


@dataclass(frozen=True)
class UserRule(StagePolicy):
    """`OldResultsStub` as a plugged-in policy (`forgets` runs `ForgetsNothing` instead)."""

    name: ClassVar[str] = "user-rule"
    keep: int = 3
    forgets: bool = False

    def stages(self, trace: Trace, window: int | None) -> list[Any]:
        return [(ForgetsNothing if self.forgets else OldResultsStub)(int(self.keep))]


@dataclass(frozen=True)
class RuleThenRecent(StagePolicy):
    """A rule stage followed by another stage: the rule's form covers its stage alone, so this
    pipeline must get none (the plain replay), never the first stage's counts."""

    name: ClassVar[str] = "rule-then-recent"
    keep: int = 2
    max_events: int = 6

    def stages(self, trace: Trace, window: int | None) -> list[Any]:
        return [OldResultsStub(int(self.keep)), RecentStage(1, int(self.max_events))]


DOCS_POLICY = _register_docs_policy()
catalog.register(SubclassedClear, SubclassedClear.name)
catalog.register(CompactThenMask, CompactThenMask.name)
catalog.register(UserRule, UserRule.name)
catalog.register(RuleThenRecent, RuleThenRecent.name)
POLICIES = sorted(names())
assert DOCS_POLICY in POLICIES
# Registered only while this file's tests run: collection imports every test file in every
# xdist worker, and other files list the registered policies (the catalogue, `ctxlab policies`).
_PLUGGED = {
    name: catalog._REGISTERED.pop(name)
    for name in (
        DOCS_POLICY,
        SubclassedClear.name,
        CompactThenMask.name,
        UserRule.name,
        RuleThenRecent.name,
    )
}


@pytest.fixture(autouse=True)
def _plugged_in_policies_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, factory in _PLUGGED.items():
        monkeypatch.setitem(catalog._REGISTERED, name, factory)


@st.composite
def conversations(draw: st.DrawFn) -> Trace:
    """An agent run, with tool schemas or without: results before the first user message,
    parallel calls to several tools, results tagged to be removed or kept, results cleared by
    context editing when recorded, thinking blocks, follow-up and long user messages, big
    results, (sometimes) a call id used twice with another tool name, (sometimes) a call that
    failed before a user message, (sometimes) calls recorded only from a later one on,
    results that do not name their tool (one call in four) and no system prompt (one run in
    four; both derived, not drawn, so every policy is still given the draws the seed gives)."""
    text = st.integers(1, 60)
    msgs: list = [SystemMessage("system prompt " * draw(st.integers(1, 20)))]
    if draw(st.booleans()):
        msgs.append(AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": "pre"}]))
        msgs.append(ToolMessage("early\n" * draw(text), tool_call_id="pre", name="run"))
    msgs.append(HumanMessage("the task " * draw(st.integers(1, 40))))
    reuse = draw(st.booleans())
    for i in range(draw(st.integers(6, 30))):
        if i and draw(st.integers(0, 5)) == 0:
            msgs.append(HumanMessage("follow-up " * draw(st.integers(1, 400))))
        k = draw(st.integers(0, 3))
        calls = [
            {
                "name": draw(st.sampled_from(TOOLS)),
                "args": {"path": f"/src/f{i}.py", "body": "x" * draw(st.integers(0, 300))},
                "id": "c0_0" if reuse and i == 3 and j == 0 else f"c{i}_{j}",
            }
            for j in range(k)
        ]
        content: Any = "thinking " * draw(st.integers(0, 12))
        if draw(st.integers(0, 3)) == 0:
            content = [
                {"type": "thinking", "thinking": "hmm " * draw(text), "signature": "s"},
                {"type": "text", "text": content},
            ]
        msgs.append(AIMessage(content, tool_calls=calls))
        for j, c in enumerate(calls):
            tags = draw(st.sampled_from([[], [], ["remove_output"], ["keep_output"]]))
            lines = draw(st.one_of(text, st.just(600)))
            cleared = draw(st.integers(0, 7)) == 0  # cleared by context editing when recorded
            msgs.append(
                ToolMessage(
                    f"out {c['id']}\n" * lines,
                    tool_call_id=c["id"],
                    name=None if (i + j) % 4 == 3 else c["name"],  # some logs omit it
                    additional_kwargs={"tags": tags} if tags else {},
                    response_metadata={"context_editing": {"cleared": True}} if cleared else {},
                )
            )
    msgs.append(AIMessage("done"))
    if len(msgs) % 4 == 2:  # no system prompt (derived, not drawn): the task opens the history
        msgs = msgs[1:]
    with_usage(msgs)
    schemas = [
        {"name": t, "description": f"{t} " * draw(st.integers(1, 30)), "parameters": {}}
        for t in TOOLS
    ]
    trace = from_messages(
        msgs,
        trace_id="generated",
        model=MODEL,
        provider="anthropic",
        tools=schemas if draw(st.booleans()) else None,
    )
    users = [i for i, m in enumerate(msgs) if isinstance(m, HumanMessage) and i > 1]
    if users and draw(st.booleans()):
        trace = with_failed_call(trace, draw(st.sampled_from(users)))
    late = draw(st.integers(0, 3))  # recorded from a later call on: the first sees results
    if late and len(trace.turns) > late + 2 and draw(st.booleans()):
        turns = [dataclasses.replace(t, index=i) for i, t in enumerate(trace.turns[late:])]
        trace = dataclasses.replace(trace, turns=turns)
    return trace


def with_failed_call(trace: Trace, position: int) -> Trace:
    """`trace` with a call that failed (no output, as loaders record a refused or errored
    request) right before the user message at `position`: a call whose fed history ends
    where a user message, not its own output, comes next."""
    turns = sorted(
        [*trace.turns, Turn(0, position, Inputs.prefix(trace.messages, position), None, MODEL)],
        key=lambda t: (t.position, t.output is not None),
    )
    return dataclasses.replace(
        trace, turns=[dataclasses.replace(t, index=i) for i, t in enumerate(turns)]
    )


def with_usage(msgs: list[Any]) -> None:
    """Recorded usage on two traces in three (what the harness presets count from,
    `counted_as`): growing with the history, on one of them with jumps, and missing at every
    sixth call, as a recording's may be. Derived from the drawn messages, not drawn itself,
    so the examples drawn for every policy stay the ones the seed gives."""
    mode = len(msgs) % 3
    if mode == 0:
        return
    sent, calls = 0, 0
    for m in msgs:
        if isinstance(m, AIMessage):
            calls += 1
            if calls % 6:
                tokens = 500 + sent // 3 + (calls * 7_919 % 2_000 if mode == 2 else 0)
                m.usage_metadata = {
                    "input_tokens": tokens,
                    "output_tokens": 5,
                    "total_tokens": tokens + 5,
                }
        sent += len(message_text(m))


def ties(
    trace: Trace, counters: tuple[float, ...] = (ANTHROPIC_CHARS_PER_TOKEN, CHARS_PER_TOKEN)
) -> tuple[list[int], list[int]]:
    """Token counts the trace reaches exactly, as (requests, others). Requests: each call's
    uncompacted count (by each of `counters`, with and without the system prompt, with and
    without the tool schemas), where a threshold compared with `>` or `>=` decides at that
    call.
    Others: each message's tokens, and results' lengths in 4-character tokens (as offloading
    measures them). A threshold drawn from these puts a call right on it, where `>` and `>=`
    differ."""
    requests: set[int] = set()
    others: set[int] = set()
    fed = turn_table(trace).fed.tolist()
    for cpt in counters:
        counts = tokens_list(trace.messages, cpt)
        others.update(counts)
        prefix = [0, *itertools.accumulate(counts)]
        tools = tool_schema_tokens(trace.tools, cpt)
        requests.update(
            prefix[n] - drop + extra
            for n in fed
            for drop in (0, counts[0])
            for extra in {0, tools}
            if n
        )
    others.update(n // 4 for m in trace.messages if (n := len(message_text(m))) % 4 == 0)
    return sorted(requests), sorted(others - requests)


def _exact(draw: st.DrawFn, exact: tuple[list[int], list[int]]) -> int:
    """A count from `ties`: a request's, two times in three (where thresholds decide)."""
    requests, others = exact
    pick = requests if requests and (not others or draw(st.integers(0, 2)) < 2) else others
    return draw(st.sampled_from(pick)) if pick else draw(st.integers(0, 12))


def _value(draw: st.DrawFn, name: str, default: Any, exact: tuple[list[int], list[int]]) -> Any:
    """A random value for a parameter in the range its slider covers (ints and floats around
    the default, sizes of the default's kind, windows small enough to act on short runs), or
    for a count, sometimes one a request reaches exactly (`exact`)."""
    if isinstance(default, bool):  # switches (`cache_aligned`: no form) flipped now and then
        return draw(st.booleans()) if draw(st.integers(0, 3)) == 0 else default
    if name == "window" or (name == "max_output_tokens" and isinstance(default, int)):
        return draw(st.integers(0 if name != "window" else 800, 12_000))
    if isinstance(default, int):  # counts of messages or turns, or token thresholds
        # a token-sized default is a threshold: drawn half the time from counts a request
        # reaches exactly; a small one counts messages or turns: mostly small values
        sized = default >= 100
        branch = draw(st.integers(0, 5))
        if branch < (3 if sized else 1):
            return _exact(draw, exact)
        if branch < (4 if sized else 5):
            return draw(st.integers(0, 12))
        return draw(st.integers(0, min(6_000, max(12, 3 * default))))
    if isinstance(default, float):
        if 0 < default <= 1:
            return draw(st.floats(0.02, 1.0))
        return draw(st.floats(0.0, max(1.0, 3 * default)))
    if isinstance(default, tuple) and name.endswith("tools"):  # tools a policy leaves alone
        if draw(st.integers(0, 2)) == 0:
            return tuple(draw(st.lists(st.sampled_from(TOOLS), unique=True, max_size=2)))
        return default
    if isinstance(default, tuple) and len(default) == 2 and isinstance(default[0], str):
        kind, number = default
        if kind == "fraction":
            return (kind, draw(st.floats(0.02, 1.0)))
        if kind == "tokens" and draw(st.booleans()):
            return (kind, _exact(draw, exact))
        return (kind, draw(st.integers(1, 6_000 if kind == "tokens" else 30)))
    return default


@st.composite
def deepagents_settings(draw: st.DrawFn, trace: Trace) -> dict[str, Any]:
    """The explorer's Deep Agents sliders, over ranges that act on short runs, and the sizes
    its form reads: triggers by fraction, tokens (half the time a count a request reaches,
    `ties`) or messages, alone or as a clause of two limits; the output reserve (at "auto",
    64k for this model, every call is over its input budget and the form steps every call);
    truncation's own trigger or none; long user messages evicted now and then."""
    # half the time a window the run stays well inside, where the form jumps over most calls
    # (the stretches a user message, an offload or a limit must end)
    window = draw(
        st.integers(2_000, 30_000) if draw(st.booleans()) else st.integers(30_000, 150_000)
    )
    exact = ties(trace)

    def size(kinds: tuple[str, ...]) -> tuple[str, float]:
        kind = draw(st.sampled_from(kinds))
        if kind == "fraction":
            return (kind, draw(st.floats(0.01, 1.0)))
        if kind == "tokens":
            return (
                kind,
                max(1, _exact(draw, exact))
                if draw(st.booleans())
                else draw(st.integers(1, window)),
            )
        return (kind, draw(st.integers(1, 40)))

    trigger: Any = size(("fraction", "fraction", "tokens", "messages"))
    if draw(st.integers(0, 4)) == 0:  # a clause of two limits, or'ed with a fraction
        both = {"tokens": size(("tokens",))[1], "messages": size(("messages",))[1]}
        trigger = [both, ("fraction", draw(st.floats(0.05, 1.0)))]
    keep = size(("fraction", "fraction", "tokens", "messages"))
    truncate: Any = {"trigger": trigger, "keep": keep, "max_length": draw(st.integers(20, 2_000))}
    if draw(st.integers(0, 3)) == 0:
        truncate = (
            None
            if draw(st.booleans())
            else {**truncate, "trigger": size(("fraction", "tokens", "messages"))}
        )
    reserve = draw(st.integers(0, 3))
    return {
        "window": window,
        "trigger": trigger,
        "keep": keep,
        "tool_token_limit_before_evict": draw(st.integers(20, 5_000)),
        "truncate_args_settings": truncate,
        "max_output_tokens": "auto" if reserve == 0 else draw(st.integers(0, window // 2)),
        "human_message_token_limit_before_evict": (
            draw(st.integers(20, 1_500)) if draw(st.integers(0, 2)) == 0 else 50_000
        ),
    }


@st.composite
def policy_settings(draw: st.DrawFn, name: str, trace: Trace) -> Any:
    """Parameters for `name`, each moved (most of them) or left where it starts: at the
    policy's defaults or, half the time, at settings that act often on short runs (`SMALL`).
    A policy's own counter (`chars_per_token`) is drawn first, so the counts drawn exactly
    (`ties`) are those by the counter the policy decides with and the one it reports. A count
    (an int by default) whose type also takes a word (`keep_thinking_turns="all"`) is that
    word one time in four."""
    base = get(name)
    if isinstance(base, DeepAgents):
        return draw(deepagents_settings(trace))
    if not dataclasses.is_dataclass(base):
        return base
    start = {**dataclasses.asdict(base), **(SMALL.get(name, {}) if draw(st.booleans()) else {})}
    fields = [f.name for f in dataclasses.fields(base) if f.init]
    fields.sort(key=lambda f: f != "chars_per_token")
    out: dict[str, Any] = {}
    exact = ties(trace)
    words = _words(type(base))
    for field in fields:
        moved = draw(st.integers(0, 2)) < 2  # hypothesis favours 0: moved two times in three
        out[field] = _value(draw, field, start[field], exact) if moved else start[field]
        word = words.get(field) if type(getattr(base, field)) is int else None
        if word and draw(st.integers(0, 3)) == 0:
            out[field] = draw(st.sampled_from(word))
        if field == "chars_per_token" and isinstance(out[field], float) and out[field] > 0:
            exact = ties(trace, (base.counter_chars_per_token(trace), out[field]))
    return out


@functools.cache
def _words(policy: type) -> dict[str, tuple[str, ...]]:
    """The words each field of `policy` takes besides its values (its type's `Literal`s);
    none for a plugged-in policy whose annotations name what its module imports lazily."""
    try:
        hints = typing.get_type_hints(policy)
    except (NameError, TypeError):
        return {}
    return {
        field: tuple(
            w
            for a in typing.get_args(hint)
            if typing.get_origin(a) is Literal
            for w in typing.get_args(a)
        )
        for field, hint in hints.items()
    }


def _outcome(fn: Any) -> tuple[Any, str | None]:
    try:
        return fn(), None
    except (TypeError, ValueError) as exc:
        return None, f"{type(exc).__name__}: {exc}"


def _check(name: str, trace: Trace, params: Any, used: list[bool]) -> None:
    """The form's counts and events equal the replay's, or both refuse the settings alike. A
    trace or setting the form declines is the replay's alone (nothing to compare); that each
    form is used at all is checked apart (`used`, `_has_form`, `_promises_form`)."""
    made, _ = _outcome(lambda: params if not isinstance(params, dict) else get(name, **params))
    if made is None:
        return  # the policy refuses these parameters outright: no replay either
    summarizer = CachedExtractive()
    quick, quick_error = _outcome(lambda: counted(trace, made, summarizer))
    if quick is None and quick_error is None:
        return  # no form for this trace and these settings: a slider replays, as below
    full, full_error = _outcome(lambda: replay(trace, made, CachedExtractive()))
    assert quick_error == full_error, (name, made)
    if quick is None:
        return
    used.append(bool(quick.event_list))
    assert full is not None
    assert quick.counts.equals(full.counts), (name, made, quick.counts, full.counts)
    assert quick.event_list == full.event_list, (name, made)
    assert (quick.trace_id, quick.policy) == (full.trace_id, full.policy)


def _has_form(name: str) -> bool:
    """Whether `name` at its defaults draws from a count-only form on a typical trace."""
    try:
        return counted(_short_trace(), get(name)) is not None
    except (TypeError, ValueError):
        return False


def _promises_form(name: str) -> bool:
    """Whether `name` promises a count-only form: its own class defines `counts_only` (an
    inherited one promises nothing), one of its stages declares `JUMPS` or `acts_over`, or
    its only stage is a `RuleStage` that keeps the engine's `apply` (the default forms'
    contracts). A form that stopped being used (a changed guard) would
    otherwise leave the slider on the full replay unnoticed."""
    policy = get(name)
    if "counts_only" in vars(type(policy)):
        return True
    if not isinstance(policy, StagePolicy):
        return False
    trace = _short_trace()
    stages = policy.stages(trace, policy.window_for(trace))
    if len(stages) == 1 and isinstance(stages[0], RuleStage):
        return type(stages[0]).apply is RuleStage.apply
    return any(declares(s, JUMPS) or acting_threshold(s) is not None for s in stages)


def on_every_tie(name: str, used: list[bool]) -> None:
    """Each token threshold of `name` (an int parameter of token size, or a `("tokens", N)`
    size) set, in turn, to every count a call of a short trace reaches exactly and to some
    sizes of one message (a result's length in 4-character tokens, as offloading measures
    it), the other parameters at settings that act (`SMALL`): where a rule's `>` and `>=`
    differ, some call or result sits right on the threshold. Random draws hit such a tie too
    rarely to be relied on."""
    base = get(name)
    if isinstance(base, DeepAgents) or not dataclasses.is_dataclass(base):
        return
    start = {**dataclasses.asdict(base), **SMALL.get(name, {})}
    trace = _short_trace()
    requests, others = ties(trace)
    # about 40 requests' counts, spread over the run, and 12 messages' (sizes of one result)
    counts = [*requests[:: max(1, len(requests) // 40)], *others[:: max(1, len(others) // 12)]]
    for field, value in start.items():
        sized = isinstance(value, tuple) and len(value) == 2 and value[0] == "tokens"
        token_sized = type(value) is int and (value >= 100 or "token_limit" in field)
        if not sized and not token_sized:  # a token limit SMALL scales down is one too
            continue
        for count in counts:
            _check(name, trace, {**start, field: ("tokens", count) if sized else count}, used)


@functools.cache
def _short_trace() -> Trace:
    """A 30-turn trace with parallel calls, thinking and big results (tests.synthetic), made
    once (its facts are then measured once, as a slider's trace is)."""
    from tests.synthetic import make_trace

    return make_trace(30, seed=1, model=MODEL, provider="anthropic")


@pytest.mark.parametrize("name", POLICIES)
def test_every_fast_path_equals_the_plain_replay(name: str) -> None:
    used: list[bool] = []
    has_form = _has_form(name)
    promised = _promises_form(name)
    # Deep Agents' form alone derives a trace's tables from an earlier run's under other
    # settings (its feeds, `deepagents.feed.KEPT_FEEDS`, and the counts tables of each)
    deep = isinstance(get(name), DeepAgents)

    @settings(
        # a policy with no form has nothing to compare: a few examples show it declines
        max_examples=80 if has_form or promised else 8,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def check(data: st.DataObject) -> None:
        trace = data.draw(conversations(), "trace")
        params = data.draw(policy_settings(name, trace), "settings")
        _check(name, trace, params, used)
        if deep:  # a slider move (one setting changed): the form builds on what it kept
            other = data.draw(policy_settings(name, trace), "other")
            moved = data.draw(st.sampled_from(sorted(other)), "moved")
            _check(name, trace, {**params, moved: other[moved]}, used)

    check()
    on_every_tie(name, used)
    assert has_form or not promised, f"{name}: its count-only form is not used"
    if has_form:
        assert any(used), f"{name}: its count-only form never acted on a generated example"
