"""Billed tokens: what the provider charged for a request, beside what the policy believed.

A policy counts the way its harness counts (`ceil(chars/4)+3`, 3.3 characters per token for
Claude) and ctxlab keeps that count to reproduce its decisions. The bill is another number.
A `Biller` estimates it per message, so a replay can sum it like the policy's own count:

* **exact** (OpenAI models): the public BPE and the chat format (`ctxlab._cost.openai_tokens`), plus
  the fixed part of the request a recording did not keep (tool schemas, a system prompt), read
  off the trace's recorded usage when it has some;
* **calibrated** (Anthropic and every model whose tokenizer is not public): a linear fit against
  the trace's own recorded usage, `billed ≈ offset + scale · Σ(o200k(message) + per_message)
  + scale · o200k(tools)`. Consecutive calls of an uncompacted conversation differ by the
  messages added between them, so the differences of recorded usage isolate what each message
  cost: `scale` and `per_message` come from them (least absolute deviations, so one odd call
  does not tilt them), and `offset` (what the recording lacks: Claude Code keeps neither its
  system prompt nor its tool schemas) is the median of what remains. A trace without usage
  borrows the scale of a calibration the store holds for its model family;
* **estimated**: no usage, nothing in the store: the per-family defaults below, measured on the
  real traces in ../shared/data (docs/billed_tokens.md has the table).

Recorded billed input per call is `Turn.input_tokens`: every loader stores the full prompt
there, cache reads and writes included (docs/formats.md). A turn whose cache reads and writes
alone exceed its `input_tokens` was recorded the other way (Anthropic's raw `input_tokens`
excludes the cache) and is summed instead.
"""

from __future__ import annotations

import math
import operator
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage

from ctxlab._cost import openai_tokens as ot
from ctxlab._cost import tokens as tk
from ctxlab._cost.profiles import guess_provider
from ctxlab._ingest.inputs import Inputs
from ctxlab._messages import chars_per_token

if TYPE_CHECKING:
    from pathlib import Path

    from ctxlab._store.store import Store
    from ctxlab._trace import Trace, Turn

METHODS = ("exact", "calibrated", "estimated")
"""How a trace's billed tokens are known, best first."""

BASE_ENCODING = "o200k_base"
"""The public encoding every calibrated fit is expressed in."""


@dataclass(frozen=True, slots=True)
class Fit:
    """The parameters of a biller: `billed ≈ offset + scale · Σ(base(m) + per_message) +
    scale · base(tools)`, `base` being the exact OpenAI count in `encoding`.

    `deltas` is how many consecutive-call differences the scale was fitted on and
    `held_out_error_median` the median per-call error (percent) when fitting on the first half
    of the calls and predicting the second (None when there were too few).
    """

    family: str | None
    scale: float = 1.0
    per_message: float = 0.0
    offset: float = 0.0
    encoding: str = BASE_ENCODING
    deltas: int = 0
    held_out_error_median: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The fit as the JSON row's `fit` object (floats rounded for reading)."""
        out = asdict(self)
        for key in ("scale", "per_message", "offset", "held_out_error_median"):
            if out[key] is not None:
                out[key] = round(out[key], 4 if key == "scale" else 2)
        return out


DEFAULT_FITS: dict[str, Fit] = {
    "anthropic": Fit("anthropic", scale=1.159, per_message=27.0),
    "meta": Fit("meta", scale=1.004, per_message=7.0),
    "other": Fit("other", scale=1.0, per_message=0.0),
}
"""Per-provider defaults of the `estimated` method (no usage, no stored calibration), and the
per-message constant of fits with too few differences to fit their own.

`anthropic` and `meta` are the fit (`_fit_scale`) pooled over every consecutive-call
difference of the real traces in ../shared/data: 385 for Claude models (Claude Code sessions,
Managed Agents, OpenHands), 102 for Llama 4 Maverick (OpenHands); tests/test_calibration.py
refits them and fails when they drift. `other` (Gemini, Mistral, ...) is unmeasured: o200k as
it is. No offset: what a recording lacks (a harness's system prompt, tool schemas) cannot be
guessed."""


_VENDOR = re.compile(r"^(?:[a-z]+\.)+(?=claude|llama|gpt)")
"""Bedrock-style vendor prefixes (`us.anthropic.claude-...`)."""
_DATE = re.compile(r"([-@](\d{8}|\d{4}-\d{2}-\d{2})|-latest|-v\d+(:\d+)?)$")


