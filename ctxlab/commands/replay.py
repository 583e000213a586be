"""`ctxlab replay PATH --policy NAME [...]`: what the model would have seen, turn by turn.

Mirrors `ctxlab.replay(trace, ctxlab.policies.get(NAME, ...), summarizer=...)`. NAME is any
policy `ctxlab policies` lists (built-in, registered or from an installed package; default
`deepagents`), or `a+b` for a pipeline. Subagent conversations are replayed as traces of their
own (each is compacted independently). `--window`, `--trigger`, `--keep`, `--stress` and `--set`
override the policy's parameters of those names (in a pipeline, every member's that has one);
sizes use the SPEC spellings of `ctxlab.specs` (`fraction:0.85`, `tokens:170000`, `messages:6`,
or a bare number). `--format jsonl` prints one object per turn with `turn`, `context_tokens`
and `events`; `csv` the per-turn frame; `table` (default) a readable summary of the turns where
something happened.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ctxlab.output import report_errors, table
from ctxlab.specs import split_assignment

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
    parser.add_argument(
        "--trigger", help="the policy's `trigger`: a SPEC such as fraction:0.85, or a count"
    )
    parser.add_argument(
        "--keep", help="the policy's `keep`: a SPEC such as messages:6 or fraction:0.1, or a count"
    )
    parser.add_argument(
        "--stress",
        type=float,
        metavar="FRACTION",
        help="deepagents' stress mode: trigger at this fraction of the window (0.10-0.25 "
        "multiplies events)",
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
    """The policy the flags describe (flags win over `--set` of the same name), each value
    read against the parameter it sets."""
    from ctxlab.policies.catalog import get_spelled

    texts = dict(split_assignment(a) for a in args.set)
    for name in ("window", "trigger", "keep", "stress"):
        if getattr(args, name) is not None:
            texts[name] = str(getattr(args, name))
    return get_spelled(args.policy, texts)


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
