"""``orbit terminate``, ``pause``, ``unpause`` and ``rerun``: operating one execution
(operations.md), through the API. Tables for people, ``--json`` for scripts."""

from __future__ import annotations

import argparse

import click

from ..client import Client
from .options import api_command
from .values import answered, json_argument

EXECUTION_ID = click.argument("execution_id", metavar="ID")
REASON = click.option(
    "--reason", metavar="TEXT", help="Why, recorded in the history. Example: --reason 'wrong order'"
)


@api_command("terminate", "End an execution at once (no compensation, no handlers)",
             example="orbit terminate order-o-1 --reason 'duplicate order'")  # fmt: skip
@EXECUTION_ID
@REASON
def terminate(client: Client, args: argparse.Namespace) -> int:
    """Terminate; its running attempts are stopped and its running children terminated."""
    detail = client.terminate(args.execution_id, args.reason)
    return answered(args, detail, f"{args.execution_id}: {detail.status}")


@api_command("pause", "Pause an execution: nothing new is dispatched until unpaused",
             example="orbit pause order-o-1 --reason 'carrier down'")  # fmt: skip
@EXECUTION_ID
@REASON
def pause(client: Client, args: argparse.Namespace) -> int:
    """Pause; results, signals and timers are still recorded."""
    detail = client.pause(args.execution_id, args.reason)
    return answered(args, detail, f"{args.execution_id}: paused")


@api_command("unpause", "Unpause an execution: what waited is dispatched",
             example="orbit unpause order-o-1")  # fmt: skip
@EXECUTION_ID
def unpause(client: Client, args: argparse.Namespace) -> int:
    """Unpause."""
    detail = client.unpause(args.execution_id)
    return answered(args, detail, f"{args.execution_id}: unpaused")


@api_command(
    "rerun", "Rerun a finished execution from a step, under the same id",
    example="orbit rerun order-o-1 --dry-run\norbit rerun order-o-1 --from ship",
    details="Steps before --from (and not depending on it) keep their outputs and are not "
            "dispatched again; the rest run with new idempotency keys. --dry-run says what it "
            "would do and writes nothing.",
)  # fmt: skip
@EXECUTION_ID
@click.option("--from", "from_step", metavar="STEP",
              help="The step to rerun from (default: the first that failed). "
                   "Example: --from ship")  # fmt: skip
@click.option("--input", "new_input", metavar="JSON|@FILE",
              help="A new input (default: the same). Example: --input @order.json")  # fmt: skip
@click.option("--version", "new_version", metavar="V",
              help="Another registered version of the workflow. "
                   "Example: --version 1.1.0")  # fmt: skip
@REASON
@click.option("--dry-run", is_flag=True, help="Say what it would reuse and run again; do nothing.")
def rerun(client: Client, args: argparse.Namespace) -> int:
    """Rerun, or show its dry run."""
    new_input = json_argument(args.new_input, "--input")
    if args.dry_run:
        plan = client.rerun_plan(
            args.execution_id, from_step=args.from_step, input=new_input, version=args.new_version
        )
        lines = [
            f"{args.execution_id}: a rerun from {plan.from_step} would",
            f"  reuse:     {', '.join(plan.reused) or '(nothing)'}",
            f"  run again: {', '.join(plan.rerun) or '(nothing)'}",
        ]
        if plan.children:
            lines.append(f"  start children: {', '.join(plan.children)}")
        return answered(args, plan, "\n".join(lines))
    started = client.rerun(
        args.execution_id, from_step=args.from_step, input=new_input, version=args.new_version,
        reason=args.reason,
    )  # fmt: skip
    return answered(args, started, f"{started.execution_id}: run {started.run} started")