def model_family(model: str | None) -> str | None:
    """The family a calibration is kept under: the model name without provider prefix, snapshot
    date, `-latest` or version suffix (`anthropic/claude-sonnet-4-5-20250929` ->
    `claude-sonnet-4-5`). Snapshots of one model share a tokenizer; other models may not."""
    if not model:
        return None
    name = model.strip().lower().rsplit("/", 1)[-1]
    prefix, colon, rest = name.partition(":")
    if colon and prefix.isalpha():  # `anthropic:claude-...`, not a `-v1:0` version
        name = rest
    name = _VENDOR.sub("", name)
    previous = None
    while previous != name:
        previous, name = name, _DATE.sub("", name)
    return name or None


def _provider_key(model: str | None, provider: str | None) -> str:
    """Which default family a model falls back to."""
    provider = provider or guess_provider(model)
    name = (model or "").lower()
    if provider == "anthropic" or "claude" in name:
        return "anthropic"
    if "llama" in name or provider == "meta":
        return "meta"
    return "other"


_COUNTERS: dict[str, ot.OpenAICounter] = {}


def _counter(encoding: str) -> ot.OpenAICounter:
    counter = _COUNTERS.get(encoding)
    if counter is None:
        counter = _COUNTERS[encoding] = ot.OpenAICounter(encoding)
    return counter


def base_tokens(message: BaseMessage, encoding: str = BASE_ENCODING) -> int:
    """The exact OpenAI chat count of one message, memoised per message object."""
    return tk.derived(
        message, ("billing_base", encoding), lambda: _counter(encoding).message(message)
    )


class Biller:
    """Billed tokens of requests, per message and fixed part, for one trace's model.

    `count(messages, tools)` = `fixed(tools)` + Σ `message(m)`, so a replay sums billed tokens
    the way it sums the policy's own count. The exact count of each message is memoised per
    message object; the fit only scales it.
    """

    __slots__ = ("fit", "method", "model")

    def __init__(self, method: str, model: str | None, fit: Fit) -> None:
        if method not in METHODS:
            raise ValueError(f"unknown billing method {method!r}; one of {', '.join(METHODS)}")
        self.method = method
        self.model = model
        self.fit = fit

    def __repr__(self) -> str:
        return f"Biller(method={self.method!r}, model={self.model!r}, fit={self.fit!r})"

    def message(self, message: BaseMessage) -> int:
        """Billed tokens one message adds to any request that holds it."""
        base = base_tokens(message, self.fit.encoding)
        if self.method == "exact":
            return base
        return round(self.fit.scale * (base + self.fit.per_message))

    def fixed(self, tools: Sequence[Mapping[str, Any]] = ()) -> int:
        """Billed tokens of a request whatever its messages: framing, tools, unrecorded part."""
        counter = _counter(self.fit.encoding)
        if self.method == "exact":
            return counter.fixed(tools) + round(self.fit.offset)
        return round(self.fit.offset + self.fit.scale * counter.fixed(tools))

    def count(
        self, messages: Iterable[BaseMessage], tools: Sequence[Mapping[str, Any]] = ()
    ) -> int:
        """Billed input tokens of a whole request."""
        return self.fixed(tools) + sum(self.message(m) for m in messages)


@dataclass(frozen=True, slots=True)
class TraceCalibration:
    """How well the policy's count and the biller match one trace's recorded usage.

    Errors are the median over calls with usage of |estimate − recorded| / recorded, in
    percent; None without usage. `fit` is the `Fit` behind `billed_error_median`.
    """

    trace_id: str
    model: str | None
    method: str
    calls_with_usage: int
    policy_counter_error_median: float | None
    billed_error_median: float | None
    fit: Fit

    def as_dict(self) -> dict[str, Any]:
        """The row `ctxlab calibrate --json` prints."""
        return {
            "trace_id": self.trace_id,
            "model": self.model,
            "method": self.method,
            "calls_with_usage": self.calls_with_usage,
            "policy_counter_error_median": _round(self.policy_counter_error_median),
            "billed_error_median": _round(self.billed_error_median),
            "fit": self.fit.as_dict(),
        }

    def biller(self) -> Biller:
        """The biller this calibration describes."""
        return Biller(self.method, self.model, self.fit)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def billed_input(turn: Turn) -> int | None:
    """What the provider billed as input for one recorded call (see the module doc)."""
    if turn.input_tokens is None:
        return None
    cache = (turn.cache_read_tokens or 0) + (turn.cache_write_tokens or 0)
    if cache > turn.input_tokens:
        return turn.input_tokens + cache
    return turn.input_tokens


