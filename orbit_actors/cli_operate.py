"""The ``orbit`` commands that operate executions (operations.md): terminate, pause, unpause and
rerun (with ``--dry-run``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from . import cli_api as base
from .client import Client


def add_operate_commands(commands: Any) -> None:
    """Register terminate, pause, unpause and rerun on the ``orbit`` sub-parsers."""
    terminate = base._command(commands, "terminate", "end an execution at once (no compensation)")
    terminate.add_argument("execution_id")
    terminate.add_argument("--reason")
    terminate.set_defaults(run=base._api(_terminate))

    pause = base._command(commands, "pause", "stop dispatching an execution's work")
    pause.add_argument("execution_id")
    pause.add_argument("--reason")
    pause.set_defaults(run=base._api(_pause))

    unpause = base._command(commands, "unpause", "dispatch what waited while paused")
    unpause.add_argument("execution_id")
    unpause.set_defaults(run=base._api(_unpause))

    rerun = base._command(commands, "rerun", "rerun a finished execution from a step")
    rerun.add_argument("execution_id")
    rerun.add_argument("--from", dest="from_step", help="default: the first step that failed")
    rerun.add_argument("--input", help="JSON, or @file holding JSON (default: the same input)")
    rerun.add_argument("--version", help="another registered version of the workflow")
    rerun.add_argument("--reason")
    rerun.add_argument("--dry-run", action="store_true", help="say what it would do, do nothing")
    rerun.set_defaults(run=base._api(_rerun))


def _said(args: argparse.Namespace, answer: Any, text: str) -> int:
    print(json.dumps(base._plain(answer), indent=2) if args.json else text)
    return 0


def _terminate(client: Client, args: argparse.Namespace) -> int:
    detail = client.terminate(args.execution_id, args.reason)
    return _said(args, detail, f"{args.execution_id}: {detail.status}")


def _pause(client: Client, args: argparse.Namespace) -> int:
    detail = client.pause(args.execution_id, args.reason)
    return _said(args, detail, f"{args.execution_id}: paused")


def _unpause(client: Client, args: argparse.Namespace) -> int:
    detail = client.unpause(args.execution_id)
    return _said(args, detail, f"{args.execution_id}: unpaused")


def _rerun(client: Client, args: argparse.Namespace) -> int:
    new_input = base._json_argument(args.input, "--input")
    if args.dry_run:
        plan = client.rerun_plan(
            args.execution_id, from_step=args.from_step, input=new_input, version=args.version
        )
        lines = [
            f"{args.execution_id}: a rerun from {plan.from_step} would",
            f"  reuse:     {', '.join(plan.reused) or '(nothing)'}",
            f"  run again: {', '.join(plan.rerun) or '(nothing)'}",
        ]
        if plan.children:
            lines.append(f"  start children: {', '.join(plan.children)}")
        return _said(args, plan, "\n".join(lines))
    started = client.rerun(
        args.execution_id, from_step=args.from_step, input=new_input, version=args.version,
        reason=args.reason,
    )  # fmt: skip
    return _said(args, started, f"{started.execution_id}: run {started.run} started")
