"""Instructions the server's edge spends on one ``POST /v1/executions?wait=60``, without the
runtime: the request parsed (``parse``), or routed, validated and answered by the app with a
runtime that starts and finishes at once (``answer``, the fake runtime's own cost left out).

    python bench/edge.py [parse|answer]

Each part runs 1,000 and 3,000 times under ``valgrind --tool=callgrind``; the difference of the
two totals over 2,000 is the part's instructions per request (``bench/instructions.py`` counts
the whole server). Ends with one JSON line.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import trio

from orbit_actors.http.http1 import RequestReader
from orbit_actors.server.app import AppState, OrbitApp
from orbit_actors.views.models import ExecutionResult

BODY = b'{"workflow":"noop3","input":{"n":12}}'
REQUEST = (
    b"POST /v1/executions?wait=60 HTTP/1.1\r\nHost: 127.0.0.1:7233\r\n"
    b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(BODY), BODY)
)


class FakeRuntime:
    """Starts and finishes every execution at once."""

    async def start(self, workflow: str, **_: Any) -> tuple[str, bool]:
        """A fixed id, created."""
        return "0192d0c1-7a6e-7cc1-9f00-1234567890ab", True

    async def wait(self, execution_id: str, timeout: float) -> ExecutionResult:
        """A completed result."""
        return ExecutionResult(
            execution_id=execution_id, workflow="noop3", version="1", status="completed", run=1,
            started_at_ms=1, closed_at_ms=2, parent_id=None, schedule_id=None, output={"n": 12},
        )  # fmt: skip


async def run(part: str, n: int) -> None:
    """``part`` ``n`` times."""
    app = OrbitApp(AppState(runtime=FakeRuntime()))  # type: ignore[arg-type]
    reader = RequestReader(10**7)
    reader.feed(REQUEST)
    request = reader.next_request()
    assert request is not None
    runtime = FakeRuntime()
    for _ in range(n):
        if part == "parse":
            reader.feed(REQUEST)
            reader.next_request()
        elif part == "answer":
            await app.respond(request)
        else:  # the fake runtime's own cost, taken off the answer's
            await runtime.wait("x", 60)


def counted(part: str, n: int) -> int:
    """Instructions of a whole run of ``part`` ``n`` times under callgrind."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         __file__, "--run", part, str(n)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found, done.stderr
    return int(found.group(1))


def per_request(part: str) -> int:
    """Instructions per request of ``part``."""
    return (counted(part, 3000) - counted(part, 1000)) // 2000


def main() -> None:
    if sys.argv[1:2] == ["--run"]:
        trio.run(run, sys.argv[2], int(sys.argv[3]))
        return
    parts = sys.argv[1:] or ["parse", "answer"]
    figures = {}
    for part in parts:
        count = per_request(part)
        if part == "answer":
            count -= per_request("fake")
        figures[f"{part}_K_instructions"] = round(count / 1000, 1)
        print(f"{part}: {count / 1000:.1f} K instructions per request")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
