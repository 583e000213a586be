"""`ThresholdExplorer(trace)`: move a policy's thresholds and watch the replay change.

A policy dropdown (every name `ctxlab.policies.names()` gives: the built-in presets and the
policies registered in Python or by installed packages, plus an `a+b` pipeline when one is
asked for) and one slider per threshold the chosen policy has: window, trigger, keep,
tool-result limit and argument max length for Deep Agents; every numeric parameter (and every
`(kind, number)` size) for others.
Sliders fire on release; a short debounce coalesces bursts; each change re-replays the trace
(the engine's warm replay of a 1,000-turn trace takes tens of milliseconds) and updates the
FigureWidget in place (only the changed data and the title are sent; zoom and log scale above
the chart). The readout gives peak and cumulative tokens, events, and cost with and
without cache when the model has a price; `last_latency_ms` is what the bench measures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ipywidgets as W
import plotly.graph_objects as go

from ctxlab import plots
from ctxlab._replay.applies import check_policy, with_settings
from ctxlab._replay.policies.catalog import Pipeline, defaults, get
from ctxlab._replay.replay import Counted, Replay, counted, replay, replay_with_run
from ctxlab._trace import Trace
from ctxlab._view.widgets._common import (
    Debouncer,
    ExportBar,
    YAxis,
    after_redraw,
    after_rest,
    cost,
    figure_widget,
    now_ms,
    priced,
    readout_html,
    release_after_redraw,
    token_metrics,
    update_in_place,
)
from ctxlab.plots import esc
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import CachedExtractive, Summarizer

_LINE_LABELS = ("window", "trigger", "budget")


def catalogue(extra: str | None = None) -> dict[str, Any]:
    """Policies to offer, by name, at their defaults: Deep Agents first, then every other
    registered name, then `extra` (a name such as an `a+b` pipeline; an unknown one raises
    `ValueError` listing the known names). A registered factory that cannot build its
    defaults is left out with a warning."""
    found: dict[str, Any] = {"deepagents": DeepAgents()}
    for name, policy in defaults("not offered").items():
        found.setdefault(name, policy)
    if extra is not None and extra not in found:
        found[extra] = get(extra)
    return found


@dataclass
class Control:
    """One slider and how its value enters the policy's parameters."""

    name: str
    widget: W.ValueWidget
    apply: Callable[[dict[str, Any], Any], None]


def _slider(
    cls: type, description: str, value: float, lo: float, hi: float, step: float, **kw: Any
) -> W.ValueWidget:
    if cls is W.IntSlider:  # grouped as the legend and readout print them: 200,000
        kw.setdefault("readout_format", ",d")
    widget = cls(
        value=value,
        min=lo,
        max=hi,
        step=step,
        description=description,
        tooltip=description,  # the full label, where a narrow column cuts it
        continuous_update=False,
        style={"description_width": "190px"},
        layout=W.Layout(width="600px"),
        **kw,
    )
    widget.add_class(f"ctx-{description.split()[0].lower()}")
    return widget


