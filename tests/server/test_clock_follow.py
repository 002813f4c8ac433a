"""The server follows a forward step of the system clock and says when it stepped back."""

from __future__ import annotations

import logging

import pytest
import trio
from trio.testing import MockClock

from orbit_actors.actors.clock import Clock
from orbit_actors.server.serve import follow_system_clock

EPOCH = 1_767_225_600_000  # 2026-01-01T00:00Z


async def test_the_server_follows_a_forward_step_and_warns_once_about_a_backward_one(
    autojump_clock: MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    started, step = trio.current_time(), [0]

    def system() -> int:
        return EPOCH + int((trio.current_time() - started) * 1000) + step[0]

    clock = Clock(system=system)
    caplog.set_level(logging.WARNING, logger="orbit.server")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(follow_system_clock, clock, 10.0)
        await trio.sleep(5)
        step[0] = 3_600_000
        await trio.sleep(10)
        assert clock.now_ms() == system()  # followed within one check
        step[0] = 0  # back by an hour: not followed, said once
        await trio.sleep(35)
        assert clock.now_ms() == system() + 3_600_000
        nursery.cancel_scope.cancel()
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "the system clock stepped forward by 3600.0 s; Orbit follows",
        "the system clock stepped back by 3600.0 s; Orbit keeps its own time until it "
        "restarts, so that no history goes back in time",
    ]
