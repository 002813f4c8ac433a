"""Play the order saga example through the decider with a fake worker and print its history:
what the server will do, minus the server. ``python -m orbit_actors.testing.demo [FILE]``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..history.events import event_to_dict
from ..ir import compile_source
from .driver import Driver

ORDER = {
    "order_id": "o-1",
    "amount": 42.5,
    "items": [{"sku": "apple", "qty": 2}, {"sku": "pear", "qty": 1}],
}


def main(argv: list[str]) -> int:
    """Run the demo; returns the exit code."""
    path = Path(argv[0] if argv else "examples/order_saga.yaml")
    driver = Driver(compile_source(path.read_text(), str(path)), execution_id="order-1").start(
        ORDER
    )
    outputs = {"charge": {"charge_id": "ch_1"}, "ship": {"tracking": "TR-1"}}
    while driver.scheduled():
        key = driver.scheduled()[0]
        default = {"reservation_id": f"r-{key}"} if key.startswith("reserve") else {}
        driver.run_task(key, outputs.get(key, default))
    for event in driver.history:
        fields = {
            k: v
            for k, v in event_to_dict(event).items()
            if k not in ("seq", "timestamp_ms", "type")
        }
        print(f"{event.seq:>3}  {event.type:<22} {json.dumps(fields, sort_keys=True)[:90]}")
    state = driver.state
    print(f"\n{state.workflow} {driver.execution_id}: {state.status}, output {state.output}")
    return 0 if driver.state.status == "completed" else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
