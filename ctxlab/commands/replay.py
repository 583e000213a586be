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

from ctxlab import flags
from ctxlab.errors import FlagError
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
    add_policy_flags(parser)
    parser.add_argument("--format", choices=("table", "jsonl", "csv"), default="table")
    parser.set_defaults(run=run)


def add_policy_flags(
    parser: argparse.ArgumentParser, window_default: str = "the model profile"
) -> None:
    """The flags that set a policy's parameters and summariser (`replay`, `check-replay`), read
    by `build_policy`."""
    parser.add_argument(
        "--window",
        type=flags.window_text,
        help=f"max input tokens (default: {window_default}); 'none' = no profile",
    )
    parser.add_argument(
        "--trigger",
        type=flags.trigger_text,
        help="the policy's `trigger`: a SPEC such as fraction:0.85, or a count",
    )
    parser.add_argument(
        "--keep",
        type=flags.size_text,
        help="the policy's `keep`: a SPEC such as messages:6 or fraction:0.1, or a count",
    )
    parser.add_argument(
        "--stress",
        type=flags.fraction,
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
        type=flags.text_file,
        metavar="F",
        help="use this file's text as every summary (default: offline extractive summaries)",
    )


def build_policy(args: argparse.Namespace) -> Policy:
    """The policy the flags describe (flags win over `--set` of the same name), each value
    read against the parameter it sets. A value the policy refuses is a `FlagError` naming
    its flag: each flag is tried alone first, so the message points at the one to fix."""
    from ctxlab.policies.catalog import get_spelled

    try:
        get_spelled(args.policy, {})
    except (TypeError, ValueError) as exc:
        raise FlagError("--policy", args.policy, str(exc)) from None
    given: list[tuple[str, str, str, str]] = []  # (flag, as typed, name, value text)
    for text in args.set:
        try:
            name, value = split_assignment(text)
        except ValueError as exc:
            raise FlagError("--set", text, str(exc)) from None
        given.append(("--set", text, name, value))
    for name in ("window", "trigger", "keep", "stress"):
        if getattr(args, name) is not None:
            value = str(getattr(args, name))
            given.append((f"--{name}", value, name, value))
    for flag, typed, name, value in given:
        try:
            get_spelled(args.policy, {name: value})
        except TypeError as exc:
            raise FlagError(flag, typed, _unknown(args.policy, name) or str(exc)) from None
        except ValueError as exc:
            raise FlagError(flag, typed, str(exc)) from None
    texts = {name: value for _, _, name, value in given}
    try:
        return get_spelled(args.policy, texts)
    except (TypeError, ValueError) as exc:
        flags_given = " ".join(typed for _, typed, _, _ in given)
        raise FlagError("--set", flags_given, str(exc)) from None


def _unknown(policy: str, name: str) -> str | None:
    """`policy has no parameter 'name'; its parameters: ...` when that is the problem."""
    import dataclasses

    from ctxlab.policies.catalog import get

    default = get(policy)
    if not dataclasses.is_dataclass(default):
        return None
    known = [f.name for f in dataclasses.fields(default)]
    if name in known:
        return None
    return f"{policy} has no parameter {name!r}; its parameters: {', '.join(known)}"


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

    policy = build_policy(args)
    summarizer = Fixed.from_file(args.summary_text_file) if args.summary_text_file else Extractive()
    loaded = load_all([args.path])
    flags.require_traces(loaded, [args.path])
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
