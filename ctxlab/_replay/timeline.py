"""What happened to each message of a trace, turn by turn, read back from a replay's events.

A replay records events ("summarised messages 3-40 at turn 12"), not the state of every message
at every turn. `Timeline` turns the events back into "message p at turn t is kept, offloaded,
truncated, masked, summarised or dropped", and `Block`s are that state as the context strip
shows it. `strip_html`, `block_detail` and `events_html` render it; every string taken from the
trace or the replay is escaped, as trace text is untrusted.

Nothing here needs a notebook: the Scrubber displays it, and tests and scripts can build the
same analysis headless (this module imports neither ipywidgets nor plotly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._messages import KINDS, chars_per_token, readable_text
from ctxlab._replay.why import why
from ctxlab._view.escape import esc
from ctxlab._view.palette import STATUS_COLORS

if TYPE_CHECKING:
    from ctxlab._replay.replay import Replay
    from ctxlab._trace import Trace


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


STICKY = {
    "offload_tool_result": "offloaded",
    "offload_human_message": "offloaded",
    "tail_clip": "offloaded",
    "summarize": "summarised",
    "clear_tool_uses": "masked",
    "mask_observations": "masked",
    "forget": "dropped",
    "trim": "dropped",
}
"""Event kind -> the status it gives the messages it lists, from its turn on."""


def sticky_status(kind: str) -> str | None:
    """The status an event of `kind` gives its messages from its turn on (`STICKY`; any other
    kind with "mask" in its name masks), or None for request-only kinds (`truncate_args`)."""
    return STICKY.get(kind) or ("masked" if "mask" in kind else None)


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

    def __init__(
        self, replay: Replay, trace: Trace | None, summaries: Sequence[str | None] = ()
    ) -> None:
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
            status = sticky_status(event.kind)
            if status is None:
                continue
            for p in event.messages:
                self.sticky.setdefault(p, []).append((event.turn, status, event))
        params = replay.params
        members = params.get("policies")
        if isinstance(members, list) and members:  # a pipeline counts as its first member
            params = members[0].get("params", {})
        self.cpt = chars_per_token(
            params.get("model") or (trace.model if trace else None),
            params.get("provider") or (trace.provider if trace else None),
            params.get("chars_per_token"),
        )
        """Characters per token the strip sizes messages with: the policy's own counter (its
        `model`, `provider` and `chars_per_token` parameters where it has them, else the
        trace's model), so block sizes add up to the counts the replay reports."""

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
        text = self.summaries[i] if i < len(self.summaries) else event.summary
        if text is None:
            text = f"(no summary text recorded; the summarised history is in {event.file_path})"
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
                for k in KINDS
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
                    readable_text(messages[run[0]])[:300],
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
            before = readable_text(message)
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
    legend = " ".join(  # each swatch kept on its label's line when the legend wraps
        f'<span style="white-space:nowrap"><span style="display:inline-block;width:10px;'
        f'height:10px;background:{c};border:1px solid #555"></span> {s} '
        f"({counts.get(s, 0):,})</span>"
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
            f"<td>{esc(e.file_path or '', 80)}</td><td>{esc(why(e), 100)}</td></tr>"
        )
    head = (
        "<tr><th>turn</th><th>event</th><th>messages</th><th>tokens</th><th>file</th>"
        "<th>why</th></tr>"
    )
    more = f"<div>… {len(events) - limit} earlier</div>" if len(events) > limit else ""
    return (
        f"<div class='ctx-events' data-count='{len(events)}'><b>{len(events):,} "
        f"event{'' if len(events) == 1 else 's'} so far"
        f"</b><table style='font-size:12px'>{head}{''.join(rows)}</table>{more}</div>"
    )
