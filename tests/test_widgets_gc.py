"""A slider move pauses the cyclic garbage collector until its chart is sent, and always gives
it back: on at once where no event loop runs, after the redraw inside one, never turned on when
the user had turned it off, and back on when the replay refuses the settings."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from ctxlab.widgets import ThresholdExplorer
from tests.synthetic import make_trace


@pytest.fixture(scope="module")
def explorer() -> ThresholdExplorer:
    return ThresholdExplorer(make_trace(40, seed=3), debounce=0, freeze_gc=False)


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_without_a_loop_the_collector_is_back_on_when_the_move_returns(
    explorer: ThresholdExplorer,
) -> None:
    seen: list[bool] = []
    explorer.readout.observe(lambda _: seen.append(gc.isenabled()), names="value")
    explorer.control("trigger").value = 0.4
    assert seen and not any(seen)  # paused while the chart and readout were redrawn
    assert gc.isenabled()


def test_in_a_kernel_loop_the_collector_resumes_after_the_redraw(
    explorer: ThresholdExplorer,
) -> None:
    async def move() -> tuple[bool, bool]:
        explorer.control("trigger").value = 0.6
        during = gc.isenabled()  # the handler has returned; its chart is sent
        await asyncio.sleep(0)  # one turn of the loop: the deferred readouts run
        return during, gc.isenabled()

    during, after = asyncio.run(move())
    assert (during, after) == (False, True)


def test_a_collector_the_user_turned_off_stays_off(explorer: ThresholdExplorer) -> None:
    gc.disable()
    explorer.control("trigger").value = 0.5
    assert not gc.isenabled()


def test_refused_settings_give_the_collector_back(explorer: ThresholdExplorer) -> None:
    before = explorer.replays
    explorer.control("keep").value = explorer.control("keep").max
    explorer.control("trigger").value = explorer.control("trigger").min
    assert gc.isenabled()
    assert explorer.replays >= before


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
