"""What every widget shares: the export bar, the debouncer, in-place figure updates, the
per-message context state of a turn (the strip), the metrics readout and HTML escaping.

Widgets only read `Replay`s and `Trace`s (DESIGN: one direction); this module turns a replay's
events back into "what happened to message p by turn t" so the strip needs no engine support.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ipywidgets as W
import plotly.graph_objects as go
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab import plots
from ctxlab import tokens as tk
from ctxlab.plots import STATUS_COLORS, esc
from ctxlab.replay import Replay
from ctxlab.trace import Trace

FIGURES_ENV = "CTXLAB_FIGURES"
"""Folder export buttons write to (default `data/figures`); notebooks and tests set it."""


def figures_dir() -> Path:
    """Where export buttons write, from `$CTXLAB_FIGURES` (so tests never litter the repo)."""
    return Path(os.environ.get(FIGURES_ENV) or "data/figures")


# --------------------------------------------------------------------------- export bar


class ExportBar(W.HBox):
    """File name, format and an Export button writing the owner's current figure."""

    def __init__(self, figure: Callable[[], Any], stem: str) -> None:
        self._figure = figure
        self.name = W.Text(value=stem, description="file", layout=W.Layout(width="260px"))
        self.format = W.Dropdown(
            options=list(plots.FORMATS[:3]) + ["html"], value="pdf", layout=W.Layout(width="80px")
        )
        self.button = W.Button(description="Export", icon="download", tooltip="write the figure")
        self.button.add_class("ctx-export")
        self.status = W.HTML()
        self.status.add_class("ctx-export-status")
        self.button.on_click(lambda _: self.export())
        super().__init__([self.name, self.format, self.button, self.status])

    def export(self, path: str | Path | None = None) -> Path:
        """Write the figure (to `path`, else `$CTXLAB_FIGURES/<file>.<format>`)."""
        target = Path(path) if path else figures_dir() / f"{self.name.value}.{self.format.value}"
        try:
            written = plots.export(self._figure(), target)
        except Exception as exc:  # shown in the widget: a button has nowhere to raise to
            self.status.value = f"<span style='color:#D55E00'>export failed: {esc(exc, 300)}</span>"
            raise
        self.status.value = f"wrote <code>{esc(written)}</code>"
        return written


# --------------------------------------------------------------------------- debounce


class Debouncer:
    """Run `fn` once changes stop for `wait` seconds, on the kernel's event loop.

    Sliders already fire on release (`continuous_update=False`); the debounce coalesces bursts
    (keyboard arrows, several sliders moved quickly) into one re-replay. With no running loop
    (plain Python, tests, benchmarks) or `wait=0`, `fn` runs at once, synchronously.
    """

    def __init__(self, fn: Callable[[], None], wait: float = 0.05) -> None:
        self.fn = fn
        self.wait = wait
        self._handle: asyncio.TimerHandle | None = None

    def __call__(self, *_: Any) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        loop = None
        if self.wait > 0:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        if loop is None:
            self.fn()
        else:
            self._handle = loop.call_later(self.wait, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self.fn()

    def flush(self) -> None:
        """Run a pending call now (used before reading state)."""
        if self._handle is not None:
            self._handle.cancel()
            self._fire()


# --------------------------------------------------------------------------- figures


_DATA_PROPS = ("x", "y", "name", "hovertext", "marker")
"""What changes between redraws of one builder; styling stays as first drawn."""


def update_in_place(
    widget: go.FigureWidget, fig: go.Figure | Sequence[Any], title: str | None = None
) -> None:
    """Copy `fig`'s traces and title into `widget` in one message (`batch_update`).

    Builders keep a fixed trace order and count for a given widget, so the browser only
    restyles; if the count differs (a new event kind appeared) the traces are replaced.
    """
    data = list(fig.data) if isinstance(fig, go.Figure) else list(fig)
    with widget.batch_update():
        if len(widget.data) == len(data) and all(
            a.type == b.type for a, b in zip(widget.data, data, strict=True)
        ):
            for old, new in zip(widget.data, data, strict=True):
                for prop in _DATA_PROPS:
                    value = getattr(new, prop, None)
                    if value is not None or getattr(old, prop, None) is not None:
                        setattr(old, prop, value)
        else:
            widget.data = ()
            widget.add_traces(data)
        if isinstance(fig, go.Figure):
            widget.layout.title = fig.layout.title
            widget.layout.shapes = fig.layout.shapes
        if title is not None:
            widget.layout.title.text = title


def figure_widget(fig: go.Figure, css_class: str) -> go.FigureWidget:
    """A FigureWidget built from `fig` in the constructor (edits before display survive nesting
    in boxes, unlike `update_layout` after construction; see the research notes)."""
    widget = go.FigureWidget(data=fig.data, layout=fig.layout)
    widget.add_class(css_class)
    return widget


# --------------------------------------------------------------------------- the strip


@dataclass(frozen=True, slots=True)
class Block:
    """One block of the context strip: a message (or a run of summarised-away messages)."""

    first: int
    last: int
    role: str
    status: str
    tokens: int
    before: str
    after: str


def _role(message: BaseMessage) -> str:
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, ToolMessage):
        return f"tool result ({message.name or 'tool'})"
    if isinstance(message, AIMessage):
        names = ", ".join(c["name"] for c in message.tool_calls)
        return f"assistant → {names}" if names else "assistant"
    if isinstance(message, HumanMessage):
        return "human"
    return type(message).__name__