def _turn_model(trace: Trace, turn: Turn) -> str | None:
    return turn.model or trace.model


def models(trace: Trace) -> list[str | None]:
    """The models a trace's calls with usage went to, most calls first (ties: first used).

    A session can switch models mid-way (Claude Code moves between Opus and Haiku); models
    differ in tokenizer and in the system prompt the harness sends, so each gets its own fit.
    Without usage: the trace's model alone.
    """
    counts: dict[str | None, int] = {}
    for turn in trace.turns:
        if billed_input(turn):
            model = _turn_model(trace, turn)
            counts[model] = counts.get(model, 0) + 1
    if not counts:
        return [trace.model or next((t.model for t in trace.turns if t.model), None)]
    return sorted(counts, key=lambda m: -counts[m])


def _usage_turns(trace: Trace, model: str | None) -> list[tuple[Turn, int]]:
    """(turn, billed input) of the calls to `model` that recorded usage."""
    out = []
    for turn in trace.turns:
        billed = billed_input(turn)
        if billed and _turn_model(trace, turn) == model:
            out.append((turn, billed))
    return out


@dataclass(frozen=True, slots=True)
class _Call:
    billed: int
    base: int
    """Σ base(m) over the inputs plus the exact fixed part (reply priming, tools)."""
    messages: int


@dataclass(frozen=True, slots=True)
class _Delta:
    billed: int
    base: int
    messages: int


def _extends(longer: Sequence[BaseMessage], shorter: Sequence[BaseMessage]) -> bool:
    """True when `longer` starts with exactly the messages of `shorter`: at once when both are
    `Inputs` whose leading slices are the same slices of the same lists (a call that saw the
    previous call's input plus what followed), else message by message."""
    if len(longer) < len(shorter):
        return False
    if isinstance(longer, Inputs) and isinstance(shorter, Inputs):
        if longer.starts_with(shorter):
            return True
    return all(a is b or a == b for a, b in zip(longer, shorter, strict=False))


def _observations(
    trace: Trace, usage: Sequence[tuple[Turn, int]], encoding: str = BASE_ENCODING
) -> tuple[list[_Call], list[tuple[int, _Delta]]]:
    """Per call with usage: billed and base counts; per pair of consecutive calls whose inputs
    extend the earlier one's (no compaction between): what the added messages cost.

    Deltas carry the index (in the calls list) of their later call, for the held-out split."""
    tools_base = _counter(encoding).fixed(trace.tools)
    calls: list[_Call] = []
    deltas: list[tuple[int, _Delta]] = []
    previous: tuple[Turn, int] | None = None
    before_base = 0
    for turn, billed in usage:
        inputs = turn.inputs
        extends = previous is not None and _extends(inputs, previous[0].inputs)
        if extends:  # only the added messages are counted: linear in the trace, not quadratic
            assert previous is not None
            before, before_billed = previous
            added = inputs[len(before.inputs) :]
            added_base = sum(base_tokens(m, encoding) for m in added)
            base = before_base + added_base
            if added and not turn.compacted:
                deltas.append((len(calls), _Delta(billed - before_billed, added_base, len(added))))
        else:
            base = tools_base + sum(base_tokens(m, encoding) for m in inputs)
        calls.append(_Call(billed, base, len(inputs)))
        previous, before_base = (turn, billed), base
    return calls, deltas


def _weighted_median(values: Sequence[float], weights: Sequence[float]) -> float:
    pairs = sorted(zip(values, weights, strict=True))
    half = sum(weights) / 2
    running = 0.0
    for value, weight in pairs:
        running += weight
        if running >= half:
            return value
    return pairs[-1][0]


PER_MESSAGE_GRID = tuple(float(x) for x in range(0, 81))
"""Candidate per-message constants (0 to 80 tokens) the fit tries."""


