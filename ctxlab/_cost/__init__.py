"""Tokens and cost: token counters (`tokens`, `openai_tokens`), model windows (`profiles`), what
a provider bills (`billing`, `calibration`), prices (`pricing`) and the prompt-cache
simulation's causes and checks (`cache_causes`, `cache_recorded`).

Private: the public API is `ctxlab` and its public subpackages (docs/architecture.md).
"""