def message_text(message: BaseMessage) -> str:
    """Readable text of a message: its text, then its tool calls' arguments."""
    text = message.text if isinstance(message.text, str) else str(message.content)
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            text += f"\n[call {call['name']}] {call.get('args')}"
    return text


_STICKY = {
    "offload_tool_result": "offloaded",
    "offload_human_message": "offloaded",
    "tail_clip": "offloaded",
    "summarize": "summarised",
    "clear_tool_uses": "masked",
    "mask_observations": "masked",
    "forget": "dropped",
    "trim": "dropped",
}


class Timeline:
    """Per-message status by turn, derived once from a replay's events.

    * offloads and tail clips replace the message in the state from their turn on;
    * a summary replaces every message before its cutoff from its turn on (unless the same
      turn ended in `overflow_error`: deepagents then persisted nothing);
    * argument truncation is request-only: a message is truncated at turn t only if that
      turn's `truncate_args` event lists it;
    * the catalogue's kinds: `clear_tool_uses` and `mask_observations` mark `masked`, `forget`
      and `trim` mark `dropped` (out of the request, no summary), from their turn on.
    """

    def __init__(self, replay: Replay, trace: Trace | None, summaries: Sequence[str] = ()) -> None:
        self.replay = replay
        self.trace = trace
        self.summaries = list(summaries)
        self.positions = replay.turns["position"].to_list()
        self.summary_tokens = replay.turns["summary_tokens"].to_list()
        overflow = {e.turn for e in replay.event_list if e.kind == "overflow_error"}
        self.sticky: dict[int, list[tuple[int, str, Any]]] = {}
        self.truncated: dict[int, set[int]] = {}
        self.summaries_at: list[tuple[int, Any, int]] = []
        ordinal = -1
        for event in replay.event_list:
            if event.turn is None:
                continue
            if event.kind == "truncate_args":
                self.truncated.setdefault(event.turn, set()).update(event.messages)
                continue
            if event.kind == "summarize":
                ordinal += 1  # summaries are aligned with every summarise call, undone or not
                if event.turn in overflow:
                    continue
                self.summaries_at.append((event.turn, event, ordinal))
            status = _STICKY.get(event.kind) or ("masked" if "mask" in event.kind else None)
            if status is None:
                continue
            for p in event.messages:
                self.sticky.setdefault(p, []).append((event.turn, status, event))
        cpt = tk.CHARS_PER_TOKEN
        if trace is not None and (trace.provider or "").lower() == "anthropic":
            cpt = tk.ANTHROPIC_CHARS_PER_TOKEN
        self.cpt = cpt

    def status(self, p: int, turn: int) -> tuple[str, Any]:
        """Status of full-history message `p` at `turn`, and the event that set it."""
        found: tuple[str, Any] = ("kept", None)
        for t, status, event in self.sticky.get(p, ()):
            if t > turn:
                break
            if status in ("summarised", "dropped") or found[0] not in ("summarised", "dropped"):
                found = (status, event)
        if found[0] == "kept" and p in self.truncated.get(turn, ()):
            return "truncated", None
        return found

    def summary_text(self, turn: int) -> tuple[str, Any] | None:
        """The summary in the request at `turn` (text if known), or None."""
        current = None
        for t, event, i in self.summaries_at:
            if t <= turn:
                current = (i, event)
        if current is None:
            return None
        i, event = current
        text = self.summaries[i] if i < len(self.summaries) else None
        if text is None:
            text = (
                "(summary text not kept by this replay: pass the policy to the Scrubber to "
                f"recover it; the summarised history is in {event.file_path})"
            )
        return text, event

    def blocks(self, turn: int) -> list[Block]:
        """The strip at `turn`: one block per message, summarised runs collapsed, summary last
        of them. Without the trace, one block per kind from the turn's token counts."""
        row = self.replay.turns.row(turn, named=True)
        if self.trace is None:
            return [
                Block(
                    -1,
                    -1,
                    k,
                    "summary" if k == "summary" else "kept",
                    row[f"{k}_tokens"],
                    f"{row[f'{k}_tokens']:,} {k} tokens",
                    "(pass the trace for message text)",
                )
                for k in plots.KIND_COLORS
                if row[f"{k}_tokens"]
            ]
        messages = self.trace.messages
        position = self.positions[turn]
        out: list[Block] = []
        run: list[int] = []
        summary = self.summary_text(turn)

        def close_run() -> None:
            if not run:
                return
            toks = sum(tk.message_tokens(messages[p], self.cpt) for p in run)
            status = self.status(run[0], turn)[0]
            after = (
                "summarised away: the model sees only the summary"
                if status == "summarised"
                else "dropped from the request (no summary)"
            )
            out.append(
                Block(
                    run[0],
                    run[-1],
                    f"{len(run)} messages",
                    status,
                    toks,
                    message_text(messages[run[0]])[:300],
                    after,
                )
            )
            run.clear()

        for p in range(min(position, len(messages))):
            message = messages[p]
            status, event = self.status(p, turn)
            if status in ("summarised", "dropped"):
                if run and self.status(run[-1], turn)[0] != status:
                    close_run()
                run.append(p)
                continue
            if run:
                close_run()
                if summary is not None:
                    out.append(self._summary_block(turn, summary))
                    summary = None
            before = message_text(message)
            toks = tk.message_tokens(message, self.cpt)
            after = before
            if status == "offloaded" and event is not None:
                if event.tokens_after is not None and len(event.messages) == 1:
                    toks = event.tokens_after
                after = (
                    f"[stub] content saved to {event.file_path or '(not written)'}; the request "
                    f"keeps a short preview ({toks:,} tokens instead of "
                    f"{tk.message_tokens(message, self.cpt):,})"
                )
            elif status == "truncated":
                after = (
                    "[request only] tool-call arguments cut to 20 chars + '...(argument truncated)'"
                )
            elif status == "masked":
                after = f"[masked] {event.reason or 'observation replaced by a placeholder'}"
            out.append(Block(p, p, _role(message), status, toks, before, after))
        close_run()
        if summary is not None:
            out.append(self._summary_block(turn, summary))
        return out

    def _summary_block(self, turn: int, summary: tuple[str, Any]) -> Block:
        text, event = summary
        msgs = event.messages
        span = f"messages {msgs[0]}–{msgs[-1]}" if msgs else "earlier history"
        return Block(
            -1,
            -1,
            "summary",
            "summary",
            int(self.summary_tokens[turn]),
            f"summary written at turn {event.turn} of {span}",
            text,
        )


