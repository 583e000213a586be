"""Recorded vs replayed: does a policy reproduce the compactions the recorded harness made?

A trace whose harness compacted its own context (a deep agent traced to LangSmith, Claude
Code, Codex, OpenHands condensation, SWE-agent's observation masking) is the test a policy
model must pass: replayed under the preset of that harness, each recorded compaction should
have a replayed one at the same call, and the replay should count about the tokens the
harness counted before compacting. This module pairs the two lists; `ctxlab check-replay`
prints the pairs.

* `preset_for(trace)`: the preset modelling the trace's harness.
* `recorded_settings(trace, policy)`: the parameters the recording itself fixes (the window of
  the model profile the harness ran with, its token counter, its use of recorded usage), so
  the preset runs as the recorded harness was configured, not at public defaults.
* `check(trace, replay)`: one `Paired` per recorded compaction (`ctxlab._ingest.recorded`), the
  replayed events no recorded one claimed, `turn_agreement` and `token_error_median`.
* `check_replay(traces, policy=None)`: `ctxlab.check_replay`, the twin of the command: each
  trace replayed under its harness's preset (or `policy`) as the recording configured it, then
  checked; one `Check` per trace, subagents included.

Pairing is one to one, nearest first, within a family: a recorded summary pairs with a replayed
`summarize`, any other recorded rewrite with a replayed event that rewrites what earlier calls
saw (argument truncation, clearing, masking, forgetting, trimming). Offloads are decided when a
tool returns, before any call sees the result, so a recording never shows them as compactions
and they are never paired. A compaction the user asked for (`trigger="manual"`) is reported and
paired after the automatic ones but left out of `turn_agreement`: thresholds cannot predict it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxlab._cost.calibration import CountedAs
from ctxlab._ingest.recorded import recorded_compactions
from ctxlab._trace import RecordedCompaction, Trace

if TYPE_CHECKING:
    from ctxlab._replay.policies.base import Event, Policy
    from ctxlab._replay.replay import Replay
    from ctxlab._replay.summarizers import Summarizer

SUMMARISING = frozenset({"summarize"})
"""Replayed event kinds that put a summary where messages were."""
NOT_COMPACTIONS = frozenset({"offload_tool_result", "offload_human_message", "overflow_error"})
"""Replayed event kinds a recording cannot show as a compaction (see the module docstring)."""

AGREE_WITHIN = 1
"""Calls apart at which a replayed compaction still agrees with the recorded one."""
TOKEN_GOAL = 0.05
"""Median relative error of the pre-compaction tokens above which a note says why."""

FALLBACK = "deepagents"
HARNESS_PRESETS = (
    ("claude-code", "claude-code"),
    ("codex", "codex"),
    ("openhands", "openhands-llm-summarizing"),
    ("swe-agent", "swe-agent-masking"),
)
"""Format name prefix -> the preset modelling that harness's own compaction."""

DEEPAGENTS_FILE_TOOLS = frozenset({"ls", "read_file", "write_file", "edit_file", "glob", "grep"})
"""Tools every default deep agent sends: how a LangSmith trace shows it is one."""
DEEPAGENTS_SUMMARY = "You are in the middle of a conversation that has been summarized."


INSPECT_PRESETS = {
    "summarize": "inspect-summary",
    "clear_tool_uses": "inspect-edit",
    "trim": "inspect-trim",
}
"""Inspect records which compaction strategy ran; each has its own preset."""


