"""Looking: figures (`plots/`), notebook widgets (`widgets/`), event cards, the palette and
HTML escaping every rendered string goes through.

Private: the public API is `ctxlab` and its public subpackages (docs/architecture.md).
"""
