"""The worker of ``bench/e2e.py``: one no-op task that answers its input at once. Its
concurrency is 2,000, or ``ORBIT_BENCH_CONCURRENCY`` (a burst larger than it queues tasks in
the server's dispatcher: ``bench/e2e.py --worker-concurrency``)."""

from __future__ import annotations

import os
from typing import Any

from orbit_actors import Worker

CONCURRENCY = int(os.environ.get("ORBIT_BENCH_CONCURRENCY", "2000"))

worker = Worker(worker_id="bench", concurrency=CONCURRENCY)


@worker.task("noop", version="1")
async def noop(value: Any) -> Any:
    return value


if __name__ == "__main__":
    worker.run()
