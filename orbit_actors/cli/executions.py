"""``orbit start``, ``show``, ``list``, ``signal``, ``query``, ``cancel``, ``resume`` and
``delete``: one execution at a time, through the API. Tables for people, ``--json`` for scripts."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import click

from ..api.models import ExecutionDetail, ExecutionList, ExecutionResult, History
from ..client import ApiError, Client
from . import exits, output
from .options import api_command
from .values import answered, json_argument, plain

EXECUTION_ID = click.argument("execution_id", metavar="ID")
FINISHED = ("succeeded", "failed", "skipped")


@api_command(
    "start", "Start an execution",
    example="orbit start order-saga --input '{\"order_id\": \"o-1\"}'\n"
            "orbit start order-saga --input @order.json --id order-o-1 --wait",
    details="Prints the execution id. With --wait, follows it: each step as it resolves, then "
            "the output or the error; exit 0 when it completed, 1 when it failed, was "
            "cancelled or timed out. An --id that already exists is not started again (and "
            "its input is not changed): the command says so.",
)  # fmt: skip
@click.argument("workflow")
@click.option(
    "--version", metavar="V", help="A version (default: the latest). Example: --version 1.2.0"
)
@click.option(
    "--input",
    metavar="JSON|@FILE",
    help="The input as JSON, or @file holding JSON. Example: --input @order.json",
)
@click.option(
    "--id",
    "execution_id",
    metavar="ID",
    help="Your own execution id; starting it twice starts it once. Example: --id order-o-1",
)
@click.option("--wait", is_flag=True, help="Follow it until it finishes, showing each step.")
@click.option("--timeout", type=float, default=3600.0, show_default=True,
              help="With --wait: seconds to wait at most. Example: --timeout 60")  # fmt: skip
def start(client: Client, args: argparse.Namespace) -> int:
    """Start one execution; with ``--wait`` follow it and exit by its outcome."""
    value = json_argument(args.input, "--input")
    answer = client.start(
        args.workflow, input=value, version=args.version, execution_id=args.execution_id
    )
    execution_id = answer.execution_id
    if not answer.created:
        output.note(f"execution `{execution_id}` already exists: it was not started again "
                    "and its input was not changed")  # fmt: skip
    if not args.wait:
        print(json.dumps(plain(answer)) if args.json else execution_id)
        return exits.OK
    final = _follow(client, execution_id, args.timeout, quiet=args.json)
    if args.json:
        print(json.dumps(plain(client.describe(execution_id)), indent=2))
    else:
        output.console().print(f"{execution_id}: ", output.status_word(final.status), sep="")
        shown = final.output if final.status == "completed" else plain(final.error)
        if shown is not None:
            print(json.dumps(shown, indent=2))
    return exits.OK if final.status == "completed" else exits.FAILED


def _follow(client: Client, execution_id: str, timeout: float, quiet: bool) -> ExecutionResult:
    """Wait in short long-polls, printing each step as it resolves."""
    deadline = time.monotonic() + timeout
    shown: set[tuple[str, str]] = set()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ApiError("WAIT_TIMEOUT", f"execution `{execution_id}` is still running")
        try:
            return client.wait(execution_id, timeout=min(2.0, left))
        except ApiError as exc:
            if exc.code != "WAIT_TIMEOUT":
                raise
        if not quiet:
            for unit in client.describe(execution_id).units:
                if unit.status in FINISHED and (unit.key, unit.status) not in shown:
                    shown.add((unit.key, unit.status))
                    stderr = output.console(sys.stderr)
                    stderr.print(f"  {unit.key:30} ", output.status_word(unit.status), sep="")


@api_command(
    "show", "Show an execution's status and units, or its history",
    example="orbit show order-o-1\norbit show order-o-1 --history --run 2",
)  # fmt: skip
@EXECUTION_ID
@click.option("--history", is_flag=True, help="Show the run's history, one event a row.")
@click.option("--run", "run_number", type=int, metavar="N",
              help="The history of run N (after continue-as-new). Example: --run 2")  # fmt: skip
def show(client: Client, args: argparse.Namespace) -> int:
    """One execution: a summary line and its units, or its history as a table."""
    if args.history or args.run_number is not None:
        return _show_history(client, args)
    detail = client.describe(args.execution_id)
    return answered(args, detail, lambda: _print_detail(detail))


def _print_detail(detail: ExecutionDetail) -> None:
    flag = [output.status_word("quarantined")] if detail.quarantined else []
    if detail.paused:
        flag.append(output.status_word("paused"))
    name = f"{detail.workflow}@{detail.version}"
    status = output.status_word(detail.status)
    output.line(detail.execution_id, name, status, f"run {detail.run}", *flag)
    units = [[u.key, output.status_word(u.status), str(u.attempt), u.worker_id or "",
              u.error.code if u.error else ""] for u in detail.units]  # fmt: skip
    output.table(["unit", "status", "attempt", "worker", "error"], units)
    if detail.status == "completed":
        print("output:", json.dumps(detail.output))
    elif detail.error:
        print("error:", json.dumps(plain(detail.error)))


def _show_history(client: Client, args: argparse.Namespace) -> int:
    history = client.history(args.execution_id, args.run_number)
    return answered(args, history, lambda: _print_history(history))


def _print_history(history: History) -> None:
    now = _now_ms()
    rows = [[str(e["seq"]), output.relative(e.get("timestamp_ms"), now), e["type"],
             _event_detail(e)] for e in history.events]  # fmt: skip
    output.line(history.execution_id, f"run {history.run}")
    output.table(["seq", "time", "event", "detail"], rows)


def _event_detail(event: dict[str, Any]) -> str:
    skip = {"seq", "type", "timestamp_ms"}
    text = json.dumps({k: v for k, v in event.items() if k not in skip}, separators=(",", ":"))
    return text if len(text) <= 100 else text[:97] + "..."


def _now_ms() -> int:
    return int(time.time() * 1000)


@api_command(
    "list", "List executions, newest first",
    example="orbit list\norbit list --status failed --workflow order-saga --limit 10",
)  # fmt: skip
@click.option("--status", metavar="S",
              help="Only executions in this status (queued, running, completed, failed, "
                   "cancelled, timed_out, terminated). Example: --status failed")  # fmt: skip
@click.option("--workflow", metavar="W", help="Only this workflow. Example: --workflow order-saga")
@click.option("--limit", type=int, default=50, show_default=True,
              help="At most this many. Example: --limit 10")  # fmt: skip
@click.option("--paused", is_flag=True, help="Only the paused executions.")
def list_executions(client: Client, args: argparse.Namespace) -> int:
    """Executions as a table: id, workflow, status, started and closed (relative times)."""
    page = client.executions(
        status=args.status, workflow=args.workflow, limit=args.limit,
        paused=True if args.paused else None,
    )  # fmt: skip
    return answered(args, page, lambda: _print_executions(page))


def _print_executions(page: ExecutionList) -> None:
    now = _now_ms()
    rows = [
        [e.execution_id, f"{e.workflow}@{e.version}", output.status_word(e.status),
         output.relative(e.started_at_ms, now), output.relative(e.closed_at_ms, now)]
        for e in page.executions
    ]  # fmt: skip
    output.table(["execution", "workflow", "status", "started", "closed"], rows)


@api_command(
    "signal", "Send a signal to an execution",
    example="orbit signal order-o-1 approve --payload '{\"by\": \"ada\"}'",
)  # fmt: skip
@EXECUTION_ID
@click.argument("name")
@click.option("--payload", metavar="JSON|@FILE",
              help="The payload as JSON, or @file holding JSON. "
                   "Example: --payload '{\"ok\": true}'")  # fmt: skip
def signal(client: Client, args: argparse.Namespace) -> int:
    """Deliver one signal; prints the seq of its ``SignalReceived`` event."""
    seq = client.signal(args.execution_id, args.name, json_argument(args.payload, "--payload"))
    print(json.dumps({"seq": seq}) if args.json else f"signal `{args.name}` recorded as seq {seq}")
    return exits.OK


@api_command("query", "Evaluate a query of an execution",
             example="orbit query order-o-1 where")  # fmt: skip
@EXECUTION_ID
@click.argument("name")
def query(client: Client, args: argparse.Namespace) -> int:
    """Print the query's value as JSON."""
    value = client.query(args.execution_id, args.name)
    print(json.dumps({"value": value}) if args.json else json.dumps(value, indent=2))
    return exits.OK


