"""Replaying traces: `replay(trace, policy)` runs one trace under one policy into a `Replay`;
`policies/` holds the stage engine and every policy, `summarizers` what writes a summary, and
`requests`/`timeline` read a replay's events back into requests and per-message histories.

Private: the public API is `ctxlab` and its public subpackages (docs/architecture.md).
"""