def deepagents_controls(policy: DeepAgents, trace: Trace) -> list[Control]:
    """Sliders for Deep Agents: window, trigger, keep, tool-result limit, argument length.

    Starting values are what the policy resolves to on this trace, so the first replay is the
    policy's own; a trace without a model profile starts at a 200k window.
    """
    try:
        s = policy.resolve(trace)
        window = s.window or 200_000
        trigger = next(
            (c["fraction"] for c in s.clauses if "fraction" in c),
            next((c["tokens"] / window for c in s.clauses if "tokens" in c), 0.85),
        )
        keep = s.keep[1] if s.keep[0] == "fraction" else 0.10
        max_len = s.max_arg_length
    except (TypeError, ValueError):
        window, trigger, keep, max_len = 200_000, 0.85, 0.10, 2000
    tool_limit = policy.tool_token_limit_before_evict or 20_000

    def set_window(p: dict[str, Any], v: Any) -> None:
        p["window"] = int(v)

    def set_trigger(p: dict[str, Any], v: Any) -> None:
        p["trigger"] = ("fraction", round(float(v), 4))

    def set_keep(p: dict[str, Any], v: Any) -> None:
        p["keep"] = ("fraction", round(float(v), 4))

    def set_tool(p: dict[str, Any], v: Any) -> None:
        p["tool_token_limit_before_evict"] = int(v)

    def set_args(p: dict[str, Any], v: Any) -> None:
        p["truncate_args_settings"] = {
            "trigger": p.get("trigger", ("fraction", 0.85)),
            "keep": p.get("keep", ("fraction", 0.10)),
            "max_length": int(v),
        }

    return [
        Control(
            "window",
            _slider(
                W.IntSlider,
                "window (tokens)",
                window,
                min(4_000, window),
                max(400_000, window),
                1_000,
            ),
            set_window,
        ),
        Control(
            "trigger",
            _slider(W.FloatSlider, "trigger (fraction)", min(1.0, trigger), 0.05, 1.0, 0.01),
            set_trigger,
        ),
        Control(
            "keep",
            _slider(W.FloatSlider, "keep (fraction)", min(0.9, keep), 0.01, 0.9, 0.01),
            set_keep,
        ),
        Control(
            "tool_limit",
            _slider(
                W.IntSlider,
                "tool-result limit (tokens)",
                tool_limit,
                min(500, tool_limit),
                max(50_000, tool_limit),
                500,
            ),
            set_tool,
        ),
        Control(
            "max_arg_length",
            _slider(
                W.IntSlider,
                "arg max length (chars)",
                max_len,
                min(50, max_len),
                max(20_000, max_len),
                50,
            ),
            set_args,
        ),
    ]


Fits = Callable[[Any, str, Any], bool]
"""`fits(policy, name, value)`: whether `policy` with parameter `name` set to `value` still
applies to the explorer's trace (the policy's own check, `ctxlab._replay.applies`)."""


