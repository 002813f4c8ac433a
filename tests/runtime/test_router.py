"""The router: one table says how every forwarded command is carried out and answered."""

from __future__ import annotations

import typing
from typing import Any

import trio

from orbit_actors.decide.transitions import Verdict
from orbit_actors.supervisor import forwarding as fw
from orbit_actors.supervisor.registry import Registry
from orbit_actors.supervisor.router import Remote, Router, routes
from orbit_actors.testing import MemoryStore


def _forwarded_types() -> set[type[Any]]:
    union = typing.get_args(fw.Forwarded)[0]
    return set(typing.get_args(union))


async def _resume(execution_id: str) -> None:
    pass


async def _wait(execution_id: str, timeout: float) -> Any:
    raise AssertionError("not called")


async def test_every_forwarded_command_has_exactly_one_route() -> None:
    async with trio.open_nursery() as nursery:
        registry = Registry(nursery, MemoryStore())
        table = routes(registry, _resume, _wait, Remote())
        assert set(table) == _forwarded_types()
        nursery.cancel_scope.cancel()


async def test_a_result_for_no_live_execution_is_answered_here_as_json() -> None:
    async with trio.open_nursery() as nursery:
        registry = Registry(nursery, MemoryStore())
        router = Router(registry, None, nursery, lambda token: None)
        router.routes = routes(registry, _resume, _wait, Remote())
        command = fw.ResultCommand(token="abc@gone", output=1)
        answer = await router.carry_out("gone", command)
        assert answer["accepted"] is False and answer["token"] == "abc@gone"
        verdict = await router.send("gone", command)
        assert isinstance(verdict, Verdict) and not verdict.accepted
        nursery.cancel_scope.cancel()