STRIP_WIDTH_PX = 900
STRIP_ROWS = 3
_PREVIEW = 220


def strip_html(blocks: Sequence[Block], turn: int) -> str:
    """The strip as HTML: blocks sized by tokens, coloured by status, a tooltip each (hover
    shows the content before and after). All trace text is escaped."""
    total = sum(b.tokens for b in blocks if b.status not in ("summarised", "dropped")) or 1
    scale = STRIP_WIDTH_PX * STRIP_ROWS / total
    counts: dict[str, int] = {}
    parts = []
    for i, b in enumerate(blocks):
        counts[b.status] = counts.get(b.status, 0) + 1
        # summarised-away history is not in the request: a fixed sliver marks where it was
        width = 16 if b.status in ("summarised", "dropped") else max(3, round(b.tokens * scale))
        where = f"#{b.first}" if b.first == b.last else f"#{b.first}–{b.last}"
        if b.first < 0:
            where = "summary"
        tip = (
            f"{where} {b.role} · {b.status} · {b.tokens:,} tokens\n"
            f"BEFORE: {b.before[:_PREVIEW]}\nAFTER: {b.after[:_PREVIEW]}"
        )
        parts.append(
            f'<span class="ctx-block ctx-{b.status}" data-index="{i}" data-status="{b.status}" '
            f'title="{esc(tip).replace("<br>", "&#10;")}" style="display:inline-block;'
            f"width:{width}px;height:22px;margin:0 1px 2px 0;"
            f'background:{STATUS_COLORS.get(b.status, "#999")};border:1px solid #555"></span>'
        )
    legend = " ".join(
        f'<span style="display:inline-block;width:10px;height:10px;background:{c};'
        f'border:1px solid #555"></span> {s} ({counts.get(s, 0)})'
        for s, c in STATUS_COLORS.items()
    )
    return (
        f'<div class="ctx-strip-inner" data-turn="{turn}" data-blocks="{len(blocks)}">'
        f"<div style='font-size:12px;margin-bottom:4px'><b>turn {turn}</b>: "
        f"{len(blocks)} blocks, {total:,} message tokens in the request &nbsp; {legend}</div>"
        f'<div style="width:{STRIP_WIDTH_PX}px;line-height:0">{"".join(parts)}</div></div>'
    )