MIN_DELTAS_SCALE = 2
"""Fewest consecutive-call differences a scale is fitted on (else the family default's)."""
MIN_DELTAS_PER_MESSAGE = 8
"""Fewest differences the per-message constant is fitted on too: with a handful, scale and
constant trade off freely (three differences fitted a scale of 0.58 and 77 tokens per message
on a 4-call Claude trace), so below this the default constant is kept."""


def _fit_scale(deltas: Sequence[_Delta], default: Fit) -> tuple[float, float] | None:
    """(scale, per_message) minimising Σ |Δbilled − scale·(Δbase + per_message·Δmessages)|.

    For each candidate per-message constant the best scale is a weighted median of the ratios;
    the pair with the least total absolute deviation wins. None with fewer than
    `MIN_DELTAS_SCALE` usable differences (the caller keeps the default)."""
    usable = [d for d in deltas if d.base > 0 and d.billed > 0]
    if len(usable) < MIN_DELTAS_SCALE:
        return None
    grid = PER_MESSAGE_GRID if len(usable) >= MIN_DELTAS_PER_MESSAGE else (default.per_message,)
    best: tuple[float, float, float] | None = None
    for per_message in grid:
        x = [d.base + per_message * d.messages for d in usable]
        scale = _weighted_median([d.billed / xi for d, xi in zip(usable, x, strict=True)], x)
        loss = sum(abs(d.billed - scale * xi) for d, xi in zip(usable, x, strict=True))
        if best is None or loss < best[0] - 1e-9:
            best = (loss, scale, per_message)
    assert best is not None
    return best[1], best[2]


def _predict(fit: Fit, call: _Call) -> float:
    return fit.offset + fit.scale * (call.base + fit.per_message * call.messages)


def _error_median(fit: Fit, calls: Sequence[_Call]) -> float | None:
    if not calls:
        return None
    return statistics.median(abs(_predict(fit, c) - c.billed) / c.billed * 100 for c in calls)


def _fit(
    family: str | None,
    calls: Sequence[_Call],
    deltas: Sequence[_Delta],
    default: Fit,
    encoding: str | None,
) -> Fit:
    """Scale and per-message constant from the deltas (exact, `encoding` given: 1 and 0), offset
    from the calls."""
    exact = encoding is not None
    if exact:
        scale, per_message = 1.0, 0.0
    else:
        fitted = _fit_scale(deltas, default)
        scale, per_message = fitted if fitted else (default.scale, default.per_message)
    offset = statistics.median(
        c.billed - scale * (c.base + per_message * c.messages) for c in calls
    )
    if exact:  # the fixed part of the request ctxlab already counts is in `base`
        offset = max(0.0, offset)
    return Fit(family, scale, per_message, offset, encoding or BASE_ENCODING, len(deltas))


def _held_out(
    family: str | None,
    calls: Sequence[_Call],
    deltas: Sequence[tuple[int, _Delta]],
    default: Fit,
    encoding: str | None,
) -> float | None:
    """Median error on the second half of the calls of a fit made on the first half."""
    half = len(calls) // 2
    if half < 2:
        return None
    first = [d for i, d in deltas if i < half]
    fit = _fit(family, calls[:half], first, default, encoding)
    return _error_median(fit, calls[half:])


def default_fit(model: str | None, provider: str | None = None) -> Fit:
    """The `estimated` fit for a model: its provider's default, named for its family."""
    base = DEFAULT_FITS[_provider_key(model, provider)]
    return Fit(model_family(model), base.scale, base.per_message, 0.0, BASE_ENCODING)


def _policy_error(trace: Trace, usage: Sequence[tuple[Turn, int]]) -> float | None:
    """Median error of the policy's own approximate counter (as replays count for the model)."""
    if not usage:
        return None
    errors = []
    for turn, billed in usage:
        cpt = chars_per_token(turn.model or trace.model, trace.provider)
        ours = tk.count_tokens(list(turn.inputs), tools=trace.tools, chars_per_token=cpt)
        errors.append(abs(ours - billed) / billed * 100)
    return statistics.median(errors)