def recorded_settings(trace: Trace, policy: str) -> dict[str, tuple[str, str]]:
    """Parameters of `policy` the recording fixes: name -> (value as `--set` spells it, where
    it came from). The presets apply the same values by default (`ctxlab.replay(trace,
    "codex")` reads the rollout's window too); check-replay names them in a note and in the
    JSON's `recorded_settings`.

    * `deepagents`, from what LangSmith keeps of the chat model (`Trace.metadata`, see
      `ctxlab._ingest.formats.langsmith.recorded_model_settings`): `window`, the recorded
      model profile's `max_input_tokens`; `chars_per_token`, LangChain's counter for the
      recorded model type (3.3 for `anthropic-chat`, 4 for every other); `use_usage_metadata`,
      as the middleware scales its count by the last recorded usage;
    * `codex`: `window`, the model's window behind the rollout's `model_context_window`
      (`ctxlab._replay.policies.codex.window_from_recorded`), and
      `auto_compact_token_limit`, the rollout's `model_auto_compact_token_limit`;
    * `claude-code`: `window`, Claude Code's window for the recorded model id
      (`ctxlab._replay.policies.claude_code.claude_code_window`), with the recorded version;
    * `inspect-*`: the plan's `react(compaction=...)` parameters, and `counted_as` by the
      Inspect version the log records (`ctxlab._replay.policies.inspect.counts_usage`).
    """
    if policy == "codex":
        return _codex_settings(trace)
    if policy.startswith("inspect-"):
        return _inspect_settings(trace, policy)
    if policy == "claude-code":
        return _claude_code_settings(trace)
    if policy != "deepagents":
        return {}
    out: dict[str, tuple[str, str]] = {}
    profile = trace.metadata.get("model_profile")
    window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    if isinstance(window, int) and window > 0:
        out["window"] = (str(window), "the recorded model profile's max_input_tokens")
    llm_type = trace.metadata.get("llm_type")
    if isinstance(llm_type, str):
        cpt = "3.3" if llm_type == "anthropic-chat" else "4.0"
        out["chars_per_token"] = (
            cpt,
            f"LangChain's counter for the recorded model type {llm_type!r}",
        )
    if any(t.input_tokens is not None for t in trace.turns):
        out["use_usage_metadata"] = ("true", "the middleware scales its count by recorded usage")
    return out


def _codex_settings(trace: Trace) -> dict[str, tuple[str, str]]:
    from ctxlab._replay.policies.codex import EFFECTIVE_PERCENT, window_from_recorded

    out: dict[str, tuple[str, str]] = {}
    recorded = trace.metadata.get("model_context_window")
    if isinstance(recorded, int) and recorded > 0:
        window = window_from_recorded(recorded)
        why = f"the rollout's model_context_window {recorded:,}"
        if window != recorded:
            why += f", {EFFECTIVE_PERCENT}% of the model's window"
        out["window"] = (str(window), why)
    limit = trace.metadata.get("model_auto_compact_token_limit")
    if isinstance(limit, int) and limit > 0:
        out["auto_compact_token_limit"] = (
            str(limit),
            "the rollout's model_auto_compact_token_limit",
        )
    return out


INSPECT_SETTINGS = {
    "inspect-summary": ("threshold", "instructions"),
    "inspect-edit": ("threshold", "keep_thinking_turns", "keep_tool_uses", "keep_tool_inputs"),
    "inspect-trim": ("threshold", "preserve"),
}
"""Parameters of each Inspect preset an Inspect log records in its plan's compaction config."""


def _inspect_settings(trace: Trace, policy: str) -> dict[str, tuple[str, str]]:
    config = trace.metadata.get("compaction_config")
    if not isinstance(config, dict):
        config = {}
    kind = config.get("type")
    out: dict[str, tuple[str, str]] = {}
    for key in INSPECT_SETTINGS.get(policy, ()):
        value = config.get(key)
        if value is None or isinstance(value, dict | list):
            continue
        text = json.dumps(value) if isinstance(value, bool) else str(value)
        out[key] = (text, f"the log's plan: react(compaction={kind}(..., {key}={value!r}))")
    version = trace.metadata.get("inspect_version")
    if isinstance(version, str):
        from ctxlab._replay.policies.inspect import counts_usage

        if counts_usage(version):
            why = f"Inspect {version} counts from the last call's reported usage (>= 0.3.178)"
            out["counted_as"] = ("previous_call", why)
        else:
            why = f"Inspect {version} counts tool schemas and messages (before 0.3.178)"
            out["counted_as"] = ("file", why)
    return out


