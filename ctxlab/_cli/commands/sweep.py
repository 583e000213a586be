"""`ctxlab sweep PATH... --db FILE --policy NAME [--grid name=v1,v2]...`: a parameter grid.

NAME is any policy `ctxlab policies` lists, or `a+b` for a pipeline (a pipeline has no grid
parameters of its own: it is one cell per trace). With `--model`, summaries are written by that
chat model (`ctxlab.summarizers.LLM`, cached in the store); a cell whose model call fails is a
row with its `error`, the others complete, and the command exits 3 with one line saying how
many failed: running it again asks only those."""

from __future__ import annotations

import argparse
import sys

from ctxlab._cli import flags
from ctxlab._cli.commands.evaluate import add_call_flags
from ctxlab._cli.commands.query import add_format_flags
from ctxlab._errors import FlagError
from ctxlab._store.defaults import BACKENDS, DEFAULT_PATH


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="replay traces over a grid of policy parameters into a store",
        description="Every trace x every grid cell, in parallel, streamed into the store; cells "
        "already stored are skipped, so rerunning resumes. Values use the --set spellings, e.g. "
        "--grid trigger=fraction:0.5,fraction:0.85 --grid keep=messages:6,fraction:0.1.",
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="trace file, .gz file or directory"
    )
    parser.add_argument(
        "--db", default=str(DEFAULT_PATH), metavar="FILE", help="store file (default: %(default)s)"
    )
    parser.add_argument(
        "--policy",
        required=True,
        metavar="NAME",
        help="a policy `ctxlab policies` lists, or `a+b` for a pipeline (required)",
    )
    parser.add_argument(
        "--window",
        type=flags.positive_int(flags.WINDOW_FORMS),
        metavar="N",
        help="max input tokens (default: the model profile)",
    )
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="a policy parameter and the values to try, spelled as --set spells them "
        "(e.g. trigger=fraction:0.5,fraction:0.85); repeat for more parameters: every "
        "combination is a cell (default: none, one cell with the policy's defaults)",
    )
    parser.add_argument(
        "--summary-text-file",
        type=flags.text_file,
        metavar="F",
        help="use this file's text as every summary (default: offline extractive summaries)",
    )
    parser.add_argument(
        "--model",
        metavar="PROVIDER:NAME",
        help="chat model that writes the summaries, e.g. anthropic:claude-haiku-4-5, or "
        "module:Factory (answers cached in the store; default: offline extractive summaries)",
    )
    add_call_flags(parser)
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="local",
        help="local: worker processes on this machine; ray: tasks on a Ray cluster "
        "(--ray-address, else a local Ray) (default: %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=flags.positive_int("a whole number of processes, 1 or more"),
        metavar="N",
        help="processes (default: one per core)",
    )
    parser.add_argument(
        "--ray-address", metavar="ADDRESS", help="Ray cluster address (default: a local Ray)"
    )
    parser.add_argument(
        "--files",
        choices=("all", "offloaded", "none"),
        default="offloaded",
        help="file contents to store: offloaded results only, also the summarised-history "
        "files (all), or none (paths, sizes and hashes are always stored) (default: "
        "%(default)s)",
    )
    add_format_flags(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import polars as pl

    from ctxlab._cli.commands.evaluate import chat_model
    from ctxlab._cli.commands.query import render
    from ctxlab._cli.tables import clip, fit
    from ctxlab._replay.model_calls import CallSettings
    from ctxlab._store.sweep import (
        SweepError,
        grid_points,
        parse_grid,
        policy_named,
        ray_problem,
        sweep,
    )
    from ctxlab.summarizers import LLM, Fixed, Summarizer

    if args.backend == "ray" and (problem := ray_problem(args.ray_address)) is not None:
        raise FlagError(
            "--ray-address" if args.ray_address else "--backend",
            args.ray_address or args.backend,
            problem,
        )
    try:
        policy = policy_named(args.policy)
    except SweepError as exc:
        raise FlagError("--policy", args.policy, str(exc)) from None
    if args.window is not None:
        policy = policy_named(args.policy, window=args.window)
    for spec in args.grid:  # each --grid alone, so the message names the one to fix
        try:
            grid_points(policy, parse_grid([spec]))
        except SweepError as exc:
            raise FlagError("--grid", spec, str(exc.__cause__ or exc)) from None
    grid = parse_grid(args.grid)
    if args.model and args.summary_text_file:
        raise FlagError(
            "--model", args.model, "writes the summaries: leave out --summary-text-file"
        )
    summarizer: Summarizer | None = (
        Fixed.from_file(args.summary_text_file) if args.summary_text_file else None
    )
    if args.model:
        calls = CallSettings(retries=args.retries, timeout=args.timeout)
        summarizer = LLM(chat_model("--model", args.model), calls=calls)
    flags.say_store_folder(args.db)
    result = sweep(
        args.paths,
        policy,
        grid,
        store=args.db,
        summarizer=summarizer,
        backend=args.backend,
        workers=args.workers,
        ray_address=args.ray_address,
        files=args.files,
    )
    failed = result.filter(pl.col("error").is_not_null())
    hidden = ("replay_key", "params", "summarizer") + (() if failed.height else ("error",))
    cols = [c for c in result.columns if c not in hidden]
    # The grid's values name the cells: cut, `fraction:0.5` and `fraction:0.55` look alike.
    print(render(result.select(cols), args.format, args.wide, whole=grid))
    if not failed.height:
        return 0
    print(
        fit(
            f"ctxlab: error: {failed.height} of {result.height} cells failed, their model "
            f"calls did not succeed (first: {clip(failed['error'][0], 160)}); run the same "
            "command again to retry only those"
        ),
        file=sys.stderr,
    )
    return 3