@api_command("cancel", "Cancel an execution (its compensations run)",
             example="orbit cancel order-o-1 --reason 'customer asked'")  # fmt: skip
@EXECUTION_ID
@click.option(
    "--reason",
    metavar="TEXT",
    help="Why, recorded in the history. Example: --reason 'customer asked'",
)
def cancel(client: Client, args: argparse.Namespace) -> int:
    """Request the cancel; the execution winds down on its own."""
    detail = client.cancel(args.execution_id, args.reason)
    return answered(args, detail, f"{args.execution_id}: cancel requested")


@api_command("resume", "Resume a quarantined execution from its history",
             example="orbit resume order-o-1")  # fmt: skip
@EXECUTION_ID
def resume(client: Client, args: argparse.Namespace) -> int:
    """Respawn a quarantined execution."""
    detail = client.resume(args.execution_id)
    return answered(args, detail, f"{args.execution_id}: resumed")


@api_command("delete", "Delete a finished execution, its history and finished children, now",
             example="orbit delete order-o-1",
             details="Finished executions are purged anyway once their retention has passed "
                     "(the workflow's retention, else the server's --retention). A running "
                     "execution is refused (EXECUTION_RUNNING): cancel it first. The id may be "
                     "started again afterwards.")  # fmt: skip
@EXECUTION_ID
def delete(client: Client, args: argparse.Namespace) -> int:
    """Purge a finished execution."""
    client.delete(args.execution_id)
    if args.json:
        print(json.dumps({"execution_id": args.execution_id, "deleted": True}))
    else:
        print(f"{args.execution_id}: deleted")
    return exits.OK
