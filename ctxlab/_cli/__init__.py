"""The `ctxlab` command (`main`): one module per subcommand in `commands/`, its flags, error
lines and terminal tables.

Private: the public API is `ctxlab` and its public subpackages (docs/architecture.md).
"""
