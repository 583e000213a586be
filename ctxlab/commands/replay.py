"""`ctxlab replay PATH --policy deepagents [...]`: what the model would have seen, turn by turn.

Mirrors `ctxlab.replay(trace, DeepAgents(...), summarizer=...)`; subagent conversations are
replayed as traces of their own (deepagents compacts each subagent independently). Sizes use
the SPEC spellings of `ctxlab.specs` (`fraction:0.85`, `tokens:170000`, `messages:6`, or a bare
number); `--set` takes any `DeepAgents` parameter by name. `--format jsonl` prints one object
per turn with `turn`, `context_tokens` and `events`; `csv` the per-turn frame; `table`
(default) a readable summary of the turns where something happened.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ctxlab.output import report_errors, table
from ctxlab.specs import parse_assignment, parse_size, parse_trigger

if TYPE_CHECKING:
    from ctxlab.policies.base import Policy
    from ctxlab.replay import Replay


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay traces under a compaction policy",
        description="Replay each trace under a policy (open loop: recorded actions fixed) and "
        "print, per model call, the request's token count and the compaction events.",
    )
    parser.add_argument("path", metavar="PATH", help="trace file, .gz file or directory")
    parser.add_argument(
        "--policy",
        default="deepagents",
        metavar="NAME",
        help="a policy `ctxlab policies` lists, or `a+b` for a pipeline (default: %(default)s)",
    )
    parser.add_argument(
        "--window", help="max input tokens (default: the model profile); 'none' = no profile"
    )
    parser.add_argument("--trigger", help="summarisation trigger SPEC, e.g. fraction:0.85")
    parser.add_argument("--keep", help="kept window SPEC, e.g. messages:6 or fraction:0.1")
    parser.add_argument(
        "--stress",
        type=float,
        metavar="FRACTION",
        help="stress mode: trigger at this fraction of the window (0.10-0.25 multiplies events)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="any policy parameter, e.g. --set max_output_tokens=8000 --set tools=deepagents",
    )
    parser.add_argument(
        "--summary-text-file",
        metavar="F",
        help="use this file's text as every summary (default: offline extractive summaries)",
    )
    parser.add_argument("--format", choices=("table", "jsonl", "csv"), default="table")
    parser.set_defaults(run=run)


def build_policy(args: argparse.Namespace) -> Policy:
    """The policy the flags describe (flags win over `--set` of the same name)."""
    from ctxlab.policies.catalog import get

    params: dict[str, Any] = dict(parse_assignment(a) for a in args.set)
    if args.window is not None:
        params["window"] = None if args.window.lower() == "none" else int(args.window)
    if args.trigger is not None:
        params["trigger"] = parse_trigger(args.trigger)
    if args.keep is not None:
        params["keep"] = parse_size(args.keep)
    if args.stress is not None:
        params["stress"] = args.stress
    return get(args.policy, **params)


def turn_records(result: Replay) -> list[dict[str, Any]]:
    """One JSON-able object per turn (the `jsonl` format)."""
    records = []
    frame = result.turns.to_dicts()
    for row, call in zip(frame, result.calls, strict=True):
        records.append(
            {"trace_id": result.trace_id, **row, "events": [e.as_dict() for e in call.events]}
        )
    return records


def run(args: argparse.Namespace) -> int:
    from ctxlab.load import load_all
    from ctxlab.replay import replay
    from ctxlab.summarizers import Extractive, Fixed

    try:
        policy = build_policy(args)
    except (TypeError, ValueError) as exc:
        print(f"ctxlab: error: {exc}", file=sys.stderr)
        return 2
    summarizer = Fixed.from_file(args.summary_text_file) if args.summary_text_file else Extractive()
    loaded = load_all([args.path])
    results = []
    for trace in (t for top in loaded for t in top.walk()):
        try:
            results.append(replay(trace, policy, summarizer=summarizer))
        except ValueError as exc:
            print(f"ctxlab: error: {trace.trace_id}: {exc}", file=sys.stderr)
            return 2
    _print(results, args.format)
    report_errors(loaded.errors)
    return 2 if loaded.errors else 0


def _print(results: list[Replay], fmt: str) -> None:
    if fmt == "jsonl":
        for result in results:
            for record in turn_records(result):
                print(json.dumps(record))
        return
    if fmt == "csv":
        import polars as pl

        frames = [
            r.turns.with_columns(
                pl.lit(r.trace_id).alias("trace_id"),
                pl.Series("event_kinds", [";".join(e.kind for e in c.events) for c in r.calls]),
            )
            for r in results
        ]
        if frames:
            sys.stdout.write(pl.concat(frames).write_csv())
        return
    for result in results:
        frame = result.turns
        events = result.event_list
        print(
            f"{result.trace_id}: {frame.height} turns, {len(events)} events, max context "
            f"{frame['context_tokens'].max() or 0} tokens (uncompacted "
            f"{frame['baseline_tokens'].max() or 0})"
        )
        rows = [
            [
                c.turn,
                c.context_tokens,
                c.baseline_tokens,
                c.messages,
                ", ".join(
                    f"{e.kind}({len(e.messages)})" if e.messages else e.kind for e in c.events
                ),
            ]
            for c in result.calls
            if c.events
        ]
        if rows:
            print(table(("turn", "context", "uncompacted", "messages", "events"), rows))
        print()
