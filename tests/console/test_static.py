"""The console's files as the server serves them: at ``/`` and ``/console/…``, with their
content types, revalidation headers, no token needed, nothing outside the package reachable,
and the API's own paths unchanged beside them."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from ..e2e.harness import ServerProcess
from .conftest import TOKEN


def _get(server: ServerProcess, path: str, **headers: str) -> httpx.Response:
    return httpx.get(server.url + path, headers=headers, timeout=30)


def test_the_page_is_served_at_the_root_without_a_token(guarded: ServerProcess) -> None:
    answer = _get(guarded, "/")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert '<script type="module" src="/console/js/main.js">' in answer.text


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/console/style.css", "text/css; charset=utf-8"),
     ("/console/js/main.js", "text/javascript; charset=utf-8"),
     ("/console/js/pages/execution.js", "text/javascript; charset=utf-8"),
     ("/console/favicon.svg", "image/svg+xml")],
)  # fmt: skip
def test_each_asset_has_its_content_type(
    guarded: ServerProcess, path: str, content_type: str
) -> None:
    answer = _get(guarded, path)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == content_type


def test_assets_are_revalidated_by_their_etag(guarded: ServerProcess) -> None:
    first = _get(guarded, "/console/js/api.js")
    assert first.headers["cache-control"] == "no-cache"
    again = _get(guarded, "/console/js/api.js", **{"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert again.content == b""


def test_the_page_carries_a_same_origin_content_security_policy(guarded: ServerProcess) -> None:
    headers = _get(guarded, "/").headers
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "path",
    ["/console/../pyproject.toml", "/console/%2e%2e/__init__.py", "/console/__init__.py",
     "/console//etc/passwd", "/console/js/../../server/app.py", "/console/", "/index.html"],
)  # fmt: skip
def test_no_path_reaches_a_file_that_is_not_a_console_asset(
    guarded: ServerProcess, path: str
) -> None:
    answer = httpx.get(guarded.url + path, timeout=30)
    assert answer.status_code in (401, 404)
    assert "error" in answer.json()


def test_a_write_to_an_asset_is_405_with_allow(guarded: ServerProcess) -> None:
    answer = httpx.post(guarded.url + "/console/js/main.js", timeout=30)
    assert answer.status_code == 405
    assert answer.headers["allow"] == "GET, HEAD"


def test_the_api_still_needs_its_token_beside_the_console(guarded: ServerProcess) -> None:
    assert _get(guarded, "/v1/executions").status_code == 401
    assert _get(guarded, "/metrics").status_code == 401
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert _get(guarded, "/v1/executions", **bearer).status_code == 200


def test_health_and_readiness_are_unchanged(guarded: ServerProcess) -> None:
    assert _get(guarded, "/healthz").json() == {"status": "ok"}
    assert _get(guarded, "/readyz").json() == {"status": "ready"}


def test_counts_by_status_come_with_the_list_when_asked(guarded: ServerProcess) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    plain = _get(guarded, "/v1/executions", **bearer).json()
    counted = _get(guarded, "/v1/executions?counts=true", **bearer).json()
    assert "counts" not in plain
    assert counted["counts"] == {}


def test_every_shipped_asset_is_declared_as_package_data() -> None:
    root = Path(__file__).resolve().parents[2]
    pyproject = (root / "pyproject.toml").read_text()
    folder = root / "orbit_actors" / "console"
    for found in folder.rglob("*"):
        if found.is_file() and found.suffix in (".html", ".css", ".js", ".svg", ".txt"):
            pattern = f'"console/{found.parent.relative_to(folder).as_posix()}/*{found.suffix}"'
            assert pattern.replace("/./", "/") in pyproject, found


def test_the_page_preloads_every_module() -> None:
    folder = Path(__file__).resolve().parents[2] / "orbit_actors" / "console"
    page = (folder / "index.html").read_text()
    for module in (folder / "js").rglob("*.js"):
        name = module.relative_to(folder).as_posix()
        assert f'<link rel="modulepreload" href="/console/{name}">' in page, name
