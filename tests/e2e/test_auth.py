"""Authentication and TLS through a real server: admin and worker tokens, bound worker tokens,
the loopback rule, token files, and TLS with a certificate made for the test."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trustme
from trio_websocket import ConnectionRejected, open_websocket_url

from .conftest import ECHO3
from .harness import ROOT, ServerProcess, WorkerProcess, wait_until

ADMIN, FREE, BOUND = "admin-secret", "worker-secret", "bound-secret"
GATED = """
workflow: gated-auth
version: 1.0.0
tasks: {gate: {version: "1"}}
steps: [{id: g, task: gate, input: {path: "${input.path}"}}]
"""


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder: Path = tmp_path_factory.mktemp("auth")
    tokens = folder / "workers.txt"
    tokens.write_text(f"# worker tokens\n{FREE}\nbound-1={BOUND}\n")
    server = ServerProcess(
        folder, "--admin-token", ADMIN, "--worker-tokens-file", str(tokens)
    ).start()
    with server.client(ADMIN) as client:
        client.deploy(ECHO3)
    yield server
    server.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def code(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"])


@pytest.mark.parametrize("headers", [{}, bearer("wrong"), bearer(FREE), {"Authorization": ADMIN}])
def test_the_api_needs_the_admin_token(guarded: ServerProcess, headers: dict[str, str]) -> None:
    for path in (
        "/v1/executions",
        "/v1/executions/nobody",
        "/v1/openapi.json",
        "/metrics",
        "/v1/nothing",
    ):
        response = httpx.get(f"{guarded.url}{path}", headers=headers)
        assert response.status_code == 401 and code(response) == "UNAUTHENTICATED", path
    assert "admin token" in httpx.get(f"{guarded.url}/v1/executions").json()["error"]["message"]


def test_the_admin_token_opens_the_api_and_health_is_always_open(guarded: ServerProcess) -> None:
    assert httpx.get(f"{guarded.url}/v1/executions", headers=bearer(ADMIN)).status_code == 200
    assert httpx.get(f"{guarded.url}/metrics", headers=bearer(ADMIN)).status_code == 200
    assert httpx.get(f"{guarded.url}/healthz").status_code == 200
    assert httpx.get(f"{guarded.url}/readyz").status_code == 200


async def test_the_worker_handshake_is_refused_with_401_without_a_worker_token(
    guarded: ServerProcess,
) -> None:
    for headers in ([], [(b"authorization", f"Bearer {ADMIN}".encode())]):
        with pytest.raises(ConnectionRejected) as rejected:
            async with open_websocket_url(
                f"{guarded.ws_url}/v1/workers/connect", extra_headers=headers
            ):
                pass
        assert rejected.value.status_code == 401


async def register(server: ServerProcess, token: str, worker_id: str) -> dict[str, Any]:
    headers = [(b"authorization", f"Bearer {token}".encode())]
    async with open_websocket_url(
        f"{server.ws_url}/v1/workers/connect", extra_headers=headers
    ) as ws:
        await ws.send_message(
            json.dumps(
                {
                    "type": "register",
                    "worker_id": worker_id,
                    "contracts": [{"task_name": "echo", "contract_version": "1"}],
                }
            )
        )
        with trio.fail_after(10):
            answer: dict[str, Any] = json.loads(await ws.get_message())
        await ws.send_message(json.dumps({"type": "unregister"}))
        return answer


async def test_a_bound_token_registers_only_as_its_worker(guarded: ServerProcess) -> None:
    refused = await register(guarded, BOUND, "someone-else")
    assert refused["type"] == "error" and refused["code"] == "FORBIDDEN"
    assert "bound to worker `bound-1`" in refused["message"]
    assert (await register(guarded, BOUND, "bound-1"))["type"] == "registered"
    assert (await register(guarded, FREE, "anyone"))["type"] == "registered"


def test_the_http_fallback_needs_a_worker_token_and_a_bound_one_only_reports_its_own(
    guarded: ServerProcess, workers: list[WorkerProcess]
) -> None:
    log, gate = guarded.folder / "starts.jsonl", guarded.folder / "open"
    workers.append(
        WorkerProcess(guarded, "free-1", env={"ORBIT_WORKER_TOKEN": FREE, "E2E_LOG": str(log)})
    )
    with guarded.client(ADMIN) as client:
        client.deploy(GATED)
        execution_id = client.start("gated-auth", input={"path": str(gate)}).execution_id
        wait_until(log.exists, what="the free worker to take the task")
        token = json.loads(log.read_text().splitlines()[0])["token"]
        url = f"{guarded.url}/v1/tasks/{token}/complete"
        assert httpx.post(url, json={"output": {}}).status_code == 401
        assert httpx.post(url, json={"output": {}}, headers=bearer(ADMIN)).status_code == 401
        forbidden = httpx.post(url, json={"output": {}}, headers=bearer(BOUND))
        assert forbidden.status_code == 403 and code(forbidden) == "FORBIDDEN"
        gate.touch()
        assert client.wait(execution_id, timeout=30).status == "completed"


def test_the_cli_and_the_sdk_pass_their_tokens(
    guarded: ServerProcess, workers: list[WorkerProcess]
) -> None:
    workers.append(WorkerProcess(guarded, "sdk-1", env={"ORBIT_WORKER_TOKEN": FREE}))
    env = {"ORBIT_URL": guarded.url, "ORBIT_TOKEN": ADMIN, "PATH": "/usr/bin:/bin"}
    started = subprocess.run([sys.executable, "-m", "orbit_actors.cli", "start", "three", "--input", '{"n": 3}', "--wait"],
                             capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)  # fmt: skip
    assert started.returncode == 0, started.stderr
    denied = subprocess.run([sys.executable, "-m", "orbit_actors.cli", "list", "--token", "wrong"],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)  # fmt: skip
    assert denied.returncode == 1 and denied.stderr.startswith("error: UNAUTHENTICATED")


@pytest.mark.parametrize(
    ("flags", "missing"),
    [((), "--admin-token and --worker-token"), (("--admin-token", "a"), "--worker-token"),
     (("--worker-token", "w"), "--admin-token")],
)  # fmt: skip
def test_listening_beyond_loopback_needs_both_tokens(
    tmp_path: Path, flags: tuple[str, ...], missing: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "orbit_actors.cli", "server", "--db", str(tmp_path / "x.db"), "--bind", "0.0.0.0:0", *flags],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: refusing to listen on 0.0.0.0:0 without {missing}")
    assert "--insecure" in result.stderr and "Traceback" not in result.stderr


def test_insecure_accepts_the_risk(tmp_path: Path) -> None:
    result = subprocess.Popen(
        [sys.executable, "-m", "orbit_actors.cli", "server", "--db", str(tmp_path / "x.db"), "--bind", "0.0.0.0:0", "--insecure"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert result.stdout is not None and "Orbit is ready on" in result.stdout.readline()
    finally:
        result.kill()
        result.wait(30)


def test_tls_with_a_certificate_made_for_the_test(
    tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    authority = trustme.CA()
    certificate = authority.issue_cert("127.0.0.1", "localhost")
    cert, key, ca = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    certificate.cert_chain_pems[0].write_to_path(str(cert))
    certificate.private_key_pem.write_to_path(str(key))
    authority.cert_pem.write_to_path(str(ca))
    server = ServerProcess(tmp_path, "--certfile", str(cert), "--keyfile", str(key)).start()
    try:
        assert server.url.startswith("https://")
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{server.url}/healthz")  # not trusted without the CA
        workers.append(WorkerProcess(server, "tls-1", env={"ORBIT_CA_FILE": str(ca)}))
        with server.client(verify=str(ca)) as client:
            client.deploy(ECHO3)
            execution_id = client.start("three", input={"n": 1}).execution_id
            assert client.wait(execution_id, timeout=30).status == "completed"
    finally:
        server.stop()
