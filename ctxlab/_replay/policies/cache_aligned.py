"""`cache_aligned`: let a summarising stage compact only when the prompt cache is cold anyway.

A compaction rewrites the start of the request, so every token after it is written to the
cache again (at 1.25x the input price on Anthropic) instead of read (0.1x). Two moments make
that rewrite free or unavoidable: a call whose cache is cold regardless (the first call, the
recorded model changed, or more time passed since the previous call than the provider's
cache lifetime, `CacheRule.ttl_seconds`), and a call whose request would not fit the window.
`CacheAligned` wraps a stage that keeps its compacted history (`RebuildStage`, LangChain's
`SummarizeStage`: anything with a `view(items)` giving the current request without deciding)
and lets it decide only at those calls; at every other call it sends the stage's current view.

The summarising presets take `cache_aligned=True` (default False; `params()` leaves it out
while False, so replays at defaults keep their identity in the store):

    ClaudeCode(cache_aligned=True)

Idle gaps come from recorded start times (`Turn.started_at`); a trace without them has no
cold calls but its first, so an aligned preset compacts only when the window forces it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ctxlab._cost.pricing import cache_rule
from ctxlab._replay.policies.engine import KEEPS_MARKS, declares

if TYPE_CHECKING:
    from ctxlab._replay.policies.engine import Context, Item, Stage
    from ctxlab._trace import Trace, Turn


class Viewing(Protocol):
    """A stage that can tell its current request without deciding anything."""

    def apply(self, items: list[Item], ctx: Context) -> list[Item]: ...

    def view(self, items: list[Item]) -> list[Item]: ...


class CacheAligned:
    """`inner` decides (may compact) only at a cold call or when its current request would
    exceed `window`; otherwise its current view is sent unchanged."""

    def __init__(self, inner: Viewing, ttl_seconds: float | None, window: int | None) -> None:
        # imported here: ctxlab._cost.cache_causes reads ctxlab._replay.policies.base, whose package
        # imports the presets that import this module
        from ctxlab._cost.cache_causes import idle_gaps, model_switches

        self._gaps, self._switches = idle_gaps, model_switches
        self.inner = inner
        self.ttl = ttl_seconds
        self.window = window
        self.previous: Turn | None = None
        self.held = 0
        """Calls at which the inner stage was not asked (for tests and reports)."""

    @property
    def capabilities(self) -> frozenset[str]:
        """What the inner stage keeps of its lists is all this wrapper keeps (it keeps none);
        it never jumps, as it asks its inner stage at other calls than the threshold."""
        return frozenset({KEEPS_MARKS}) if declares(self.inner, KEEPS_MARKS) else frozenset()

    def cold(self, turn: Turn) -> bool:
        """Whether `turn` finds the cache cold: the first call, a model switch or an idle
        gap since the previous call this stage saw."""
        previous, self.previous = self.previous, turn
        if previous is None:
            return True
        pair = (previous, turn)
        return self._switches(pair)[1] or self._gaps(pair, self.ttl)[1]

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        """The inner stage's request, deciding only when the cache is cold or it must."""
        if self.cold(ctx.turn):
            return self.inner.apply(items, ctx)
        view = self.inner.view(items)
        if self.window is not None and ctx.count(view) > self.window:
            return self.inner.apply(items, ctx)
        self.held += 1
        return view


def aligned(stages: list[Stage], policy: Any, trace: Trace, window: int | None) -> list[Stage]:
    """`stages` with each viewing stage wrapped in `CacheAligned` when `policy.cache_aligned`
    is set (the lifetime from the cache rule of the policy's or the trace's model)."""
    if not getattr(policy, "cache_aligned", False):
        return stages
    ttl = cache_rule(getattr(policy, "model", None) or trace.model).ttl_seconds
    return [
        CacheAligned(s, ttl, window) if callable(getattr(s, "view", None)) else s  # type: ignore[arg-type]
        for s in stages
    ]


def aligned_params(params: dict[str, Any]) -> dict[str, Any]:
    """`params` without `cache_aligned` while it is False: a preset at its defaults keeps the
    parameters (and so the store identity) it had before the option existed."""
    if not params.get("cache_aligned", False):
        params.pop("cache_aligned", None)
    return params


__all__ = ["CacheAligned", "aligned", "aligned_params"]