def block_detail(block: Block | None, limit: int = 4000) -> str:
    """Full before/after of one block, side by side, escaped."""
    if block is None:
        return ""
    pre = (
        "white-space:pre-wrap;overflow-wrap:anywhere;font-family:monospace;font-size:12px;"
        "max-height:260px;overflow:auto;margin:0"
    )
    return (
        f"<div class='ctx-detail'><b>{esc(block.role)}</b> · {esc(block.status)} · "
        f"{block.tokens:,} tokens<table style='width:100%;table-layout:fixed'><tr>"
        f"<th>before</th><th>after</th></tr><tr>"
        f"<td style='vertical-align:top'><div style=\"{pre}\">{esc(block.before, limit)}</div></td>"
        f"<td style='vertical-align:top'><div style=\"{pre}\">{esc(block.after, limit)}</div></td>"
        "</tr></table></div>"
    )


def events_html(replay: Replay, upto: int | None = None, limit: int = 40) -> str:
    """Events so far (latest first), escaped."""
    events = [
        e for e in replay.event_list if upto is None or (e.turn is not None and e.turn <= upto)
    ]
    rows = []
    for e in reversed(events[-limit:]):
        change = (
            f"{e.tokens_before:,} → {e.tokens_after:,}"
            if e.tokens_before is not None and e.tokens_after is not None
            else ""
        )
        msgs = ", ".join(map(str, e.messages[:6])) + (" …" if len(e.messages) > 6 else "")
        rows.append(
            f"<tr><td>{e.turn}</td><td>{esc(e.kind)}</td><td>{esc(msgs)}</td><td>{change}</td>"
            f"<td>{esc(e.file_path or '', 80)}</td><td>{esc(e.reason or '', 80)}</td></tr>"
        )
    head = (
        "<tr><th>turn</th><th>event</th><th>messages</th><th>tokens</th><th>file</th>"
        "<th>reason</th></tr>"
    )
    more = f"<div>… {len(events) - limit} earlier</div>" if len(events) > limit else ""
    return (
        f"<div class='ctx-events' data-count='{len(events)}'><b>{len(events)} events so far"
        f"</b><table style='font-size:12px'>{head}{''.join(rows)}</table>{more}</div>"
    )


