"""`ctxlab policies [--json] [--wide]`: every policy name with its parameters, defaults and
source: the built-in presets, then policies registered in Python or by installed packages. The
table wraps the parameters and cuts long sources to the terminal's width (`--wide`: in full)."""

from __future__ import annotations

import argparse
import json

from ctxlab._cli.tables import add_wide_flag, table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "policies",
        help="list the compaction policies",
        description="Every policy `--policy` accepts (built-in presets, then policies "
        "installed packages register): its parameters at their defaults and where those "
        "defaults come from. `a+b` composes any of them into a pipeline.",
    )
    parser.add_argument("--json", action="store_true", help='print {"policies": [...]} as JSON')
    add_wide_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ctxlab._replay.policies.catalog import describe

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
            wide=args.wide,
            wrap=("params",),
            whole=("name",),
        )
    )
    return 0
