"""One module per `ctxlab` subcommand; each defines `register(subparsers)` and `run(args)`.

`ctxlab` imports every module here to build its parser, so a module imports at its top only
what argparse set-up needs (`ctxlab.defaults`, `ctxlab.errors`, `ctxlab.flags`,
`ctxlab.output`, `ctxlab.specs`, and `ctxlab.tables`, which prints every table); the loader,
store, replay engine and policies are imported inside `run`, and a command pays only for what
it runs (`tests/test_cli_startup.py`). Errors from bad input are raised, not printed:
`ctxlab.cli.main` prints them all in one place.
"""