def calibrate_trace(
    trace: Trace, store: Store | None = None, model: str | None = None
) -> TraceCalibration:
    """Fit a biller to one trace's recorded usage and measure both counters against it.

    `model` picks which model's calls to fit when the trace switched models (default: the one
    with the most calls with usage, `models(trace)[0]`). Without usage the trace gets the
    biller `biller_for` would give it (a stored calibration of its family, else the defaults)
    and no errors.
    """
    model = models(trace)[0] if model is None else model
    family = model_family(model)
    usage = _usage_turns(trace, model)
    if not usage:
        biller = _without_usage(trace, model, store)
        return TraceCalibration(trace.trace_id, model, biller.method, 0, None, None, biller.fit)
    fit, calls, indexed = _usage_fit(trace, model, usage)
    encoding = ot.encoding_for(model)
    held = _held_out(family, calls, indexed, default_fit(model, trace.provider), encoding)
    fit = replace(fit, held_out_error_median=held)
    return TraceCalibration(
        trace_id=trace.trace_id,
        model=model,
        method=_usage_method(model),
        calls_with_usage=len(usage),
        policy_counter_error_median=_policy_error(trace, usage),
        billed_error_median=_error_median(fit, calls),
        fit=fit,
    )


def calibrate_models(trace: Trace, store: Store | None = None) -> list[TraceCalibration]:
    """`calibrate_trace` once per model the trace's calls went to (`models`), main model first."""
    return [calibrate_trace(trace, store, model) for model in models(trace)]


def calibrate(
    traces: str | Path | Trace | Iterable[Trace], store: Store | None = None
) -> list[TraceCalibration]:
    """Billed tokens against recorded usage for every trace (a path, a `Trace` or traces;
    subagents included) and every model its calls went to: the Python twin of `ctxlab
    calibrate`.

    With `store`, the fits of traces that recorded usage are saved in it first, so traces of
    the same model family without usage borrow them (from this call's traces or earlier ones).
    """
    from ctxlab._ingest.load import traces_of

    walked = traces_of(traces)
    fitted = [c for t in walked for c in calibrate_models(t) if c.calls_with_usage]
    if store is not None and fitted:
        store.save_calibration(fitted)
    return [
        c
        for t in walked
        for c in ([c for c in fitted if c.trace_id == t.trace_id] or calibrate_models(t, store))
    ]


def biller_for(trace: Trace, store: Store | None = None) -> Biller:
    """The best biller for a trace: exact for OpenAI models, else fitted to the trace's own
    usage (of its main model, `models`), else a calibration of the model family borrowed
    from `store`, else estimated."""
    model = models(trace)[0]
    usage = _usage_turns(trace, model)
    if not usage:
        return _without_usage(trace, model, store)
    # The fit alone: a replay asks for its biller each time, and the errors `calibrate_trace`
    # measures on top (policy counter, held-out refit) would triple the cost.
    return Biller(_usage_method(model), model, _usage_fit(trace, model, usage)[0])


def _usage_method(model: str | None) -> str:
    """How a trace with usage is billed: exact where the model's tokenizer is public."""
    return "exact" if ot.encoding_for(model) else "calibrated"


def _usage_fit(
    trace: Trace, model: str | None, usage: Sequence[tuple[Turn, int]]
) -> tuple[Fit, list[_Call], list[tuple[int, _Delta]]]:
    """The fit of `model`'s calls with usage (for an OpenAI model: scale 1, the offset only),
    with the observations it was made from (for `calibrate_trace`'s held-out error)."""
    encoding = ot.encoding_for(model)
    calls, indexed = _observations(trace, usage, encoding or BASE_ENCODING)
    default = default_fit(model, trace.provider)
    fit = _fit(model_family(model), calls, [d for _, d in indexed], default, encoding)
    return fit, calls, indexed


def _without_usage(trace: Trace, model: str | None, store: Store | None) -> Biller:
    """Exact for OpenAI models; else a stored calibration of the family (its scale and
    per-message constant: the offset belongs to the trace it was fitted on, whose harness may
    have sent a different system prompt); else the estimated defaults."""
    family = model_family(model)
    encoding = ot.encoding_for(model)
    if encoding is not None:
        return Biller("exact", model, Fit(family, encoding=encoding))
    if store is not None and family is not None:
        stored = store.calibration(family)
        if stored is not None and stored.method == "calibrated":
            return Biller("calibrated", model, replace(stored.fit, family=family, offset=0.0))
    return Biller("estimated", model, default_fit(model, trace.provider))


