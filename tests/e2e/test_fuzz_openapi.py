"""Schemathesis over ``/v1/openapi.json`` on a real server with both kinds of token: requests
generated from the document (and against it), sent with the right token and without one, never
get a 5xx, and every answer is one the document declares (status, content type, schema); a body
the document allows is not refused as malformed, and one it forbids is."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import AuthContext, Case, CheckContext, Response
from schemathesis.specs.openapi.checks import positive_data_acceptance

from orbit_actors.server.openapi import openapi_document

from .conftest import ECHO3
from .harness import ServerProcess

ADMIN, WORKER = "fuzz-admin-token", "fuzz-worker-token"
EXAMPLES = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck),
                    derandomize=True, database=None)  # fmt: skip


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    server = ServerProcess(folder, "--admin-token", ADMIN, "--worker-token", WORKER).start()
    with server.client(token=ADMIN) as client:
        client.deploy(ECHO3)
    yield server
    server.stop()


# the document the server serves (checked below), loaded once so that cases are parametrized
with_token = schemathesis.openapi.from_dict(openapi_document())
without_token = schemathesis.openapi.from_dict(openapi_document())


@with_token.auth()
class Tokens:
    """The admin token, or the worker token on the worker endpoints."""

    def get(self, case: Case[Any], ctx: AuthContext) -> str:
        return WORKER if case.path.startswith("/v1/tasks/") else ADMIN

    def set(self, case: Case[Any], data: str, ctx: AuthContext) -> None:
        case.headers["Authorization"] = f"Bearer {data}"


def test_the_fuzzed_document_is_the_one_served(fuzzed: ServerProcess) -> None:
    served = httpx.get(
        f"{fuzzed.url}/v1/openapi.json", headers={"authorization": f"Bearer {ADMIN}"}
    )
    assert served.json() == openapi_document()


@schemathesis.check
def valid_requests_are_not_refused_as_malformed(
    ctx: CheckContext, response: Response, case: Case[Any]
) -> bool | None:
    """A request the document allows may be refused for what a schema cannot say (an unknown
    workflow, a cron expression that does not parse, an input its workflow's schema refuses:
    ``INVALID_IR``, ``INVALID_SCHEDULE``, ``INVALID_INPUT``…), never as malformed. This stands
    in for schemathesis's own positive-data check, which takes every 400 for a malformed one."""
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return None
    if response.status_code == 400:
        error = response.json()["error"]
        if error["message"].startswith("cursor "):
            return None  # opaque: only a next_cursor the server gave is one, which no schema says
        assert error["code"] != "INVALID_REQUEST", f"refused as malformed: {error['message']}"
    return None


CHECKS: dict[str, Any] = {
    "excluded_checks": [positive_data_acceptance],
    "additional_checks": [valid_requests_are_not_refused_as_malformed],
}


@with_token.parametrize()
@EXAMPLES
def test_requests_with_the_right_token_get_documented_answers(
    case: Case[Any], fuzzed: ServerProcess
) -> None:
    case.call_and_validate(base_url=fuzzed.url, **CHECKS)


@without_token.parametrize()
@EXAMPLES
def test_requests_without_a_token_get_documented_answers(
    case: Case[Any], fuzzed: ServerProcess
) -> None:
    case.headers.pop("Authorization", None)
    case.call_and_validate(base_url=fuzzed.url, **CHECKS)
