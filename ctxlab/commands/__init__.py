"""One module per `ctxlab` subcommand; each defines `register(subparsers)` and `run(args)`."""