def _bounds(
    policy: Any, name: str, value: Any, first: Any, step: Any, hi: Any, fits: Fits | None
) -> tuple[Any, Any]:
    """A slider's range with no position the policy refuses: from the lowest multiple of
    `step` from `first` up to `value` that the policy accepts (found by bisection, taking
    acceptance to hold from some value up), to `hi` if accepted, else to the current value."""
    if fits is None:
        return first, hi

    def at(k: int) -> Any:
        return type(value)(round(first + k * step, 10))

    top = int((value - first) // step)
    if top < 0 or not fits(policy, name, at(top)):
        low = value
    elif fits(policy, name, at(0)):
        low = at(0)
    else:
        refused, accepted = 0, top
        while accepted - refused > 1:
            mid = (refused + accepted) // 2
            refused, accepted = (refused, mid) if fits(policy, name, at(mid)) else (mid, accepted)
        low = at(accepted)
    return low, hi if fits(policy, name, hi) else value


def generic_controls(policy: Any, fits: Fits | None = None) -> list[Control]:
    """Sliders for any other policy: every int/float parameter, and `(kind, number)` pairs.

    With `fits`, each slider starts at the lowest value the policy accepts (0 or more) and ends
    at the top of its range only if the policy accepts that too."""
    controls: list[Control] = []
    if not dataclasses.is_dataclass(policy):
        return controls
    for f in dataclasses.fields(policy):
        value = getattr(policy, f.name)
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            cls = W.IntSlider if isinstance(value, int) else W.FloatSlider
            fraction = cls is W.FloatSlider and 0 < value <= 1  # fractions of a window
            hi = 1.0 if fraction else (max(value * 4, 1) if value else 1)
            step = 1 if cls is W.IntSlider else (0.01 if fraction else max(hi / 200, 0.001))
            lo, hi = _bounds(policy, f.name, value, 0, step, hi, fits)
            widget = _slider(cls, f.name.replace("_", " "), value, lo, hi, step)

            def put(p: dict[str, Any], v: Any, name: str = f.name) -> None:
                p[name] = v

            controls.append(Control(f.name, widget, put))
        elif (
            isinstance(value, tuple)
            and len(value) == 2
            and isinstance(value[0], str)
            and isinstance(value[1], int | float)
            and not isinstance(value[1], bool)
        ):
            kind, number = value
            frac = kind == "fraction"
            cls = W.FloatSlider if frac or isinstance(number, float) else W.IntSlider
            step = 0.01 if frac else max(1, int(max(number * 4, 1) // 200))
            pair = _PairFits(kind, fits) if fits is not None else None
            lo, hi = _bounds(
                policy,
                f.name,
                number,
                0.01 if frac else 1,
                step,
                1.0 if frac else max(number * 4, 1),
                pair,
            )
            widget = _slider(cls, f"{f.name.replace('_', ' ')} ({kind})", number, lo, hi, step)

            def put_pair(p: dict[str, Any], v: Any, name: str = f.name, k: str = kind) -> None:
                p[name] = (k, v)

            controls.append(Control(f.name, widget, put_pair))
    return controls


@dataclass(frozen=True)
class _PairFits:
    """`fits` for the number of a `(kind, number)` parameter: asks with the pair."""

    kind: str
    fits: Fits

    def __call__(self, policy: Any, name: str, number: Any) -> bool:
        return self.fits(policy, name, (self.kind, number))


def pipeline_controls(policy: Pipeline, fits: Fits | None = None) -> list[Control]:
    """Every member's sliders (`generic_controls`), named `member.parameter`."""
    controls: list[Control] = []
    for i, member in enumerate(policy.policies):
        for c in generic_controls(member, fits):
            c.widget.description = f"{member.name}: {c.widget.description}"

            def put(p: dict[str, Any], v: Any, i: int = i, inner: Any = c.apply) -> None:
                members = p.setdefault("policies", list(policy.policies))
                own: dict[str, Any] = {}
                inner(own, v)
                members[i] = dataclasses.replace(members[i], **own)

            controls.append(Control(f"{member.name}.{c.name}", c.widget, put))
    return controls


class ThresholdExplorer(W.VBox):
    """Tune a policy's thresholds on `trace` with live re-replays.

    `policy` is any name `ctxlab.policies.get` takes (an `a+b` pipeline joins the dropdown,
    with every member's sliders).
    `debounce` (seconds) coalesces changes inside a running kernel; outside one (tests, the
    benchmark) updates are synchronous. `replay`/`policy` always hold the current state.

    A move of a policy with a count-only form (`counts_only`: the masking, clearing, offload
    and recency presets and Inspect's edit by formula; JetBrains' summary, with its masking in
    the hybrid, by formula with only its summaries made; Deep Agents and the presets that
    compact at a threshold by running their step only where it may act) draws the chart from
    its counts and events (`ctxlab._replay.replay.counted`, equal to the replay's);
    the full replay follows once the chart is sent, for the cost readout, or when `replay` is
    read first.

    The cost readout needs the full replay and its bill, which can take longer than the
    chart: it is worked out only when the trace's model has a known price, and inside a
    kernel once the sliders have rested `price_after` seconds (a dragged slider's moves cost
    their charts only); outside one at once.
    """

    def __init__(
        self,
        trace: Trace,
        *,
        policy: str = "deepagents",
        summarizer: Summarizer | None = None,
        debounce: float = 0.03,
        price_after: float = 0.3,
    ) -> None:
        self.trace = trace
        self.summarizer = summarizer or CachedExtractive()
        self.policies = catalogue(policy)
        self.choice = W.Dropdown(options=list(self.policies), value=policy, description="policy")
        self.choice.add_class("ctx-policy")
        self.controls: list[Control] = []
        self.sliders = W.VBox()
        self.readout = W.HTML()
        self.readout.add_class("ctx-readout-box")
        self.last_latency_ms: float | None = None
        self.replays = 0
        self.policy: Any = None
        self._replay: Replay | None = None
        self._unreplayed: Any = None  # the policy of a move drawn from its counts alone
        self._debounced = Debouncer(self.apply, debounce)
        self._priced = priced(trace)
        self._price_after = price_after
        self._pricing: Any = None  # the pending cost readout (`after_rest`)
        self._build_controls()
        try:
            self.policy = self._policy()
            self._replay = replay(trace, self.policy, self.summarizer)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"ThresholdExplorer: policy {policy!r} cannot replay trace "
                f"{trace.trace_id!r}: {exc}"
            ) from None
        self.yaxis = YAxis(self._relayout)
        shown = self._replay
        self._drawn: Replay | Counted = shown
        first = token_metrics(shown)
        # every event kind drawn since the policy was picked keeps its marker trace (empty
        # when a move has none), so moves update the chart in place instead of rebuilding it
        self._event_kinds = sorted(first["events_by_kind"])
        self._traces = plots.context_trace_dicts(shown, lines=self._lines())
        self.figure = figure_widget(self._figure(first), "ctx-explorer-chart")
        self.exporter = ExportBar(lambda: self.figure, "explorer")
        # the bill and its cost follow the first draw, as after every move: billing a
        # 10,000-turn replay (every message counted by the provider's tokenizer) took 1.5 of
        # the explorer's 3.9 s
        self.readout.value = readout_html(first, None, self.replays)
        if self._priced:
            after_redraw(lambda: self._price(shown, first))
        self.choice.observe(self._policy_changed, names="value")
        super().__init__(
            [self.choice, self.sliders, self.readout, self.yaxis, self.figure, self.exporter]
        )
        self.add_class("ctx-explorer")

    # -- controls -----------------------------------------------------------------------

    def _build_controls(self) -> None:
        base = self.policies[self.choice.value]
        if isinstance(base, DeepAgents):
            self.controls = deepagents_controls(base, self.trace)
        elif isinstance(base, Pipeline):
            self.controls = pipeline_controls(base, self._fits)
        else:
            self.controls = generic_controls(base, self._fits)
        for c in self.controls:
            c.widget.observe(self._debounced, names="value")
        self.sliders.children = [c.widget for c in self.controls]

    def _policy_changed(self, _: Any) -> None:
        for c in self.controls:
            c.widget.unobserve(self._debounced, names="value")
        self._event_kinds = []  # another policy: its own kinds
        self._build_controls()
        self.apply()

    def _fits(self, policy: Any, name: str, value: Any) -> bool:
        """Whether `policy` accepts `value` for `name` on this trace (slider ranges)."""
        try:
            check_policy(dataclasses.replace(policy, **{name: value}), self.trace, self.summarizer)
        except (TypeError, ValueError):
            return False
        return True

    def control(self, name: str) -> W.ValueWidget:
        """The slider named `name` (`window`, `trigger`, `keep`, `tool_limit`, ...)."""
        for c in self.controls:
            if c.name == name:
                return c.widget
        raise KeyError(f"no control {name!r}; have {[c.name for c in self.controls]}")

    def _policy(self) -> Any:
        base = self.policies[self.choice.value]
        params: dict[str, Any] = {}
        for c in self.controls:
            c.apply(params, c.widget.value)
        if "policies" in params:
            params["policies"] = tuple(params["policies"])
        if "truncate_args_settings" in params and isinstance(base, DeepAgents):
            params["truncate_args_settings"] = {
                **params["truncate_args_settings"],
                "trigger": params.get("trigger", ("fraction", 0.85)),
                "keep": params.get("keep", ("fraction", 0.10)),
            }
        settable = dataclasses.is_dataclass(base)  # else it has no controls (generic_controls)
        return with_settings(base, **params) if settable else base

    # -- redraw ---------------------------------------------------------------------------

    def _lines(self) -> dict[str, int]:
        found = plots.thresholds(self.policy, self.trace)
        return {k: found[k] for k in _LINE_LABELS if k in found}

    def _title(self, m: dict[str, Any]) -> str:
        """The chart's title from the drawn replay's `token_metrics`."""
        return (
            f"{esc(self.policy.name)} on {esc(plots.trace_name(self.trace, limit=48))}: "
            f"peak {m['peak']:,}, cumulative {m['cumulative']:,}, {m['events']} events"
        )

    def _figure(self, m: dict[str, Any]) -> go.Figure:
        assert self.replay is not None
        fig = plots.context_tokens(self.replay, lines=self._lines(), title=self._title(m))
        fig.plotly_relayout(self.yaxis.relayout(self._traces))
        return fig

    def _relayout(self) -> None:
        """Apply the y-axis controls to the chart as it is."""
        self.figure.plotly_relayout(self.yaxis.relayout(self._traces))

    def apply(self) -> None:
        """Re-replay with the sliders' values and redraw in place (sliders call this)."""
        start = now_ms()
        try:
            policy = self._policy()
            # the chart needs counts and events only: a policy with a count-only form is
            # drawn from those, and replayed in full after the chart is sent (`replay`)
            drawn: Replay | Counted | None = counted(self.trace, policy, self.summarizer)
            run = None
            if drawn is None:
                drawn, run = replay_with_run(self.trace, policy, self.summarizer)
        except (TypeError, ValueError) as exc:
            self.readout.value = (
                f"<span class='ctx-refused' style='color:#D55E00'>{esc(self.choice.value)} "
                f"refuses these settings: {esc(exc, 300)}</span>"
            )
            return
        # the replay and counts this move replaces are freed once the chart is sent
        release_after_redraw(self._replay, self._drawn, run)
        self.policy, self._drawn = policy, drawn
        if isinstance(drawn, Replay):
            self._replay, self._unreplayed = drawn, None
        else:
            self._replay, self._unreplayed = None, policy
        self.replays += 1
        m = token_metrics(drawn)
        self._event_kinds = sorted({*self._event_kinds, *m["events_by_kind"]})
        self._traces = plots.context_trace_dicts(
            drawn, lines=self._lines(), event_kinds=self._event_kinds
        )
        update_in_place(
            self.figure, self._traces, self._title(m), self.yaxis.relayout(self._traces)
        )
        self.last_latency_ms = now_ms() - start
        self.readout.value = readout_html(m, self.last_latency_ms, self.replays)
        if self._priced:
            self._pricing = after_rest(
                lambda: self._price(drawn, m), self._price_after, self._pricing
            )

    @property
    def replay(self) -> Replay | None:
        """The replay the chart shows. A move drawn from the policy's count-only form
        (`ctxlab._replay.replay.counted`) is replayed in full once the chart is sent, for its cost
        readout, or when this is read first; the same replay either way."""
        if self._unreplayed is not None:
            policy, self._unreplayed = self._unreplayed, None
            self._replay = replay(self.trace, policy, self.summarizer)
        return self._replay

    def _price(self, drawn: Replay | Counted, m: dict[str, Any]) -> None:
        """Add the cost (priced on the bill, `cost`) to the readout of `drawn`'s replay, after
        its chart was sent; skipped when a later move replaced it meanwhile."""
        if self._drawn is not drawn:
            return
        result = self.replay
        assert result is not None
        priced = {**m, **cost(result, self.trace)}
        self.readout.value = readout_html(priced, self.last_latency_ms, self.replays)

    def export(self, path: Any) -> Any:
        """Write the chart (PNG, SVG, PDF or HTML by suffix)."""
        return self.exporter.export(path)
