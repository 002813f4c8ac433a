"""``orbit deploy FILE --check`` and ``orbit replay ID``: the upgrade check before a deploy, and a
run stepped through event by event in a terminal (n, p, g SEQ, q)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from ..api.upgrade_models import CheckResult, IncompatibleExecution, ReplayAnswer
from ..client import ApiError, Client
from ..decide.narrate import phrase
from ..errors import DefinitionError
from ..history.events import event_from_json
from ..ir import load_definition
from .options import api_command
from .values import read_file

PROMPT = "n next · p previous · g SEQ go to · q quit > "


# -- deploy --check ------------------------------------------------------------------------
def check_paths(client: Client, paths: list[Path], *, quiet: bool = False) -> bool:
    """Check each file against the running executions of its workflow's latest version; print
    the incompatible ones. True when every file is compatible (or its workflow is new)."""
    compatible = True
    for path in paths:
        text = read_file(path)
        try:
            definition, _ = load_definition(text, str(path))
        except DefinitionError as exc:
            for problem in exc.problems:
                print(str(problem), file=sys.stderr)
            invalid = f"{path} is not a valid definition; nothing deployed"
            raise ApiError("INVALID_IR", invalid) from None
        try:
            latest = client.definition(definition.workflow)
        except ApiError as exc:
            if exc.code != "WORKFLOW_NOT_FOUND":
                raise
            continue  # a new workflow: nothing runs that it could strand
        found = list(_incompatible(client, latest.name, latest.version, text))
        compatible = compatible and not found
        if not quiet:
            _print_check(path, f"{latest.name}@{latest.version}", definition.version, found)
    return compatible


def _incompatible(
    client: Client, name: str, version: str, text: str
) -> Iterator[IncompatibleExecution]:
    cursor: str | None = None
    while True:
        page: CheckResult = client.check(name, version, text, limit=1000, cursor=cursor)
        yield from page.incompatible
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _print_check(path: Path, base: str, version: str, found: list[IncompatibleExecution]) -> None:
    if not found:
        print(f"compatible  {path}: {version} can take over every running execution of {base}")
        return
    print(f"incompatible  {path}: {len(found)} running execution(s) of {base} would diverge")
    for item in found:
        print(f"  {item.execution_id} (run {item.run}) at seq {item.first_divergent_seq}")
        print(f"    {item.recorded}")
        print(f"    {item.candidate}")


# -- replay --------------------------------------------------------------------------------
@api_command(
    "replay", "Step through a run event by event",
    example="orbit replay order-1\norbit replay order-1 --at 12 --json\n"
            "orbit replay order-1 --run 2 --definition order-v2.yaml",
    details="Shows the event, the state after it (each step's status, outputs, pending signals, "
            "timers) and what the decider decided next. Without --at or --json it steps "
            "interactively from event 1: n (or Enter) next, p previous, g SEQ go to, q quit. "
            "With --definition the run is replayed against that candidate and the first "
            "divergence is shown. Nothing is written.",
)  # fmt: skip
@click.argument("execution_id")
@click.option(
    "--run", "run_number", type=int, help="The run (default: the current one). Example: --run 2"
)
@click.option(
    "--at", "at", type=int, help="Print the point after this seq and exit. Example: --at 12"
)
@click.option(
    "--definition",
    type=click.Path(path_type=Path),
    help="Replay against this candidate file. Example: --definition order-v2.yaml",
)
def replay(client: Client, args: argparse.Namespace) -> int:
    """Print one point (``--at`` or ``--json``), or step through the run interactively."""
    candidate = read_file(args.definition) if args.definition is not None else None

    def fetch(at: int | None) -> ReplayAnswer:
        return client.replay(args.execution_id, run=args.run_number, at=at, definition=candidate)

    if args.json:
        print(json.dumps(fetch(args.at).model_dump(mode="json"), indent=2))
        return 0
    if args.at is not None:
        print(render(fetch(args.at)))
        return 0
    return _interactive(fetch)


def _interactive(fetch: Callable[[int | None], ReplayAnswer]) -> int:
    point = fetch(1)
    print(render(point))
    while True:
        try:
            line = input(PROMPT).strip()
        except EOFError:
            return 0
        target = _target(line, point)
        if target == "quit":
            return 0
        if not isinstance(target, int):
            print("keys: n (next event), p (previous), g SEQ (go to an event), q (quit)")
            continue
        try:
            point = fetch(target)
        except ApiError as exc:
            print(f"error: {exc.code}: {exc.message}")
            continue
        print(render(point))


def _target(line: str, point: ReplayAnswer) -> int | str | None:
    """The seq a key asks for, ``"quit"``, or None for a key that means nothing."""
    key, _, rest = line.partition(" ")
    if key == "q":
        return "quit"
    if key in ("n", ""):
        return min(point.at + 1, point.last_seq)
    if key == "p":
        return max(point.at - 1, 1)
    if key == "g" and rest.strip().isdigit():
        return int(rest.strip())
    return None


def render(point: ReplayAnswer) -> str:
    """One point of a run as text: the event, the state after it, and what was decided next."""
    state = point.state
    lines = [
        f"run {point.run} · event {point.at} of {point.last_seq} · {point.event['type']}",
        f"  {_phrase(point.event)}",
        f"status {state['status']} (version {state['version']})",
        "steps: " + (" · ".join(f"{k} {v}" for k, v in state["steps"].items()) or "(none)"),
    ]
    for step, output in state["outputs"].items():
        lines.append(f"  output of {step}: {json.dumps(output)[:100]}")
    signals = [f"{s['name']} (seq {s['seq']})" for s in state["pending_signals"]]
    lines.append("pending signals: " + (", ".join(signals) or "(none)"))
    timers = [f"{t['unit']} {t['kind']} at {_time(t['due_ms'])}" for t in state["timers"]]
    lines.append("timers: " + (", ".join(timers) or "(none)"))
    lines.append("decided next:" if point.decided else "decided next: (nothing)")
    lines += [f"  {event['seq']:>4}  {_phrase(event)}" for event in point.decided]
    if point.candidate is not None:
        lines.append(_divergence_line(point))
    return "\n".join(lines)


def _divergence_line(point: ReplayAnswer) -> str:
    name = f"{point.candidate.name}@{point.candidate.version}" if point.candidate else ""
    if point.divergence is None:
        return f"candidate {name}: compatible with the whole run"
    found = point.divergence
    return f"candidate {name} diverges at seq {found.seq}: {found.recorded} {found.candidate}"


def _phrase(event: dict[str, Any]) -> str:
    try:
        return phrase(event_from_json(event))
    except ValueError:
        return str(event.get("type"))


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
