"""`ctxlab compare PATH --policy A --policy B ...`: the same traces under several policies.

One row per (trace, policy) with the size, cost and cache metrics of `ctxlab.metrics.summary`.
`--model` picks the price list and profile when the trace names no model (or overrides it);
`--window` sets every policy's window (and the overflow counts). Policies are catalogue names
(`ctxlab policies`); `a+b` composes presets into a pipeline.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ctxlab.output import report_errors, table

COLUMNS = (
    "trace_id",
    "policy",
    "peak_context_tokens",
    "cumulative_input_tokens",
    "events",
    "cost_usd",
    "cost_usd_with_cache",
    "cache_breaks",
    "goal_retention",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="replay traces under several policies, side by side",
        description="Replay each trace under each policy and print peak and cumulative tokens, "
        "events, cost with and without prompt caching, cache breaks and information metrics.",
    )
    parser.add_argument("path", metavar="PATH", help="trace file, .gz file or directory")
    parser.add_argument(
        "--policy",
        action="append",
        required=True,
        metavar="NAME",
        help="a preset (repeat for each; `a+b` is a pipeline)",
    )
    parser.add_argument("--window", type=int, help="max input tokens for every policy")
    parser.add_argument("--model", help="model for prices and profile (default: the trace's)")
    parser.add_argument("--summary-text-file", metavar="F", help="use this text as every summary")
    parser.add_argument("--json", action="store_true", help='print {"replays": [...]} as JSON')
    parser.set_defaults(run=run)


def _policy(name: str, window: int | None, model: str | None) -> Any:
    from ctxlab.policies.catalog import get

    policy = get(name)
    if "+" in name:
        if window is not None or model is not None:
            parts = [_policy(p, window, model) for p in name.split("+")]
            return type(policy)(tuple(parts))
        return policy
    params: dict[str, Any] = {}
    fields = set(getattr(policy, "__dataclass_fields__", {}))
    if window is not None and "window" in fields:
        params["window"] = window
    if model is not None and "model" in fields:
        params["model"] = model
    return get(name, **params) if params else policy


def run(args: argparse.Namespace) -> int:
    from ctxlab.load import load_all
    from ctxlab.metrics import summary
    from ctxlab.replay import replay
    from ctxlab.summarizers import Extractive, Fixed

    try:
        policies = [_policy(name, args.window, args.model) for name in args.policy]
    except (TypeError, ValueError) as exc:
        print(f"ctxlab: error: {exc}", file=sys.stderr)
        return 2
    summarizer = Fixed.from_file(args.summary_text_file) if args.summary_text_file else Extractive()
    loaded = load_all([args.path])
    rows: list[dict[str, Any]] = []
    for trace in (t for top in loaded for t in top.walk()):
        for name, policy in zip(args.policy, policies, strict=True):
            try:
                result = replay(trace, policy, summarizer=summarizer)
            except ValueError as exc:
                print(f"ctxlab: error: {trace.trace_id}: {name}: {exc}", file=sys.stderr)
                return 2
            row = summary(result, trace, model=args.model, window=args.window)
            row["policy"] = name
            rows.append(row)
    if args.json:
        print(json.dumps({"replays": rows}, indent=2, default=str))
    elif rows:
        print(table(COLUMNS, [[_fmt(r[c]) for c in COLUMNS] for r in rows]))
    report_errors(loaded.errors)
    return 2 if loaded.errors else 0


def _fmt(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value
