"""`ctxlab check-replay TRACE [--policy NAME] [--json]`: recorded compactions vs replayed ones.

Prints `ctxlab.check_replay(TRACE, policy)`: every trace in TRACE (subagents included) replayed
and checked. Without `--policy`, each trace is replayed under the preset of its harness; a guess
prints a warning line. `--window`,
`--trigger`, `--keep`, `--stress` and `--set` override the policy's parameters as in `ctxlab
replay` (the recorded harness's window is often not in the file). The table shows, per
recorded compaction, the recorded and replayed call, the tokens before it on both sides and
both summaries; `--json` prints `{"traces": [{"trace_id", "policy", "events": [...],
"turn_agreement", "token_error_median", ...}]}`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from ctxlab._cli import flags
from ctxlab._cli.commands.replay import add_policy_flags, build_policy
from ctxlab._cli.output import load_status, report_errors, warn
from ctxlab._cli.tables import add_wide_flag, clip, fit, plural, table, terminal_width
from ctxlab._errors import FlagError

if TYPE_CHECKING:
    from ctxlab._evaluate.check_replay import Check
    from ctxlab._replay.policies.base import Policy


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check-replay",
        help="compare a trace's recorded compactions with a replay's",
        description="Replay each trace under the preset of its harness (or --policy) and "
        "pair every compaction the recording made with the nearest replayed one: calls apart, "
        "tokens before it on both sides, both summaries; then the share within one call "
        "(manual compactions excluded) and the median token error.",
    )
    parser.add_argument("path", metavar="TRACE", help="trace file, .gz file or directory")
    parser.add_argument(
        "--policy",
        metavar="NAME",
        help="a policy `ctxlab policies` lists (default: the preset matching the harness)",
    )
    add_policy_flags(parser, "the recorded model profile, else the public one")
    parser.add_argument("--json", action="store_true", help='print {"traces": [...]} as JSON')
    add_wide_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ctxlab._evaluate.check_replay import check_traces
    from ctxlab._ingest.load import load_all, traces_of
    from ctxlab.summarizers import Extractive, Fixed

    given = {name for name in ("window", "trigger", "keep", "stress") if getattr(args, name)}
    given |= {a.split("=", 1)[0].strip() for a in args.set}

    def build(name: str, recorded: dict[str, str]) -> Policy:
        """The policy the flags describe, over the recording's settings they leave alone;
        a bad flag is a `FlagError` naming it."""
        sets = [f"{k}={v}" for k, v in recorded.items()]
        return build_policy(
            argparse.Namespace(**{**vars(args), "policy": name, "set": [*sets, *args.set]})
        )

    if args.policy:
        build(args.policy, {})  # a bad flag is reported before anything loads
    summarizer = Fixed.from_file(args.summary_text_file) if args.summary_text_file else Extractive()
    loaded = load_all([args.path])
    flags.require_traces(loaded, [args.path])
    try:
        checks = check_traces(traces_of(loaded), args.policy, given, build, summarizer)
    except FlagError:
        raise
    except ValueError as exc:  # a policy that cannot run on a trace (as in `replay`)
        print(fit(f"ctxlab: error: {exc}"), file=sys.stderr)
        return 2
    for c in checks:
        if c.preset_guess is not None:
            warn(c.preset_guess)
    if args.json:
        print(json.dumps({"traces": [c.as_dict() for c in checks]}, indent=2))
    else:
        for c in checks:
            _print(c, args.wide)
    report_errors(loaded.errors, loaded.skipped)
    return load_status(loaded)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


LEGEND = (
    "recorded, replayed: the model call each compaction came before; apart: replayed minus "
    "recorded calls; recorded tokens, replayed tokens: the context just before it on each "
    "side; error: their relative difference."
)


def _print(c: Check, wide: bool) -> None:
    """One trace's check: a summary line, notes, the paired compactions and their summaries
    (cut to the terminal's width unless `wide`; the JSON has them whole)."""
    width = 10**6 if wide else terminal_width()
    counted = [p for p in c.events if p.counted]
    head = f"{c.trace_id}: policy {c.policy}, {plural(len(c.events), 'recorded compaction')}"
    if counted:
        head += (
            f", turn agreement {_percent(c.turn_agreement)} "
            f"({sum(p.agrees for p in counted)}/{len(counted)} within one call)"
        )
    head += f", token error median {_percent(c.token_error_median)}"
    if c.unpaired:
        head += f", {plural(len(c.unpaired), 'replayed compaction')} without a recorded one"
    print(fit(head, width))
    for note in c.notes:
        print(fit(f"note: {note}", width))
    if c.events:
        rows = [
            [
                p.recorded.turn,
                p.replayed.turn if p.replayed is not None else None,
                f"{p.calls_apart:+d}" if p.calls_apart is not None else None,
                p.recorded.kind,
                p.recorded.trigger,
                p.recorded.pre_tokens,
                p.replayed_tokens,
                _percent(p.token_error),
            ]
            for p in c.events
        ]
        columns = ("recorded", "replayed", "apart", "kind", "trigger", "recorded tokens",
                   "replayed tokens", "error")  # fmt: skip
        print(table(columns, rows, wide=wide, legend=LEGEND))
    for p in c.events:
        if p.note:
            print(fit(f"note: turn {p.recorded.turn}: {p.note}", width))
        if p.recorded.summary or (p.replayed is not None and p.replayed.summary):
            print(f"summary at turn {p.recorded.turn}:")
            replayed = p.replayed.summary if p.replayed is not None else None
            for side, text in (("recorded", p.recorded.summary), ("replayed", replayed)):
                print("  " + clip(f"{side}: {text or '-'}", width - 2))
    print()
