"""The pure core's cost per execution: bench/runtime.py's 3-step workflow driven through
``decide/`` and ``history/`` exactly as an actor drives it (start, decide to the fixpoint,
dispatch the scheduled unit in the same commit, the summary row and how it rests, the effects;
then each result), with no runtime, store or I/O around it.

    python bench/pure.py [--executions N]                # microseconds per execution
    python bench/pure.py --instructions [--executions N]  # callgrind, per execution
    python bench/pure.py --profile                        # cProfile, own time

Ends with one JSON line. ``--instructions`` runs the script under ``valgrind --tool=callgrind``
with 200 and 200 + N executions and prints the difference of the totals divided by N.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time

from callgrind import per_execution
from runtime import THREE  # bench/runtime.py's workflow (a script's folder is on sys.path)

from orbit_actors.decide import decide_to_fixpoint, effects_of, invocation
from orbit_actors.decide import transitions as pure
from orbit_actors.decide.invocation import TaskInvocation
from orbit_actors.decide.rest import rest_of
from orbit_actors.history import ExecutionState, apply
from orbit_actors.history.events import EffectiveLimits, Event, StepScheduled
from orbit_actors.ir import CompiledDefinition, compile_source
from orbit_actors.views import row_of


def settle(state: ExecutionState, definition: CompiledDefinition, applied: list[Event]) -> None:
    """The actor's ``_settle``: decide, dispatch what a worker can take at once, row, effects."""
    decided = decide_to_fixpoint(state, definition, 1000)
    batch = [*applied, *decided]
    for event in batch[:]:
        if not isinstance(event, StepScheduled):
            continue
        found = invocation(state, definition, event.step)
        if not isinstance(found, TaskInvocation) or state.units[event.step].status != "scheduled":
            continue
        events = pure.dispatch(
            state, definition, found.key, token=f"{state.execution_id}:{event.step}",
            worker_id="w", session="s", now=1000,
        )  # fmt: skip
        assert events is not None
        apply(state, events[0])
        batch.append(events[0])
    row_of(state)
    rest_of(state, definition)
    effects_of(state, definition, batch)


def one(definition: CompiledDefinition, limits: EffectiveLimits, index: int) -> None:
    """One execution from start to completion."""
    state = ExecutionState()
    events = pure.start_run(
        definition, execution_id=f"x{index}", input={"n": index}, now=1000, limits=limits
    )
    for event in events:
        apply(state, event)
    settle(state, definition, events)
    for step in ("a", "b", "c"):
        token = f"x{index}:{step}"
        n = state.units[step].input["n"]
        events, verdict = pure.report_result(
            state, definition, token, now=1000, worker_id="w", output={"n": n}
        )
        assert verdict.accepted
        for event in events:
            apply(state, event)
        settle(state, definition, events)
    assert state.status == "completed" and state.output == {"n": index}, state.output


def run(executions: int) -> float:
    definition = compile_source(THREE)
    limits = pure.effective_limits(pure.ServerLimits(), definition)
    for index in range(200):
        one(definition, limits, index)
    began = time.process_time()
    for index in range(executions):
        one(definition, limits, index)
    return time.process_time() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--executions", type=int, default=1000)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if args.instructions:
        per = per_execution(__file__, 200, args.executions)
        print(f"{per / 1e6:.4f} M instructions per execution (callgrind)")
        print(json.dumps({"pure_instructions_per_exec": round(per)}))
        return
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        run(args.executions)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(40)
        return
    seconds = run(args.executions)
    per = seconds / args.executions * 1e6
    print(f"{per:,.1f} us of CPU per execution (pure core)")
    print(json.dumps({"pure_us_per_exec": round(per, 1)}))


if __name__ == "__main__":
    main()
