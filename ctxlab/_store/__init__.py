"""Storing: the DuckDB store (`store`, `schema`, `safety`) and sweeps of parameter grids into it
(`sweep`, `sweep_folders`, local or on Ray).

Private: the public API is `ctxlab` and its public subpackages (docs/architecture.md).
"""
