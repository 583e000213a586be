"""`ctxlab.tune`: a multi-objective search over a policy's parameters on the user's traces.

`space.py` reads the tuned parameters into Optuna distributions, `objectives.py` measures one
replay (cost, needed-but-lost facts, peak, ...), `runner.py` runs the replays serially, in
local worker processes or on Ray, `study.py` drives Optuna's ask-and-tell loop, stores every
trial in the DuckDB store (`ctxlab._store.studies`) and gives a `TuneStudy`.
"""