COUNTED_AS = ("usage", "first_call", "file")
"""How a harness preset counts the parts of the request its file lacks (`counted_as`), best
first: `usage` fits the recording's own usage, `first_call` adds what the first call's recorded
input exceeds the file by, `file` counts only what the file holds (the estimate turned off)."""

SCALE_RANGE = (0.5, 2.5)
"""Scales of the policy's counter against recorded usage a `usage` fit may take: beyond them
the usage differences are not measuring message growth (a model switch, a cache quirk), and
the estimate falls back to `first_call`."""


@dataclass(frozen=True, slots=True)
class CountedAs:
    """How a harness preset's decisions counted the request: what the harness itself counts
    (`harness ≈ added_tokens + scale · policy count`) estimated from the recording.

    A harness compacts on the tokens it sends: system prompt, tool schemas, messages, as the
    provider counts them. A Claude Code file holds neither its system prompt nor its tool
    schemas and a Codex rollout no tool schemas, so the policy's count of the file alone runs
    short by a near-constant part (`added_tokens`), and its characters-per-token counter by a
    factor (`scale`). `method` is one of `COUNTED_AS`; `calls` the recorded calls the estimate
    came from.
    """

    method: str
    added_tokens: int = 0
    scale: float = 1.0
    calls: int = 0
    offsets: tuple[tuple[int, int] | None, ...] | None = None
    """Per call, for `previous_call` (a harness that adds to the previous call's recorded
    usage, as Inspect does): `(added tokens, the recorded call they were measured on)`, None
    where no earlier call recorded usage (the harness counts the messages then); None for the
    other methods, whose `added_tokens` holds at every call."""

    def harness(self, tokens: int) -> int:
        """The policy's count of a request as the harness would have counted it."""
        return round(self.added_tokens + self.scale * tokens)

    def harness_at(self, tokens: int, call: int) -> int:
        """`harness(tokens)` at call `call`: with per-call `offsets`, that call's own."""
        if self.offsets is None:
            return self.harness(tokens)
        added = self.offsets[call] if 0 <= call < len(self.offsets) else None
        return tokens + (added[0] if added is not None else 0)

    def policy(self, tokens: int) -> int:
        """The policy's count at which the harness's count reaches `tokens` (a threshold)."""
        return max(1, math.ceil((tokens - self.added_tokens) / self.scale))

    def as_dict(self) -> dict[str, Any]:
        """The JSON `counted_as` object (`ctxlab check-replay --json`)."""
        return {
            "method": self.method,
            "added_tokens": self.added_tokens,
            "scale": round(self.scale, 4),
            "calls": self.calls,
        }


FILE_ONLY = CountedAs("file")
"""No estimate: the policy counts what the file holds."""


def _as_sent(
    trace: Trace, turn: Turn, prefix: list[int], tokens: Callable[[BaseMessage], int]
) -> int:
    """The count of what `turn` sent: the history's running count when its inputs are the
    history before it (the same objects, or none kept), else their sum."""
    n = min(turn.position, len(trace.messages))
    inputs = turn.inputs
    if not inputs or (len(inputs) == n and all(map(operator.is_, inputs, trace.messages))):
        return prefix[n]
    return sum(map(tokens, inputs))


PREVIOUS_CALL = ("previous_call", "file")
"""How a harness that counts from the previous call's usage (Inspect) may be counted:
`previous_call` as it does, `file` the file alone."""


