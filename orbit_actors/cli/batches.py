"""``orbit batch ACTION [filter]`` and ``orbit batch show|list|stop``: one action on every
execution a filter matches (operations.md, "Batches"), paced by the server's --batch-rate."""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from typing import Any

import click

from ..api.batch_models import Batch, BatchList
from ..client import Client
from . import output
from .options import CONTEXT, api_command
from .values import answered

ACTIONS = {
    "cancel": "Cancel every matching execution (compensation and handlers run)",
    "terminate": "Terminate every matching execution at once (no compensation)",
    "pause": "Pause every matching execution",
    "unpause": "Unpause every matching execution",
    "rerun": "Rerun every matching finished execution from its first failed step",
}
BATCH_ID = click.argument("batch_id", metavar="BATCH_ID")


class Instant(click.ParamType[int]):
    """An instant as epoch milliseconds or an ISO 8601 time (``2026-12-01T09:00:00Z``; UTC
    when it names no zone)."""

    name = "instant"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        """Epoch milliseconds of ``value``."""
        if isinstance(value, int) or str(value).isdigit():
            return int(value)
        try:
            moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            self.fail(f"{value!r} is neither epoch milliseconds nor an ISO 8601 time", param, ctx)
        if moment.tzinfo is None:  # a time without a zone is UTC, as everywhere in Orbit
            moment = moment.replace(tzinfo=UTC)
        return int(moment.timestamp() * 1000)


@click.group("batch", context_settings=CONTEXT,
             short_help="Act on many executions at once: cancel, terminate, pause, unpause, "
                        "rerun; show, list, stop",
             epilog="\b\nExamples:\n  orbit batch terminate --workflow order --status running "
                    "--dry-run\n  orbit batch rerun --status failed --workflow order\n"
                    "  orbit batch show batch-3f2a9c1d")  # fmt: skip
def batch() -> None:
    """Act on every execution a filter matches, at the server's --batch-rate; the batch is
    durable (it goes on after a restart) and acts on each execution once."""


def _filter_options(function: Any) -> Any:
    for option in reversed([
        click.option("--status", type=click.Choice(
            ["queued", "running", "completed", "failed", "cancelled", "timed_out", "terminated"]),
            help="Only executions with this status. Example: --status failed"),
        click.option("--workflow", metavar="W",
                     help="Only this workflow. Example: --workflow order"),
        click.option("--version", "wf_version", metavar="V",
                     help="Only this version. Example: --version 1.2.0"),
        click.option("--started-after", type=Instant(), metavar="TIME",
                     help="Only those started at or after (ISO 8601 or epoch ms). "
                          "Example: --started-after 2026-12-01T00:00:00Z"),
        click.option("--started-before", type=Instant(), metavar="TIME",
                     help="Only those started before (ISO 8601 or epoch ms). "
                          "Example: --started-before 2026-12-02T00:00:00Z"),
        click.option("--id", "ids", multiple=True, metavar="ID",
                     help="Only these executions (repeatable). Example: --id order-1 --id order-2"),
        click.option("--reason", metavar="TEXT",
                     help="Why, recorded where the action records one. "
                          "Example: --reason 'bad deploy'"),
        click.option("--dry-run", is_flag=True,
                     help="Say how many executions it would act on (and the first 20); "
                          "do nothing."),
    ]):  # fmt: skip
        function = option(function)
    return function


def _filter(args: argparse.Namespace) -> dict[str, Any]:
    given = {
        "status": args.status, "workflow": args.workflow, "version": args.wf_version,
        "started_after_ms": args.started_after, "started_before_ms": args.started_before,
        "ids": list(args.ids) or None,
    }  # fmt: skip
    return {name: value for name, value in given.items() if value is not None}


def _action_command(action: str, summary: str) -> click.Command:
    example = (
        f"orbit batch {action} --workflow order --status running --dry-run\n"
        f"orbit batch {action} --id order-1 --id order-2"
    )

    @api_command(action, summary, example=example,
                 details="Give at least one filter flag. The batch runs on the server; "
                         "`orbit batch show BATCH_ID` follows it.")  # fmt: skip
    @_filter_options
    def act(client: Client, args: argparse.Namespace) -> int:
        flt = _filter(args)
        if args.dry_run:
            preview = client.batch_preview(action, **flt)
            lines = [f"would {action} {preview.matched} executions"]
            lines += [f"  {execution_id}" for execution_id in preview.sample]
            return answered(args, preview, "\n".join(lines))
        made = client.create_batch(action, reason=args.reason, **flt)
        return answered(args, made, f"{made.batch_id}: {action} {made.matched} executions "
                                    f"(orbit batch show {made.batch_id})")  # fmt: skip

    return act


@api_command("show", "Show a batch's progress and what it could not act on",
             example="orbit batch show batch-3f2a9c1d")  # fmt: skip
@BATCH_ID
def show(client: Client, args: argparse.Namespace) -> int:
    """One batch."""
    found = client.batch(args.batch_id)
    return answered(args, found, lambda: _print_batch(found))


def _print_batch(found: Batch) -> None:
    flt = " ".join(f"{k}={v}" for k, v in found.filter.model_dump(exclude_none=True).items())
    output.line(found.batch_id, found.action, output.status_word(found.state), flt)
    print(f"  {found.done} done, {found.failed_count} failed of {found.matched} matched")
    for failure in found.failed:
        print(f"  {failure.execution_id}: {failure.code}: {failure.message}")


@api_command("list", "List batches, newest first", example="orbit batch list")
def list_batches(client: Client, args: argparse.Namespace) -> int:
    """Batches as a table."""
    found = client.batches()
    return answered(args, found, lambda: _print_batches(found))


def _print_batches(found: BatchList) -> None:
    now = int(time.time() * 1000)
    rows = [[b.batch_id, b.action, output.status_word(b.state), b.matched, b.done,
             b.failed_count, output.relative(b.created_at_ms, now)]
            for b in found.batches]  # fmt: skip
    output.table(["batch", "action", "state", "matched", "done", "failed", "created"], rows)


@api_command("stop", "Cancel a batch: what it has not acted on yet it never will",
             example="orbit batch stop batch-3f2a9c1d")  # fmt: skip
@BATCH_ID
def stop(client: Client, args: argparse.Namespace) -> int:
    """Cancel a batch."""
    found = client.cancel_batch(args.batch_id)
    return answered(args, found, lambda: _print_batch(found))


for _action, _summary in ACTIONS.items():
    batch.add_command(_action_command(_action, _summary))
for _command in (show, list_batches, stop):
    batch.add_command(_command)
