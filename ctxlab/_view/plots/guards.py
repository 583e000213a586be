"""What figures and widgets refuse before drawing: a replay paired with a trace it does not
replay. Drawn anyway, the recorded curve and the message strip would silently belong to
another run, so the mismatch is named instead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxlab._replay.replay import Counted, Replay
    from ctxlab._trace import Trace


def same_trace(replays: Sequence[Replay | Counted], trace: Trace | None, what: str) -> None:
    """Raise `ValueError` naming both trace ids unless every replay in `replays` replays one
    trace and `trace` (when given) is that trace."""
    ids = list(dict.fromkeys(r.trace_id for r in replays))
    if len(ids) > 1:
        raise ValueError(
            f"{what}: the replays are of different traces ({', '.join(map(repr, ids))}); "
            "compare policies on one trace"
        )
    if trace is not None and ids and trace.trace_id != ids[0]:
        raise ValueError(
            f"{what}: the replay is of trace {ids[0]!r} but the trace given is "
            f"{trace.trace_id!r}; pass the trace the replay was made from (replay.trace)"
        )


__all__ = ["same_trace"]
