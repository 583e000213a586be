"""One card per compaction: what it saved, which facts it dropped and where each one went.

A replay's events say "summarised messages 3-40 at turn 12, 120,000 → 30,000 tokens"; the
evaluation (`ctxlab.evaluate`) says which facts left the request at which turn. A `Card` joins
the two at each turn where something was compacted: the tokens before and after, the facts
whose eviction turn it is, by category, where each one went at that turn (only in the summary,
only in the replay's virtual files, where a `read_file` would recover it, or lost), whether
the recorded agent needed it again later (and where it was then), and the probes asked at
that turn with their full-context ceiling.

Headless like `ctxlab._replay.timeline`: no ipywidgets, no plotly. `cards_html` and `card_html`
render
cards as HTML for the Scrubber, notebooks and scripts; every string taken from the trace or
the replay goes through `ctxlab._view.escape.esc`, as trace text is untrusted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from ctxlab._evaluate.evaluation import Evaluation, evaluate
from ctxlab._evaluate.facts import Fact
from ctxlab._evaluate.survival import Survival
from ctxlab._replay.why import why
from ctxlab._view.escape import esc
from ctxlab._view.palette import FACT_STATUS_COLORS

if TYPE_CHECKING:
    from ctxlab._replay.replay import Replay

NO_CARD = ("truncate_args", "overflow_error")
"""Event kinds that make no card on their own: argument truncation is redone on every request
once it starts, and an overflow changes nothing (the turns `ctxlab._evaluate.probes` does not probe
either). A turn where they evict a fact still gets its card."""

WENT_LABELS = {
    "context": "still in context",
    "summary": "in the summary",
    "file": "in a file",
    "lost": "lost",
}


@dataclass(frozen=True, slots=True)
class DroppedFact:
    """A fact that left the request at a card's turn, and where it went."""

    fact: str
    category: str
    went: str
    """Its status at the card's turn: context, summary, file or lost."""
    needed_turn: int | None
    status_when_needed: str | None


@dataclass(frozen=True, slots=True)
class Card:
    """One compaction turn: its events, token change, dropped facts and probes."""

    turn: int
    kinds: tuple[str, ...]
    tokens_before: int | None
    tokens_after: int | None
    dropped: tuple[DroppedFact, ...]
    probes: tuple[dict[str, Any], ...]
    why: tuple[str, ...] = ()
    """The rule behind each of the turn's events, one line each (`ctxlab._replay.why.why`):
    what the user did not ask for by name (the budget, the tool-result limit) said plainly."""

    @property
    def needed_lost(self) -> int:
        """Dropped facts the recorded agent used again and that were lost when it did."""
        return sum(1 for f in self.dropped if f.status_when_needed == "lost")

    def by_category(self) -> dict[str, list[DroppedFact]]:
        """Dropped facts grouped by category, in order of first appearance."""
        out: dict[str, list[DroppedFact]] = {}
        for f in self.dropped:
            out.setdefault(f.category, []).append(f)
        return out


