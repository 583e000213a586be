"""One module per `ctxlab` subcommand; each defines `register(subparsers)` and `run(args)`.

`ctxlab` imports every module here to build its parser, so a module imports at its top only
what argparse set-up needs (`ctxlab._store.defaults`, `ctxlab._errors`, `ctxlab._cli.flags`,
`ctxlab._cli.output`, `ctxlab._replay.specs`, and `ctxlab._cli.tables`, which prints every table);
the loader,
store, replay engine and policies are imported inside `run`, and a command pays only for what
it runs (`tests/test_cli_startup.py`). Errors from bad input are raised, not printed:
`ctxlab._cli.main.main` prints them all in one place.
"""