def _claude_code_settings(trace: Trace) -> dict[str, tuple[str, str]]:
    from ctxlab._replay.policies.claude_code import claude_code_window

    if not trace.model or not trace.format.startswith("claude-code"):
        return {}  # the window rule is Claude Code's: a trace of another harness keeps its own
    window = claude_code_window(trace.model)
    version = trace.metadata.get("version")
    why = f"Claude Code{' ' + version if isinstance(version, str) else ''}'s window for " + (
        f"{trace.model} (1M: the model id ends in [1m])"
        if window > 200_000
        else f"{trace.model} (200k: the model id does not ask for the 1M context)"
    )
    return {"window": (str(window), why)}


def preset_for(trace: Trace) -> tuple[str, str | None]:
    """The preset modelling `trace`'s harness, and a warning when it is a guess.

    LangSmith traces of a deep agent (its filesystem tools, or its summary wording among the
    inserted messages) get `deepagents`; Claude Code, Codex, OpenHands and SWE-agent files
    their own presets; Inspect logs the preset of the compaction strategy they recorded
    (`inspect-summary` when none); anything else `deepagents`, with a warning saying so."""
    for prefix, preset in HARNESS_PRESETS:
        if trace.format.startswith(prefix):
            return preset, None
    if trace.format == "inspect-ai":
        kinds = [c.kind for c in trace.compactions if c.kind in INSPECT_PRESETS]
        return INSPECT_PRESETS[kinds[0] if kinds else "summarize"], None
    if trace.format.startswith("langsmith") and _is_deep_agent(trace):
        return FALLBACK, None
    return FALLBACK, (
        f"no preset models the harness of {trace.format!r} trace {trace.trace_id}; "
        f"compared with {FALLBACK!r} (choose one with --policy)"
    )


def _is_deep_agent(trace: Trace) -> bool:
    names = {t.get("name") or (t.get("function") or {}).get("name") for t in trace.tools}
    if DEEPAGENTS_FILE_TOOLS <= names:
        return True
    return any(m.text.startswith(DEEPAGENTS_SUMMARY) for m in trace.inserted)


def family(kind: str) -> str:
    """`summarize` for summarising kinds, `edit` for every other rewrite."""
    return "summarize" if kind in SUMMARISING else "edit"


@dataclass(frozen=True, slots=True)
class Paired:
    """One recorded compaction and the replayed event paired with it (None: none left).

    `replayed_tokens` is the replay's request at the call before the recorded compaction,
    the call whose recorded size (`recorded.pre_tokens`) the harness compacted after.
    """

    recorded: RecordedCompaction
    replayed: Event | None
    replayed_tokens: int | None
    note: str | None = None
    replayed_policy_tokens: int | None = None
    """`replayed_tokens` as the policy counted the file alone (equal to it unless the replay's
    `counted_as` added what the file lacks)."""
    replayed_tokens_before: int | None = None
    """The paired event's count when it fired, in `replayed_tokens`' terms."""

    @property
    def counted(self) -> bool:
        """Whether the event counts in the agreement (the user did not ask for it)."""
        return self.recorded.trigger != "manual"

    @property
    def calls_apart(self) -> int | None:
        """Replayed turn minus recorded turn (negative: the replay compacted earlier)."""
        if self.replayed is None or self.replayed.turn is None:
            return None
        return self.replayed.turn - self.recorded.turn

    @property
    def agrees(self) -> bool:
        """A replayed compaction within `AGREE_WITHIN` calls of the recorded one."""
        apart = self.calls_apart
        return apart is not None and abs(apart) <= AGREE_WITHIN

    @property
    def token_error(self) -> float | None:
        """|replayed - recorded| / recorded pre-compaction tokens, when both are known."""
        recorded = self.recorded.pre_tokens
        if recorded is None or recorded <= 0 or self.replayed_tokens is None:
            return None
        return abs(self.replayed_tokens - recorded) / recorded

    def as_dict(self) -> dict[str, Any]:
        """The JSON `ctxlab check-replay --json` prints per event."""
        r, e = self.recorded, self.replayed
        return {
            "recorded_turn": r.turn,
            "replayed_turn": e.turn if e is not None else None,
            "recorded_tokens": r.pre_tokens,
            "replayed_tokens": self.replayed_tokens,
            "calls_apart": self.calls_apart,
            "kind": r.kind,
            "replayed_kind": e.kind if e is not None else None,
            "trigger": r.trigger,
            "manual": not self.counted,
            "counted": self.counted,
            "agrees": self.agrees,
            "token_error": self.token_error,
            "replayed_tokens_before": self.replayed_tokens_before,
            "replayed_policy_tokens": self.replayed_policy_tokens,
            "recorded_post_tokens": r.post_tokens,
            "recorded_summary": r.summary,
            "replayed_summary": e.summary if e is not None else None,
            "started_at": r.started_at,
            "note": self.note,
        }


