"""A slider move leaves the garbage collector as the user set it (no pausing, no freezing),
and frees the replay it replaced after the redraw by reference counting alone."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from ctxlab.widgets import ThresholdExplorer
from tests.synthetic import make_trace


@pytest.fixture(scope="module")
def explorer() -> ThresholdExplorer:
    return ThresholdExplorer(make_trace(40, seed=3), debounce=0)


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


@pytest.mark.parametrize("enabled", [True, False])
def test_a_move_leaves_the_collector_alone(explorer: ThresholdExplorer, enabled: bool) -> None:
    (gc.enable if enabled else gc.disable)()
    frozen = gc.get_freeze_count()
    seen: list[bool] = []
    explorer.readout.observe(lambda _: seen.append(gc.isenabled()), names="value")

    async def move() -> None:
        explorer.control("trigger").value = 0.4 if enabled else 0.5
        await asyncio.sleep(0)

    asyncio.run(move())
    assert seen and all(s == enabled for s in seen)
    assert gc.isenabled() == enabled and gc.get_freeze_count() == frozen


def test_in_a_kernel_loop_the_replaced_replay_is_freed_after_the_redraw(
    explorer: ThresholdExplorer,
) -> None:
    """The replay a move replaces (and the run that made the new one) outlive the move's
    handler and are freed at the next turn of the loop, by reference counting alone."""
    import weakref

    gc.disable()  # only reference counting may free it

    async def move() -> tuple[bool, bool]:
        old = weakref.ref(explorer.replay)
        explorer.control("trigger").value = 0.45
        during = old() is not None  # the handler has returned; its chart is sent
        await asyncio.sleep(0)
        return during, old() is None

    assert asyncio.run(move()) == (True, True)
