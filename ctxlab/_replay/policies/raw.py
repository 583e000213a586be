"""`raw`: no compaction, the baseline every other policy is compared with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from ctxlab._replay.policies.engine import AUTO, Stage, StagePolicy

if TYPE_CHECKING:
    from ctxlab._trace import Trace


@dataclass(frozen=True)
class Raw(StagePolicy):
    """Every request is the whole history (the recorded agent without any compaction).

    `window` only matters to metrics (turns that would overflow it)."""

    name: ClassVar[str] = "raw"
    source: ClassVar[str] = "no compaction (the JetBrains paper's 'Raw agent' baseline)"

    window: int | None | Literal["auto"] = AUTO
    model: str | None = None

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """No stages."""
        return []


__all__ = ["Raw"]