def cards(replay: Replay, facts: pl.DataFrame, probes: pl.DataFrame | None = None) -> list[Card]:
    """A card for every turn where a fact left the request or a compaction happened, in turn
    order (`NO_CARD` kinds alone make none). `facts` and `probes` are an evaluation's
    frames of the same replay (`ctxlab.Evaluation.facts` / `.probes`). Where each dropped fact
    went is its `ctxlab._evaluate.survival` status at the card's turn."""
    events: dict[int, list[Any]] = {}
    for e in replay.event_list:
        if e.turn is not None:
            events.setdefault(e.turn, []).append(e)
    evicted: dict[int, list[dict[str, Any]]] = {}
    for row in facts.filter(pl.col("evicted_turn").is_not_null()).iter_rows(named=True):
        evicted.setdefault(int(row["evicted_turn"]), []).append(row)
    asked: dict[int, list[dict[str, Any]]] = {}
    if probes is not None:
        for row in probes.iter_rows(named=True):
            asked.setdefault(int(row["turn"]), []).append(row)
    dropped = [row for turn in sorted(evicted) for row in evicted[turn]]
    facts_dropped = [Fact(r["fact"], r["category"], int(r["message"])) for r in dropped]
    where = Survival(replay, facts_dropped) if facts_dropped else None
    went = {
        id(row): where.status(i, int(row["evicted_turn"]))
        for i, row in enumerate(dropped)
        if where is not None
    }
    out = []
    for turn in sorted(set(events) | set(evicted)):
        here = events.get(turn, [])
        rows = evicted.get(turn, [])
        if not rows and all(e.kind in NO_CARD for e in here):
            continue
        befores = [e.tokens_before for e in here if e.tokens_before is not None]
        afters = [e.tokens_after for e in here if e.tokens_after is not None]
        out.append(
            Card(
                turn=turn,
                kinds=tuple(dict.fromkeys(e.kind for e in here)),
                tokens_before=befores[0] if befores else None,
                tokens_after=afters[-1] if afters else None,
                dropped=tuple(
                    DroppedFact(
                        r["fact"],
                        r["category"],
                        went[id(r)],
                        r["needed_turn"],
                        r["status_when_needed"],
                    )
                    for r in rows
                ),
                probes=tuple(asked.get(turn, [])),
                why=tuple(dict.fromkeys(why(e) for e in here)),
            )
        )
    return out


def card_at(all_cards: Sequence[Card], turn: int) -> Card | None:
    """The latest card at or before `turn` (what a scrubber at `turn` shows), or None."""
    found = None
    for card in all_cards:
        if card.turn > turn:
            break
        found = card
    return found


def _chip(f: DroppedFact) -> str:
    color = FACT_STATUS_COLORS.get(f.went, "#999999")
    needed = ""
    if f.needed_turn is not None:
        then = f.status_when_needed or "?"
        needed = (
            f" <b class='ctx-needed' data-when-needed='{esc(then)}' title='the recorded agent "
            f"used it again at turn {f.needed_turn}; it was {esc(then)} then'>"
            f"★ needed at turn {f.needed_turn} ({esc(WENT_LABELS.get(then, then))})</b>"
        )
    return (
        f"<li class='ctx-dropped' data-went='{esc(f.went)}' "
        "style='display:inline-block;margin:0 14px 2px 0'>"
        f"<span style='display:inline-block;width:9px;height:9px;background:{color};"
        f"margin-right:4px'></span><code>{esc(f.fact, 100)}</code> → "
        f"{esc(WENT_LABELS.get(f.went, f.went))}{needed}</li>"
    )


def _urgency(f: DroppedFact) -> int:
    """Listing order within a category: needed later and lost, needed later, the rest (a
    stable sort keeps the order of first appearance inside each group)."""
    if f.needed_turn is None:
        return 2
    return 0 if f.status_when_needed == "lost" else 1


def _tokens(card: Card) -> str:
    before, after = card.tokens_before, card.tokens_after
    if before is None or after is None:
        return ""
    saved = f" ({(before - after) / before:.0%} saved)" if before else ""
    return f" · {before:,} → {after:,} tokens{saved}"


def _score(value: Any) -> str:
    return "" if value is None else f"{value:.2f}"