@dataclass(slots=True)
class Check:
    """A trace's recorded compactions against one replay of it."""

    trace_id: str
    policy: str
    params: dict[str, Any]
    events: list[Paired]
    unpaired: list[Event] = field(default_factory=list)
    """Replayed compactions no recorded one was paired with (the replay's extra ones)."""
    notes: list[str] = field(default_factory=list)
    counted_as: CountedAs | None = None
    """How the replay counted the parts the file lacks (`Replay.counted_as`)."""
    recorded_settings: dict[str, dict[str, str]] = field(default_factory=dict)
    """The policy's parameters the recording fixed (`recorded_settings`): name -> `value` (as
    `--set` spells it) and `source` (where it came from)."""
    preset_guess: str | None = None
    """Why the preset was a guess (no harness recognised), when it was; also the last note."""

    @property
    def turn_agreement(self) -> float | None:
        """Share of counted events with a replayed compaction within one call; None if
        no event counts."""
        counted = [p for p in self.events if p.counted]
        return sum(p.agrees for p in counted) / len(counted) if counted else None

    @property
    def token_error_median(self) -> float | None:
        """Median relative error of the pre-compaction tokens over the events with both
        counts (manual ones too: counting does not depend on who asked); None without any."""
        errors = [e for p in self.events if (e := p.token_error) is not None]
        return statistics.median(errors) if errors else None

    def as_dict(self) -> dict[str, Any]:
        """The JSON `ctxlab check-replay --json` prints per trace."""
        return {
            "trace_id": self.trace_id,
            "policy": self.policy,
            "events": [p.as_dict() for p in self.events],
            "turn_agreement": self.turn_agreement,
            "token_error_median": self.token_error_median,
            "params": self.params,
            "unpaired_replayed_turns": [e.turn for e in self.unpaired],
            "notes": list(self.notes),
            "counted_as": self.counted_as.as_dict() if self.counted_as is not None else None,
            "recorded_settings": {k: dict(v) for k, v in self.recorded_settings.items()},
        }


def check(trace: Trace, replay: Replay) -> Check:
    """Pair every recorded compaction of `trace` with the nearest replayed one of its family
    in `replay` (a replay of `trace`), automatic compactions first."""
    recorded = recorded_compactions(trace)
    replayed = [
        e for e in replay.event_list if e.turn is not None and e.kind not in NOT_COMPACTIONS
    ]
    pairs = sorted(
        (r.trigger == "manual", abs(e.turn - r.turn), r.turn, e.turn, i, j)
        for i, r in enumerate(recorded)
        for j, e in enumerate(replayed)
        if e.turn is not None and family(e.kind) == family(r.kind)
    )
    match: dict[int, int] = {}
    taken: set[int] = set()
    for *_, i, j in pairs:
        if i not in match and j not in taken:
            match[i] = j
            taken.add(j)
    counted = replay.counted_as
    harness = counted.harness_at if counted is not None else (lambda tokens, _call: tokens)
    lowest = _lowest_threshold(replay, trace)
    lowest = harness(lowest, -1) if lowest is not None else None
    events = []
    for i, r in enumerate(recorded):
        event = replayed[match[i]] if i in match else None
        before = _before(replay, r.turn)
        fired = event.tokens_before if event is not None else None
        fired_at = event.turn if event is not None else None
        paired = Paired(
            r,
            event,
            harness(before, r.turn) if before is not None else None,
            replayed_policy_tokens=before,
            replayed_tokens_before=(
                harness(fired, fired_at) if fired is not None and fired_at is not None else None
            ),
        )
        events.append(dataclasses.replace(paired, note=_note(paired, lowest)))
    result = Check(
        trace_id=trace.trace_id,
        policy=replay.policy,
        params=replay.params,
        events=events,
        unpaired=[e for j, e in enumerate(replayed) if j not in taken],
        counted_as=counted,
    )
    if counted is not None and counted.method != "file":
        result.notes.append(_counted_note(counted))
    median = result.token_error_median
    if median is not None and median > TOKEN_GOAL:
        result.notes.append(_count_gap(trace, replay, median))
    return result