def previous_call(trace: Trace, chars_per_token: float, method: str = "previous_call") -> CountedAs:
    """What a harness that decides on the previous call's recorded usage counted beyond the
    policy's count of the file, call by call.

    Inspect (>= 0.3.178, `compaction()` in src/inspect_ai/model/_compaction/_compaction.py)
    counts a request as the last call's reported input (`input_context_tokens`, else input +
    cache reads + cache writes) plus its own count of the messages added since; before any
    call reported usage, and after a compaction until the next one did, it counts tool
    schemas and messages. So at call k the harness counts the policy's count of its request
    plus `recorded(j) - count(request j)`, j the last earlier call with usage (its as-sent
    `Turn.inputs`; the history before it when the file keeps none). The difference is not
    clamped: a counter that over-counts the file gives a negative one. `added_tokens` is the
    median over the calls that have one (what `harness` adds where no call is named).
    """
    if method not in PREVIOUS_CALL:
        raise ValueError(f"counted_as must be one of {', '.join(PREVIOUS_CALL)}, got {method!r}")
    if method == "file":
        return FILE_ONLY
    tools = tk.tool_schema_tokens(trace.tools, chars_per_token) if trace.tools else 0
    counted: dict[int, int] = {}  # per message object: the same objects recur call after call

    def tokens(message: BaseMessage) -> int:
        key = id(message)
        if key not in counted:
            counted[key] = tk.message_tokens(message, chars_per_token)
        return counted[key]

    prefix = [0]  # the history's running count: an uncompacted call's request is a prefix
    for message in trace.messages:
        prefix.append(prefix[-1] + tokens(message))
    offsets: list[tuple[int, int] | None] = []
    current: tuple[int, int] | None = None
    for turn in trace.turns:
        offsets.append(current)
        if turn.input_tokens is not None:
            sent = _as_sent(trace, turn, prefix, tokens)
            current = (turn.input_tokens - tools - sent, turn.index)
    known = [o[0] for o in offsets if o is not None]
    if not known:
        return FILE_ONLY
    return CountedAs(
        "previous_call", round(statistics.median(known)), 1.0, len(known), tuple(offsets)
    )


def counted_as(trace: Trace, chars_per_token: float, method: str = "usage") -> CountedAs:
    """Estimate what `trace`'s harness counted beyond the policy's count of the file.

    The policy's count of call t is its tool schemas plus the history before t (`Turn.position`,
    `chars_per_token` characters a token). Over the calls before the first recorded compaction,
    where the history is what the harness sent, the recorded input is compared with it:

    * `usage`: consecutive calls differ by the messages added between them, so the weighted
      median of Δrecorded / Δcounted is the scale, and the median of recorded − scale · counted
      what the file lacks (the calibration's offset, in the policy's own units). Fitted on the
      later half of those calls, the sizes a threshold decides at: tokens per character drift
      as a session moves from prose to code (on the shared Claude Code session a fit over all
      calls undercounted its last calls by 8%, one over the later half by 3%). Needs two
      differences and a scale inside `SCALE_RANGE`, else `first_call`;
    * `first_call`: scale 1, added = the first call's recorded input minus its count;
    * `file` (or no recorded usage): nothing added.
    """
    if method not in COUNTED_AS:
        raise ValueError(f"counted_as must be one of {', '.join(COUNTED_AS)}, got {method!r}")
    if method == "file":
        return FILE_ONLY
    stop = min((c.turn for c in trace.compactions), default=len(trace.turns))
    stop = min([stop, *(t.index for t in trace.turns if t.compacted)])
    tools = tk.tool_schema_tokens(trace.tools, chars_per_token) if trace.tools else 0
    prefix = [0]
    for message in trace.messages:
        prefix.append(prefix[-1] + tk.message_tokens(message, chars_per_token))
    points = [
        (billed, tools + prefix[min(turn.position, len(trace.messages))])
        for turn in trace.turns[:stop]
        if (billed := billed_input(turn))
    ]
    if not points:
        return FILE_ONLY
    if method == "usage":
        late = points[len(points) // 2 :] if len(points) >= 2 * MIN_DELTAS_SCALE + 2 else points
        deltas = [
            (b2 - b1, c2 - c1)
            for (b1, c1), (b2, c2) in zip(late, late[1:], strict=False)
            if c2 > c1 and b2 > b1
        ]
        if len(deltas) >= MIN_DELTAS_SCALE:
            scale = _weighted_median([db / dc for db, dc in deltas], [dc for _, dc in deltas])
            if SCALE_RANGE[0] <= scale <= SCALE_RANGE[1]:
                added = statistics.median(b - scale * c for b, c in late)
                return CountedAs("usage", max(0, round(added)), scale, len(late))
    billed, counted = points[0]
    return CountedAs("first_call", max(0, billed - counted), 1.0, 1)


__all__ = [
    "COUNTED_AS",
    "DEFAULT_FITS",
    "FILE_ONLY",
    "METHODS",
    "PREVIOUS_CALL",
    "Biller",
    "CountedAs",
    "Fit",
    "TraceCalibration",
    "base_tokens",
    "billed_input",
    "biller_for",
    "calibrate",
    "calibrate_trace",
    "calibrate_models",
    "counted_as",
    "default_fit",
    "model_family",
    "models",
    "previous_call",
]
