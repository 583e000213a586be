"""`ctxlab replay PATH --policy NAME [...]`: what the model would have seen, turn by turn.

Mirrors `ctxlab.replay(trace, ctxlab.policies.get(NAME, ...), summarizer=...)`. NAME is any
policy `ctxlab policies` lists (built-in, registered or from an installed package; default
`deepagents`), or `a+b` for a pipeline. Subagent conversations are replayed as traces of their
own (each is compacted independently). `--window`, `--trigger`, `--keep`, `--stress` and `--set`
override the policy's parameters of those names (in a pipeline, every member's that has one);
sizes use the SPEC spellings of `ctxlab._replay.specs` (`fraction:0.85`, `tokens:170000`,
`messages:6`,
or a bare number). `--format jsonl` prints one object per turn with `turn`, `context_tokens`
and `events`; `csv` the per-turn frame; `table` (default), per trace, a summary line, the
window, trigger and keep the policy resolved with where each came from
(`ctxlab._replay.policy_settings`), and the turns where a compaction event happened (`--all-turns`:
every turn), fitted to the terminal (`--wide`: in full), with a legend.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ctxlab._cli import flags
from ctxlab._cli.output import load_status, report_errors, warn
from ctxlab._cli.tables import add_wide_flag, fit, plural, table
from ctxlab._errors import FlagError
from ctxlab._replay.specs import split_assignment

if TYPE_CHECKING:
    from ctxlab._replay.policies.base import Policy
    from ctxlab._replay.replay import Replay


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay traces under a compaction policy",
        description="Replay each trace under a policy (open loop: recorded actions fixed) and "
        "print, per trace, the window, trigger and keep it used (and where each came from), "
        "then the model calls where it compacted: the request's tokens, with and without "
        "compaction, and the events (--all-turns: every call; jsonl and csv: every call).",
    )
    parser.add_argument("path", metavar="PATH", help="trace file, .gz file or directory")
    parser.add_argument(
        "--policy",
        default="deepagents",
        metavar="NAME",
        help="a policy `ctxlab policies` lists, or `a+b` for a pipeline (default: %(default)s)",
    )
    add_policy_flags(parser)
    parser.add_argument(
        "--format",
        choices=("table", "jsonl", "csv"),
        default="table",
        help="table: a summary and the calls with events, fitted to the terminal; jsonl: one "
        "object per call with its events; csv: one line per call (default: %(default)s)",
    )
    parser.add_argument(
        "--all-turns",
        action="store_true",
        help="table: list every model call, not only those with compaction events",
    )
    add_wide_flag(parser)
    parser.set_defaults(run=run)


def add_policy_flags(
    parser: argparse.ArgumentParser, window_default: str = "the model profile"
) -> None:
    """The flags that set a policy's parameters and summariser (`replay`, `check-replay`), read
    by `build_policy`."""
    parser.add_argument(
        "--window",
        type=flags.window_text,
        metavar="N",
        help=f"max input tokens (default: {window_default}); 'none' = no profile, 'auto' = "
        "the default",
    )
    parser.add_argument(
        "--trigger",
        type=flags.trigger_text,
        metavar="SPEC",
        help="when the policy compacts: fraction:0.85 (of the window), tokens:N, messages:N, "
        "clauses joined by ',' (any) or '&' (all), or none (default: the policy's; "
        "deepagents: fraction:0.85 with a known window, else tokens:170000)",
    )
    parser.add_argument(
        "--keep",
        type=flags.size_text,
        metavar="SPEC",
        help="what the policy keeps: messages:N, tokens:N or fraction:F (default: the "
        "policy's; deepagents: fraction:0.1 with a known window, else messages:6)",
    )
    parser.add_argument(
        "--stress",
        type=flags.fraction,
        metavar="FRACTION",
        help="deepagents' stress mode: trigger at this fraction of the window and keep a "
        "tenth of it; 0.10-0.25 multiplies events (default: off)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="any policy parameter (`ctxlab policies` lists them), e.g. --set "
        "max_output_tokens=8000 --set tools=deepagents; repeatable (default: none)",
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
    from ctxlab._replay.policies.catalog import get_spelled

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

    from ctxlab._replay.policies.catalog import get

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
    from ctxlab._ingest.load import load_all
    from ctxlab._replay.replay import replay
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
            print(fit(f"ctxlab: error: {trace.trace_id}: {exc}"), file=sys.stderr)
            return 2
    if args.format == "table":
        for result in results:
            _print_table(result, policy, _given(args), args.all_turns, args.wide)
    else:
        _print(results, args.format)
    report_errors(loaded.errors, loaded.skipped)
    return load_status(loaded)


def _given(args: argparse.Namespace) -> dict[str, str]:
    """Each parameter the command line set, and the flag that set it."""
    out = {}
    for text in args.set:
        out[text.partition("=")[0].strip().replace("-", "_")] = "--set"
    for name in ("window", "trigger", "keep", "stress"):
        if getattr(args, name) is not None:
            out[name] = f"--{name}"
    return out


LEGEND = (
    "turn: the model call; context: tokens of its request as the policy sends it; "
    "uncompacted: the same request with nothing compacted; messages: messages in the request; "
    "events: compaction actions as kind(n), n the messages each touched, e.g. summarize(73): "
    "73 messages replaced by a summary, offload_tool_result(1): a tool result moved to a "
    "file, truncate_args(2): tool-call arguments cut in 2 messages; why: the rule that fired "
    "(trigger, budget: the input budget, the window less the call's output; overflow; "
    "tool-result limit) and the request's tokens when it did."
)


def _print_table(
    result: Replay, policy: Policy, given: dict[str, str], all_turns: bool, wide: bool
) -> None:
    """One trace's summary line, resolved settings and table of calls."""
    from ctxlab._replay.policy_settings import resolved, window_warning
    from ctxlab._replay.why import setting_warnings, thresholds, why
    from ctxlab._store.schema import int_max

    width = 10**6 if wide else None
    frame = result.turns
    events = result.event_list
    print(
        fit(
            f"{result.trace_id}: {plural(frame.height, 'turn')}, {plural(len(events), 'event')}"
            f", max context {int_max(frame['context_tokens']):,} tokens (uncompacted "
            f"{int_max(frame['baseline_tokens']):,})",
            width,
        )
    )
    if result.trace is not None:
        settings = resolved(policy, result.trace, given)
        warning = window_warning(policy, result.trace, settings)
        if warning is not None:
            warn(warning)
        first = frame["baseline_tokens"][0] if frame.height else None
        for text in setting_warnings(policy, result.trace, first):
            warn(f"{result.trace_id}: {text}")
        print(fit(f"policy {result.policy}: " + "; ".join(map(str, settings)), width))
    levels = thresholds(policy, result.trace) if result.trace is not None else {}
    calls = [c for c in result.calls if all_turns or c.events]
    if all_turns:
        print(f"every turn ({frame.height}):")
    elif calls:
        listed = f"({len(calls)} of {frame.height}; --all-turns lists every turn)"
        print(fit(f"turns with compaction events {listed}:", width))
    else:
        print(fit("no turn has a compaction event (--all-turns lists every turn)", width))
    rows = [
        [
            c.turn,
            c.context_tokens,
            c.baseline_tokens,
            c.messages,
            ", ".join(f"{e.kind}({len(e.messages)})" if e.messages else e.kind for e in c.events),
            "; ".join(dict.fromkeys(why(e, levels) for e in c.events)),
        ]
        for c in calls
    ]
    if rows:
        columns = ("turn", "context", "uncompacted", "messages", "events", "why")
        print(table(columns, rows, wide=wide, wrap=("events", "why"), legend=LEGEND))
    print()


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