def _probes_html(probes: Iterable[dict[str, Any]], limit: int) -> str:
    rows = [
        f"<tr><td>{esc(p['kind'])}</td><td>{esc(p['question'], 160)}</td>"
        f"<td>{esc(p['expected'], 80)}</td><td>{esc(p['answer'], 80)}</td>"
        f"<td>{_score(p['score'])}</td><td>{_score(p['ceiling_score'])}</td></tr>"
        for p in list(probes)[:limit]
    ]
    if not rows:
        return ""
    return (
        "<table class='ctx-card-probes' style='font-size:12px'><tr><th>probe</th>"
        "<th>question</th><th>expected</th><th>answer</th><th>score</th><th>ceiling</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def card_html(card: Card, *, per_category: int = 8, probes: int = 12) -> str:
    """One card as HTML: header (turn, events, tokens), a line per rule that fired, a line per
    category of dropped facts (counts by where they went, then up to `per_category` facts,
    those the agent needed later first, with their marks) and the probes asked at the turn.

    The card is a `<details>` element, closed: its header is one line, so the event list
    below it stays in view, and a click opens the rest."""
    kinds = ", ".join(esc(k) for k in card.kinds) or "eviction"
    hurt = f"color:{FACT_STATUS_COLORS['lost']};font-weight:bold" if card.needed_lost else ""
    head = (
        f"<summary style='cursor:pointer'><b>turn {card.turn}</b>: {kinds}{_tokens(card)} · "
        f"{len(card.dropped)} facts dropped, <span style='{hurt}'>{card.needed_lost} needed "
        "later but lost</span></summary>"
    )
    rules = "".join(f"<div class='ctx-card-why'>why: {esc(line)}</div>" for line in card.why)
    sections = []
    for category, facts in card.by_category().items():
        counts = {s: sum(1 for f in facts if f.went == s) for s in WENT_LABELS}
        summary = ", ".join(f"{n} {WENT_LABELS[s]}" for s, n in counts.items() if n)
        first = sorted(facts, key=_urgency)[:per_category]
        shown = "".join(_chip(f) for f in first)
        more = (
            f"<li style='display:inline-block'>… {len(facts) - per_category} more</li>"
            if len(facts) > per_category
            else ""
        )
        sections.append(
            f"<div class='ctx-card-category' data-category='{esc(category)}'>"
            f"<b>{esc(category)}</b> · {len(facts)} dropped: {summary}"
            f"<ul style='list-style:none;margin:2px 0 4px 0;padding-left:10px'>{shown}{more}"
            "</ul></div>"
        )
    body = "".join(sections) or "<div>no fact left the request at this turn</div>"
    return (
        f"<details class='ctx-event-card' data-turn='{card.turn}' "
        f"data-dropped='{len(card.dropped)}' data-needed-lost='{card.needed_lost}' "
        f"style='font-size:12px;border:1px solid #ccc;padding:6px'>{head}{rules}{body}"
        f"{_probes_html(card.probes, probes)}</details>"
    )


def cards_html(all_cards: Sequence[Card], turn: int | None = None) -> str:
    """The card a scrubber at `turn` shows (the latest at or before it), or every card."""
    if turn is None:
        return "".join(card_html(c) for c in all_cards) or "<div>no compaction</div>"
    card = card_at(all_cards, turn)
    if card is None:
        return f"<div class='ctx-event-card-none'>no compaction up to turn {turn}</div>"
    return card_html(card)


class EventCards:
    """The cards of one replay, computed on first use (Tier 1 runs only when a card is shown).

    `evaluation` is the replay's `ctxlab.Evaluation` (with its probes, when run); without one,
    `ctxlab.evaluate(replay)` computes Tier 1 the first time a card is asked for.
    """

    def __init__(self, replay: Replay, evaluation: Evaluation | None = None) -> None:
        self.replay = replay
        self.evaluation = evaluation
        self._cards: list[Card] | None = None

    @property
    def cards(self) -> list[Card]:
        """Every card, in turn order."""
        if self._cards is None:
            if self.evaluation is None:
                self.evaluation = evaluate(self.replay)
            self._cards = cards(self.replay, self.evaluation.facts, self.evaluation.probes)
        return self._cards

    def html(self, turn: int) -> str:
        """The card shown at `turn` as HTML. A replay without its trace has no facts to show;
        an evaluation that fails says why in the card instead of breaking the view."""
        if self.evaluation is None and self.replay.trace is None:
            return (
                "<div class='ctx-event-card-none'>no event cards: the replay does not carry "
                "its trace, so its facts are unknown</div>"
            )
        try:
            shown = self.cards
        except Exception as exc:  # noqa: BLE001 - an optional view must never break the widget
            return (
                "<div class='ctx-event-card-none' style='color:#D55E00'>no event cards: "
                f"{esc(type(exc).__name__)}: {esc(exc, 300)}</div>"
            )
        return cards_html(shown, turn)


__all__ = [
    "NO_CARD",
    "WENT_LABELS",
    "Card",
    "DroppedFact",
    "EventCards",
    "card_at",
    "card_html",
    "cards",
    "cards_html",
]