def check_replay(
    traces: str | os.PathLike[str] | Trace | Iterable[Trace],
    policy: str | Policy | None = None,
    *,
    settings: Mapping[str, str] | None = None,
    summarizer: Summarizer | None = None,
) -> list[Check]:
    """Replay every trace (a path, a `Trace`, or traces; subagents included) and pair its
    recorded compactions with the replayed ones: one `Check` per trace, each `as_dict()` a
    trace of `ctxlab check-replay --json`.

    `policy` is a catalogue name (`ctxlab policies`) or a policy object; None picks the preset
    of each trace's harness (`preset_for`). A policy given by name runs with the settings the
    recording fixes (`recorded_settings`: the window the harness ran with, ...) unless
    `settings` sets them: parameters spelled as `--set` spells them (`{"window": "200000"}`),
    which win over both. A policy object runs as it is. `summarizer` defaults to the offline
    `Extractive`. A policy that cannot run on a trace raises `ValueError` naming the trace.
    """
    from ctxlab._ingest.load import traces_of
    from ctxlab._replay.policies.catalog import get_spelled

    given = dict(settings or {})
    if given and policy is not None and not isinstance(policy, str):
        raise ValueError("settings apply to a policy given by name; set them on the object")
    return check_traces(
        traces_of(traces),
        policy,
        given,
        lambda name, recorded: get_spelled(name, {**recorded, **given}),
        summarizer,
    )


def check_traces(
    traces: Iterable[Trace],
    policy: str | Policy | None,
    overridden: Collection[str],
    build: Callable[[str, dict[str, str]], Policy],
    summarizer: Summarizer | None = None,
) -> list[Check]:
    """`check_replay`'s work, shared with the command (which builds policies from its flags):
    each trace replayed under `policy` (None: its harness's preset), then checked. A name is
    built by `build(name, the recorded settings as --set texts)`, leaving out those named in
    `overridden`; an object runs as it is. A policy `build` refuses raises as `build` raised;
    one that cannot run on a trace raises `ValueError` naming the trace."""
    from ctxlab._replay.replay import replay
    from ctxlab._replay.summarizers import Extractive

    summarizer = summarizer if summarizer is not None else Extractive()
    built: dict[tuple[str, tuple[tuple[str, str], ...]], Policy] = {}
    checks = []
    for trace in traces:
        recorded: dict[str, tuple[str, str]] = {}
        warning = None
        if policy is None or isinstance(policy, str):
            name, warning = (policy, None) if policy else preset_for(trace)
            recorded = {
                k: v for k, v in recorded_settings(trace, name).items() if k not in overridden
            }
            texts = tuple((k, value) for k, (value, _) in recorded.items())
            if (name, texts) not in built:  # one object per setting: replays share its memo
                built[name, texts] = build(name, dict(texts))
            chosen = built[name, texts]
        else:
            chosen = policy
        try:
            result = check(trace, replay(trace, chosen, summarizer=summarizer))
        except ValueError as exc:  # the policy cannot run on this trace (as in `replay`)
            raise ValueError(f"{trace.trace_id}: {exc}") from exc
        if recorded:
            result.notes.insert(
                0,
                "settings from the recording: "
                + "; ".join(f"{k}={v} ({why})" for k, (v, why) in recorded.items()),
            )
        result.recorded_settings = {
            k: {"value": v, "source": why} for k, (v, why) in recorded.items()
        }
        if warning is not None:
            result.notes.append(warning)
            result.preset_guess = warning
        checks.append(result)
    return checks


