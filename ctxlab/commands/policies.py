"""`ctxlab policies [--json]`: every preset with its parameters, defaults and source."""

from __future__ import annotations

import argparse
import json

from ctxlab.output import table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "policies",
        help="list the compaction policy presets",
        description="Every preset `--policy` accepts: its parameters at their upstream "
        "defaults and where those defaults come from.",
    )
    parser.add_argument("--json", action="store_true", help='print {"policies": [...]} as JSON')
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ctxlab.policies.catalog import describe

    rows = describe()
    if args.json:
        print(json.dumps({"policies": rows}, indent=2, default=str))
        return 0
    print(
        table(
            ("name", "params", "source"),
            [
                [r["name"], ", ".join(f"{k}={v}" for k, v in r["params"].items()), r["source"]]
                for r in rows
            ],
        )
    )
    return 0
