"""Instructions per execution of the two lines an execution writes at the server's default info
level ("execution started", "execution completed"), alone: the event log's observers write them
through the handler ``configure_logging`` installs, to stderr on ``/dev/null`` as in
``bench/instructions.py``. A line costs ~28 K; the server burst's noise (~35 K) hides cuts of a
few K, which this judges.

    python bench/log_lines.py [--executions N] [--log-format text|json]
    python bench/log_lines.py --instructions [--executions N] [--log-format text|json]

``--instructions`` runs the script twice under ``valgrind --tool=callgrind`` (with 200 and with
200 + N executions, N 2,000 by default) and prints the difference of the "Collected" totals
divided by N. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from types import SimpleNamespace

from callgrind import per_execution

from orbit_actors.history.events import WorkflowCompleted
from orbit_actors.history.state import ExecutionState
from orbit_actors.observe.event_log import LOGGED
from orbit_actors.observe.logformat import configure_logging


def run(executions: int, log_format: str) -> None:
    """Write the lines of ``executions`` executions."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # stderr, as the bench's server has it
    configure_logging("info", log_format)
    state = ExecutionState()
    state.execution_id, state.workflow, state.run = (
        "3198ae4d-7401-479c-b994-28cc8af96a13",
        "three",
        1,
    )
    created = SimpleNamespace(type="WorkflowCreated", run=1)  # all its observer reads
    completed = WorkflowCompleted(seq=9, timestamp_ms=0, output=None)
    started, ended = LOGGED["WorkflowCreated"], LOGGED["WorkflowCompleted"]
    for _ in range(executions):
        started(state, created)
        ended(state, completed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--executions", type=int, default=None)
    parser.add_argument("--log-format", choices=["text", "json"], default="text")
    parser.add_argument("--instructions", action="store_true")
    args = parser.parse_args()
    if args.instructions:
        more = args.executions or 2000
        found = per_execution(__file__, 200, more, "--log-format", args.log_format)
        print(json.dumps({"log_format": args.log_format, "instructions_per_exec": round(found)}))
        return
    executions = args.executions if args.executions is not None else 2000
    began = time.perf_counter()
    run(executions, args.log_format)
    seconds = time.perf_counter() - began
    print(
        json.dumps(
            {"log_format": args.log_format, "us_per_exec": seconds / max(executions, 1) * 1e6}
        )
    )


if __name__ == "__main__":
    main()
