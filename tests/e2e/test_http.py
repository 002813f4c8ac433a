"""The HTTP/1.1 transport of a real server, spoken to over a raw socket: what clients other
than httpx send (pipelining, HTTP/1.0, HEAD, an h2c upgrade, oversized heads, garbage) is
answered, and the server keeps serving."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest
import trio

from .harness import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("http")).start()
    yield process
    process.stop()


def exchange(server: ServerProcess, data: bytes, until_close: bool = True) -> bytes:
    """Send ``data`` on a new connection and read what comes back until the server closes it
    (or, without ``until_close``, until the first answer's body is complete)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(data)
        received = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return received
            received += chunk
            if not until_close and _complete(received):
                return received


def _complete(raw: bytes) -> bool:
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return True


def bodies(raw: bytes) -> list[dict[str, object]]:
    """The JSON bodies of the answers in ``raw``, in order."""
    found = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))  # fmt: skip
        found.append(json.loads(rest[:length]))
        raw = rest[length:]
    return found


def test_pipelined_requests_are_answered_in_order(server: ServerProcess) -> None:
    start = json.dumps({"workflow": "missing"}).encode()
    data = (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        + b"POST /v1/executions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + b"Content-Length: %d\r\n\r\n%s" % (len(start), start)
        + b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    answers = bodies(exchange(server, data))
    assert answers[0] == {"status": "ok"}
    assert answers[1]["error"]["code"] == "WORKFLOW_NOT_FOUND"  # type: ignore[index]
    assert answers[2] == {"status": "ready"}


def test_an_http_1_0_request_is_answered_and_closed(server: ServerProcess) -> None:
    raw = exchange(server, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert raw.startswith(b"HTTP/1.1 200 OK\r\n") and b"connection: close" in raw
    assert bodies(raw) == [{"status": "ok"}]


def test_head_answers_without_a_body(server: ServerProcess) -> None:
    raw = exchange(server, b"HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert raw.startswith(b"HTTP/1.1 200 OK\r\n") and raw.endswith(b"\r\n\r\n")


def test_an_h2c_upgrade_is_answered_in_http_1_1(server: ServerProcess) -> None:
    start = json.dumps({"workflow": "missing"}).encode()
    data = (
        b"POST /v1/executions HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
        b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(start), start)
    )
    raw = exchange(server, data)
    assert raw.startswith(b"HTTP/1.1 404 ")
    assert bodies(raw)[0]["error"]["code"] == "WORKFLOW_NOT_FOUND"  # type: ignore[index]


def test_a_head_over_64_kib_is_431_and_garbage_is_400(server: ServerProcess) -> None:
    big = exchange(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 140_000)
    assert big.startswith(b"HTTP/1.1 431 ")
    assert bodies(big)[0]["error"]["code"] == "INVALID_REQUEST"  # type: ignore[index]
    garbage = exchange(server, b"\x16\x03\x01 not http at all\r\n\r\n")
    assert garbage.startswith(b"HTTP/1.1 400 ")
    assert "malformed HTTP request" in bodies(garbage)[0]["error"]["message"]  # type: ignore[index]
    assert bodies(exchange(server, b"GET /healthz HTTP/1.0\r\n\r\n")) == [{"status": "ok"}]


def test_answers_carry_a_date_and_keep_the_connection_open(server: ServerProcess) -> None:
    raw = exchange(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", until_close=False)
    head = raw.partition(b"\r\n\r\n")[0].decode().lower()
    assert "\r\ndate: " in head and "connection: close" not in head


def test_the_server_keeps_serving_after_all_of_the_above(server: ServerProcess) -> None:
    raw = exchange(server, b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert bodies(raw) == [{"status": "ready"}]
    assert "Traceback" not in server.log_text()


def test_a_body_far_over_the_limit_gets_its_413_not_a_reset(server: ServerProcess) -> None:
    body = b"x" * 3_000_000
    head = b"POST /v1/executions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
    raw = exchange(server, head + body)
    assert raw.startswith(b"HTTP/1.1 413 ")
    assert bodies(raw)[0]["error"]["code"] == "PAYLOAD_TOO_LARGE"  # type: ignore[index]


WAITING = """
workflow: h2-waits
version: 1.0.0
signals: {go: null}
steps: [{id: wait, await: go}]
"""


async def test_http2_with_prior_knowledge_carries_a_long_poll_beside_other_requests(
    server: ServerProcess,
) -> None:
    async with httpx.AsyncClient(base_url=server.url, http1=False, http2=True) as client:
        deployed = await client.post("/v1/definitions", content=WAITING,
                                     headers={"content-type": "application/yaml"})  # fmt: skip
        assert deployed.http_version == "HTTP/2" and deployed.status_code in (200, 201)
        started = await client.post("/v1/executions", json={"workflow": "h2-waits"})
        execution_id = started.json()["execution_id"]
        finished: list[httpx.Response] = []

        async def wait() -> None:
            finished.append(await client.get(f"/v1/executions/{execution_id}/wait?timeout=30"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            await trio.sleep(0.2)  # the long poll holds its stream; the others go on
            assert (await client.get("/healthz")).status_code == 200
            signal = f"/v1/executions/{execution_id}/signals/go"
            assert (await client.post(signal, json={"payload": 1})).status_code == 202
        assert finished[0].json()["status"] == "completed"
        missing = await client.get("/v1/executions/no-such")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
