"""Evaluating replays: typed facts and where each survives (`facts`, `survival`), probe questions
and their judge with any chat model (`probes`), recorded vs replayed compactions
(`check_replay`), and the metrics of one replay.

Private: the public API is `ctxlab` and its public subpackages (docs/architecture.md).
"""