# --------------------------------------------------------------------------- metrics


def metrics(replay: Replay, trace: Trace | None = None) -> dict[str, Any]:
    """Peak and cumulative tokens against the baseline, events by kind, and cost when the
    policy/metrics catalogue (`ctxlab.metrics`) is installed."""
    turns = replay.turns
    peak = int(turns["context_tokens"].max() or 0)
    cumulative = int(turns["context_tokens"].sum())
    base_cum = int(turns["baseline_tokens"].sum())
    kinds: dict[str, int] = {}
    for e in replay.event_list:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    out: dict[str, Any] = {
        "peak": peak,
        "cumulative": cumulative,
        "baseline_peak": int(turns["baseline_tokens"].max() or 0),
        "baseline_cumulative": base_cum,
        "saved": 1 - cumulative / base_cum if base_cum else 0.0,
        "events": sum(kinds.values()),
        "events_by_kind": kinds,
    }
    out.update(cost(replay, trace))
    return out


def cost(replay: Replay, trace: Trace | None) -> dict[str, Any]:
    """Cost in USD without and with prompt caching, from `ctxlab.metrics.cache_frame` (the
    policy/metrics catalogue) when it is installed and the model has a price; `{}` otherwise,
    so widgets degrade to token counts."""
    if trace is None:
        return {}
    try:
        from ctxlab.metrics import cache_frame  # type: ignore[import-not-found]
    except ImportError:
        return {}
    try:
        frame = cache_frame(replay, trace)
    except Exception:  # noqa: BLE001 - an optional readout must never break the widget
        return {}
    out: dict[str, Any] = {}
    for col, key in (("cost_usd", "cost_usd"), ("cost_usd_with_cache", "cost_usd_cached")):
        if col in frame.columns and frame.height and frame[col].null_count() < frame.height:
            out[key] = float(frame[col].sum())
    return out


def readout_html(
    m: dict[str, Any], latency_ms: float | None = None, replays: int | None = None
) -> str:
    """Peak / cumulative / events (and cost) as one compact line of HTML."""
    kinds = ", ".join(f"{esc(k)} {v}" for k, v in sorted(m["events_by_kind"].items()))
    parts = [
        f"<b>peak</b> {m['peak']:,} (baseline {m['baseline_peak']:,})",
        f"<b>cumulative</b> {m['cumulative']:,} (baseline {m['baseline_cumulative']:,}, "
        f"{m['saved']:.0%} saved)",
        f"<b>events</b> {m['events']}" + (f" ({kinds})" if kinds else ""),
    ]
    for k, v in m.items():
        if k.startswith("cost"):
            label = "cost (cache)" if k == "cost_usd_cached" else "cost"
            parts.append(f"<b>{label}</b> ${v:,.2f}")
    if latency_ms is not None:
        parts.append(f"<span style='color:#777'>{latency_ms:.0f} ms</span>")
    count = f" data-replays='{replays}'" if replays is not None else ""
    return f"<div class='ctx-readout'{count}>" + " &nbsp;|&nbsp; ".join(parts) + "</div>"


def now_ms() -> float:
    """Monotonic milliseconds (latency readouts)."""
    return time.perf_counter() * 1000
