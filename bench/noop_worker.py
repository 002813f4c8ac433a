"""The worker of ``bench/e2e.py``: one no-op task that answers its input at once."""

from __future__ import annotations

from typing import Any

from orbit_actors import Worker

worker = Worker(worker_id="bench", concurrency=2000)


@worker.task("noop", version="1")
async def noop(value: Any) -> Any:
    return value


if __name__ == "__main__":
    worker.run()
