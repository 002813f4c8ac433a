"""Benchmark of the pure core: decide-to-fixpoint + apply, events per second.

    python bench/core.py [--quick]

Prints events/s for a 10-step workflow and for a 1,000-element fan-out, and the cost per event
at history lengths ~100 and ~10,000 of one execution (which must not grow: no rescans of the
history or of every unit per event). Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from orbit_actors.decide import decide_to_fixpoint, invocation
from orbit_actors.decide import transitions as cmd
from orbit_actors.history import ExecutionState, apply
from orbit_actors.history.events import Event
from orbit_actors.ir import CompiledDefinition, compile_source

TEN_STEPS = "\n".join(
    ["workflow: ten", "version: 1.0.0", 'tasks: {work: {version: "1"}}', "steps:"]
    + [f'  - {{id: s{i}, task: work, input: {{n: "${{input.n}}", i: {i}}}}}' for i in range(10)]
    + ['output: {last: "${steps.s9.output}"}']
)
FAN_OUT = """
workflow: fan
version: 1.0.0
tasks: {work: {version: "1"}}
limits: {max_fan_out: 100000}
steps:
  - {id: each, for: input.items, task: work, input: {item: "${item}", at: "${index}"}}
  - {id: total, value: "${size(steps.each.output)}"}
"""


class Execution:
    """One execution driven as the runtime will: command events, then decide to a fixpoint."""

    def __init__(self, definition: CompiledDefinition, payload: object, now: int = 0) -> None:
        self.definition, self.now, self.events = definition, now, 0
        self.state = ExecutionState()
        limits = cmd.effective_limits(cmd.ServerLimits(max_fan_out=100_000), definition)
        start = cmd.start_run(
            definition, execution_id="bench", input=payload, now=now, limits=limits
        )
        self.scheduled: list[str] = []
        self.record(start)
        self.tokens = 0

    def record(self, events: list[Event]) -> None:
        for event in events:
            apply(self.state, event)
        decided = decide_to_fixpoint(self.state, self.definition, self.now)
        self.scheduled += [
            e.step for e in decided
            if e.type == "StepScheduled" and invocation(self.state, self.definition, e.step)
        ]  # fmt: skip
        self.events += len(events) + len(decided)

    def work_one(self) -> bool:
        """Dispatch and complete the oldest scheduled unit; False when none is left."""
        if not self.scheduled:
            return False
        key = self.scheduled.pop(0) if len(self.scheduled) < 64 else self.scheduled.pop()
        self.tokens += 1
        token = f"t{self.tokens}"
        dispatched = cmd.dispatch(
            self.state, self.definition, key, token=token, worker_id="w", session="s", now=self.now
        )
        assert dispatched is not None
        self.record(dispatched)
        events, ack = cmd.report_result(
            self.state, self.definition, token, now=self.now, output={"ok": key}
        )
        assert ack.accepted
        self.record(events)
        return True


def run_to_end(make: Callable[[], Execution]) -> tuple[int, float]:
    """Events and seconds to run executions from ``make`` to completion."""
    started = time.perf_counter()
    execution = make()
    while execution.work_one():
        pass
    assert execution.state.status == "completed", execution.state.status
    return execution.events, time.perf_counter() - started


def events_per_second(make: Callable[[], Execution], repeat: int) -> float:
    total_events, total_seconds = 0, 0.0
    for _ in range(repeat):
        events, seconds = run_to_end(make)
        total_events += events
        total_seconds += seconds
    return total_events / total_seconds


def cost_per_event_at(history_lengths: tuple[int, ...], window: int) -> dict[int, float]:
    """Seconds per event of one long execution, measured over ``window`` events starting at each
    history length (a fan-out wide enough to reach the longest)."""
    items = max(history_lengths) // 3 + window
    execution = Execution(compile_source(FAN_OUT), {"items": list(range(items))})
    costs: dict[int, float] = {}
    for length in sorted(history_lengths):
        while execution.state.last_seq < length:
            execution.work_one()
        first_event, started = execution.events, time.perf_counter()
        while execution.events - first_event < window:
            execution.work_one()
        costs[length] = (time.perf_counter() - started) / (execution.events - first_event)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    args = parser.parse_args()
    repeat = 3 if args.quick else 30
    ten = compile_source(TEN_STEPS)
    fan = compile_source(FAN_OUT)
    ten_rate = events_per_second(lambda: Execution(ten, {"n": 1}), repeat * 10)
    fan_rate = events_per_second(
        lambda: Execution(fan, {"items": list(range(1000))}), max(1, repeat // 10)
    )
    costs = cost_per_event_at((100, 10_000), window=600 if args.quick else 3000)
    ratio = costs[10_000] / costs[100]
    print(f"10-step workflow:      {ten_rate:12,.0f} events/s")
    print(f"1,000-element fan-out: {fan_rate:12,.0f} events/s")
    print(f"cost per event at history length   100: {costs[100] * 1e6:8.1f} us")
    print(f"cost per event at history length 10000: {costs[10_000] * 1e6:8.1f} us")
    print(f"ratio 10000 vs 100: {ratio:.2f} (must not grow with history length)")
    print(json.dumps({
        "events_per_s_10step": round(ten_rate),
        "events_per_s_fanout1000": round(fan_rate),
        "cost_ratio_10000_vs_100": round(ratio, 3),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
