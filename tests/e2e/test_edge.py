"""The limits of http-api.md ("Connection limits") that the API and the worker gateway keep, on a
real server: nested JSON, registration bounds, 405 with ``Allow`` — each refusal with the spec's
code, and the server serving on beside it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from .conftest import ECHO3
from .harness import ServerProcess
from .test_protocol import CONTRACTS, peer

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def edge_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server for the module, with the default limits and ``three`` deployed."""
    server = ServerProcess(tmp_path_factory.mktemp("edge")).start()
    post(server, "/v1/definitions", ECHO3, "application/yaml").raise_for_status()
    yield server
    server.stop()


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def post(
    server: ServerProcess, path: str, body: str, content_type: str = "application/json"
) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", content=body, headers={"content-type": content_type})


def assert_serving(server: ServerProcess) -> None:
    assert httpx.get(f"{server.url}/v1/definitions", timeout=5).status_code == 200


@pytest.mark.parametrize("path", ["/v1/executions", "/v1/schedules", "/v1/tasks/t-1/complete"])
def test_json_nested_100000_deep_is_400_invalid_request(
    edge_server: ServerProcess, path: str
) -> None:
    answer = post(edge_server, path, '{"workflow": "three", "input": ' + DEEP + "}")
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "INVALID_REQUEST"
    assert "deeper than 64" in answer.json()["error"]["message"]
    assert_serving(edge_server)


def test_a_definition_nested_too_deep_is_400_invalid_ir(edge_server: ServerProcess) -> None:
    answer = post(edge_server, "/v1/definitions", '{"workflow": ' + DEEP + "}")
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "INVALID_IR"
    assert_serving(edge_server)


def test_json_nested_64_deep_is_taken_and_65_refused(edge_server: ServerProcess) -> None:
    body = {"workflow": "three", "input": {"n": nested(62)}}  # the body and input are 2 levels
    assert post(edge_server, "/v1/executions", json.dumps(body)).status_code == 201
    body["input"] = {"n": nested(63)}
    assert post(edge_server, "/v1/executions", json.dumps(body)).status_code == 400


async def test_a_frame_nested_too_deep_is_an_invalid_request_error_and_the_socket_stays(
    edge_server: ServerProcess,
) -> None:
    async with peer(edge_server) as worker:
        error = await worker.ask('{"type": "heartbeat", "x": ' + DEEP + "}", "error")
        assert error["code"] == "INVALID_REQUEST"
        assert (await worker.register("after-deep"))["accepted"] is True


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"worker_id": "w" * 201}, "longer than 200"),
        ({"contracts": [{"task_name": f"t{i}", "contract_version": "1"} for i in range(1001)]}, "at most 1000"),
        ({"concurrency": 0}, "concurrency must be 1 to 10,000"),
        ({"concurrency": 10**12}, "concurrency must be 1 to 10,000"),
    ],
)  # fmt: skip
async def test_a_registration_beyond_its_bounds_is_invalid_request(
    edge_server: ServerProcess, fields: dict[str, Any], says: str
) -> None:
    async with peer(edge_server) as worker:
        register = {"type": "register", "worker_id": "bounded", "concurrency": 8,
                    "contracts": CONTRACTS, **fields}  # fmt: skip
        error = await worker.ask(register, "error")
        assert error["code"] == "INVALID_REQUEST" and says in error["message"]
        assert (await worker.register("bounded"))["accepted"] is True


def test_a_405_names_the_allowed_methods(edge_server: ServerProcess) -> None:
    answer = httpx.delete(f"{edge_server.url}/v1/definitions")
    assert answer.status_code == 405 and answer.headers["allow"] == "GET, POST"
