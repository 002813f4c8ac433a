"""The documentation site builds with warnings as errors, and every code example in it runs:
each YAML example passes ``orbit check``, and the shell examples run in order, in an empty
folder, against a real server with the tutorial's worker (written from the page) connected.
The API reference is generated from the very document the server serves."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from orbit_actors.server.openapi import openapi_document

from .harness import ROOT, ServerProcess, WorkerProcess, wait_until

pytest.importorskip("material", reason="the docs extra is not installed: pip install -e '.[docs]'")

SOURCES = ROOT / "build" / "docs-src"
FENCE = re.compile(r'^```(\w+)(?:\s+title="([^"]+)")?\n(.*?)^```\n', re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page: its language, its title (a file name) and its text."""

    page: str
    language: str
    title: str | None
    text: str


def blocks(language: str | None = None) -> Iterator[Block]:
    for page in sorted(SOURCES.rglob("*.md")):
        for found in FENCE.finditer(page.read_text()):
            if language is None or found.group(1) == language:
                name = str(page.relative_to(SOURCES))
                yield Block(name, found.group(1), found.group(2), found.group(3))


@pytest.fixture(scope="module")
def built() -> Path:
    env = {**os.environ, "VENV": str(Path(sys.executable).parent.parent)}
    result = subprocess.run(["bash", str(ROOT / "scripts" / "docs.sh")], capture_output=True,
                            text=True, env=env, timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return ROOT / "build" / "site"


def test_the_site_builds_strictly_with_every_page(built: Path) -> None:
    for page in ("index.html", "tutorial/index.html", "reference/cli/index.html",
                 "reference/http-api/index.html", "reference/workflow-language/index.html",
                 "operations/faults/index.html", "decisions/index.html"):  # fmt: skip
        assert (built / page).exists(), page
    cli = (built / "reference" / "cli" / "index.html").read_text()
    assert "orbit schedule create" in cli and "Exit codes" in cli


def test_the_site_fetches_nothing_from_elsewhere(built: Path) -> None:
    page = (built / "tutorial" / "index.html").read_text()
    assert "fonts.googleapis.com" not in page and "fonts.gstatic.com" not in page


def test_every_yaml_example_passes_orbit_check(built: Path, tmp_path: Path) -> None:
    found = list(blocks("yaml"))
    assert found, "no YAML example found"
    for index, block in enumerate(found):
        path = tmp_path / (block.title or f"example-{index}.yaml")
        path.write_text(block.text)
        checked = subprocess.run([sys.executable, "-m", "orbit_actors.cli", "check", str(path)],
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
        assert checked.returncode == 0, f"{block.page}: {checked.stderr}"


def test_every_shell_example_runs_against_a_real_server(built: Path, tmp_path: Path) -> None:
    folder = tmp_path / "reader"
    folder.mkdir()
    for block in blocks():
        if block.title:  # files the reader is told to write
            (folder / block.title).write_text(block.text)
    server = ServerProcess(tmp_path).start()
    bin_folder = Path(sys.executable).parent
    env = {"PATH": f"{bin_folder}:/usr/bin:/bin", "ORBIT_URL": server.url, "HOME": str(tmp_path),
           "NO_COLOR": "1"}  # fmt: skip
    worker = WorkerProcess(server, "tutorial", target="shop:worker",
                           env={"PYTHONPATH": str(folder)})  # fmt: skip
    try:
        with server.client() as client:
            wait_until(lambda: any(w.online for w in client.workers()), what="the worker")
        scripts = [b for b in blocks("bash")]
        assert scripts, "no shell example found"
        for block in scripts:
            ran = subprocess.run(["bash", "-euo", "pipefail", "-c", block.text], cwd=folder,
                                 env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
            assert ran.returncode == 0, f"{block.page}:\n{block.text}\n{ran.stdout}{ran.stderr}"
        with server.client() as client:
            assert client.describe("o-1").status == "completed"
            refunded = {u.key: u.status for u in client.describe("big-2").units}
            assert refunded["compensate:charge"] == "succeeded"
    finally:
        worker.stop()
        server.stop()


def test_the_api_reference_is_generated_from_what_the_server_serves(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path).start()
    try:
        served = httpx.get(f"{server.url}/v1/openapi.json", timeout=30).json()
    finally:
        server.stop()
    assert served == openapi_document()