def _before(replay: Replay, turn: int) -> int | None:
    """The replay's count of the context the recording measured before the compaction at
    `turn`: the previous call's request, or, for a harness that counts from the previous
    call's usage (`counted_as=previous_call`: Inspect's `tokens_before`), that request plus
    the messages fed since, which is what the harness counted at `turn` itself."""
    calls = replay.calls
    if not 0 < turn <= len(calls):
        return None
    before = calls[turn - 1].context_tokens
    counted = replay.counted_as
    if counted is None or counted.offsets is None or turn >= len(calls):
        return before
    now, then = calls[turn].baseline_tokens, calls[turn - 1].baseline_tokens
    return before + (now - then if now is not None and then is not None else 0)


def _counted_note(counted: CountedAs) -> str:
    """What the replay added to its count of the file, and from what."""
    if counted.method == "previous_call":
        return (
            "counted as the harness counts (counted_as=previous_call): at each call, the "
            "previous call's recorded input plus the policy's count of the messages since "
            f"(on {counted.calls} calls; a median {counted.added_tokens:,} tokens above the "
            "policy's count of the request); set counted_as=file to count the file alone"
        )
    how = {
        "usage": f"fitted to the recorded usage of {counted.calls} calls before any compaction",
        "first_call": "the first call's recorded input minus what the file holds",
    }[counted.method]
    return (
        f"counted as the harness counts (counted_as={counted.method}): "
        f"{counted.added_tokens:,} tokens the file lacks (system prompt, tool schemas) + "
        f"{counted.scale:.3f} x the policy's count, {how}; set counted_as=file to count the "
        "file alone"
    )


def _count_gap(trace: Trace, replay: Replay, median: float) -> str:
    """Why the counts differ: the first call shows what the replay cannot see (a system
    prompt or tool schemas the file does not carry), and the file's notes say what it lacks."""
    text = f"pre-compaction tokens differ by a median {median:.0%} (goal {TOKEN_GOAL:.0%})"
    first = trace.turns[0].input_tokens if trace.turns else None
    if first is not None and replay.calls:
        ours = replay.calls[0].context_tokens
        if replay.counted_as is not None:
            ours = replay.counted_as.harness_at(ours, 0)
        text += (
            f"; at the first call the replay counts {ours:,} tokens "
            f"where the recording says {first:,}"
        )
    if trace.notes:
        text += ". The file's notes: " + " ".join(trace.notes)
    return text


def _lowest_threshold(replay: Replay, trace: Trace) -> int | None:
    """The lowest token level at which the replayed policy acts (its trigger or input budget),
    when the policy can say (`thresholds(trace)`)."""
    method = getattr(replay.source_policy, "thresholds", None)
    if method is None:
        return None
    levels = {k: v for k, v in method(trace).items() if k in ("trigger", "budget")}
    return min(levels.values()) if levels else None


def _note(p: Paired, lowest: int | None) -> str | None:
    """Why a pair misses, or what it cannot say, in one sentence; None when it agrees."""
    r = p.recorded
    parts = []
    if not p.counted:
        parts.append("asked for by the user: reported, not counted (no threshold predicts it)")
    if r.pre_tokens is None:
        parts.append("the file does not carry the tokens before this compaction")
    if p.replayed is None:
        why = f"no replayed {family(r.kind)} left to pair"
        if p.replayed_tokens is not None and lowest is not None and p.replayed_tokens < lowest:
            why += (
                f": the replay counted {p.replayed_tokens:,} tokens before it, under the "
                f"policy's threshold {lowest:,}; the recorded threshold is not in the file "
                "(set --window or --trigger)"
            )
        parts.append(why)
    elif not p.agrees and p.calls_apart is not None:
        side = "earlier" if p.calls_apart < 0 else "later"
        why = f"the replay compacted {abs(p.calls_apart)} calls {side}"
        if p.replayed_tokens_before is not None:
            why += f", at {p.replayed_tokens_before:,} tokens"
        if r.pre_tokens is not None:
            why += f" (the recording compacted after a call of {r.pre_tokens:,})"
        parts.append(why)
    return "; ".join(parts) or None


__all__ = [
    "AGREE_WITHIN",
    "Check",
    "Paired",
    "check",
    "family",
    "preset_for",
    "recorded_settings",
]
