"""``orbit schedule create|list|show|delete|pause|resume|trigger``: cron schedules."""

from __future__ import annotations

import argparse
import json
import time

import click

from ..api.models import Schedule
from ..client import Client
from . import exits, output
from .options import CONTEXT, api_command
from .values import answered, json_argument, plain

SCHEDULE_ID = click.argument("schedule_id", metavar="SCHEDULE_ID")


@click.group("schedule", context_settings=CONTEXT,
             short_help="Cron schedules: create, list, show, delete, pause, resume, trigger",
             epilog="\b\nExamples:\n  orbit schedule create nightly --cron '0 2 * * *' "
                    "--workflow report\n  orbit schedule list")  # fmt: skip
def schedule() -> None:
    """Cron schedules: create, list, show, delete, pause, resume, trigger."""


@api_command(
    "create", "Create a schedule (the same fields again: no change)",
    example="orbit schedule create nightly --cron '0 2 * * *' --workflow report "
            "--timezone Europe/Paris",
)  # fmt: skip
@SCHEDULE_ID
@click.option(
    "--cron",
    required=True,
    metavar="EXPR",
    help="5 fields, or @hourly, @daily, … Example: --cron '*/15 * * * *'",
)
@click.option(
    "--workflow",
    required=True,
    metavar="W",
    help="The workflow to start. Example: --workflow report",
)
@click.option(
    "--timezone",
    default="UTC",
    show_default=True,
    metavar="ZONE",
    help="An IANA zone name. Example: --timezone Europe/Paris",
)
@click.option(
    "--version",
    metavar="V",
    help="A version (default: the latest at each occurrence). Example: --version 1.0.0",
)
@click.option(
    "--input",
    metavar="JSON|@FILE",
    help="The input as JSON, or @file holding JSON. Example: --input '{\"day\": 1}'",
)
@click.option(
    "--overlap",
    type=click.Choice(["skip", "allow"]),
    default="skip",
    show_default=True,
    help="When the previous execution still runs: skip the occurrence, or start anyway.",
)
@click.option("--paused", is_flag=True, help="Create it paused.")  # fmt: skip
def create(client: Client, args: argparse.Namespace) -> int:
    """Create (or leave unchanged) one schedule."""
    answer = client.create_schedule(
        args.schedule_id, args.cron, args.workflow, timezone=args.timezone,
        version=args.version, input=json_argument(args.input, "--input"),
        overlap=args.overlap, paused=args.paused,
    )  # fmt: skip

    def show() -> None:
        print(f"{args.schedule_id}: {'created' if answer.created else 'unchanged'}")
        _print_schedule(answer)

    return answered(args, answer, show)


@api_command("list", "List every schedule", example="orbit schedule list")
def list_schedules(client: Client, args: argparse.Namespace) -> int:
    """Schedules as a table, with their next occurrence."""
    found = client.schedules()
    if args.json:
        print(json.dumps({"schedules": [plain(s) for s in found]}, indent=2))
        return exits.OK
    now = int(time.time() * 1000)
    rows = [[s.schedule_id, s.cron, s.timezone, s.workflow,
             output.status_word("paused" if s.paused else "active"),
             output.relative(s.next_occurrences_ms[0] if s.next_occurrences_ms else None, now),
             s.last_execution_ids[0] if s.last_execution_ids else ""]
            for s in found]  # fmt: skip
    output.table(["schedule", "cron", "timezone", "workflow", "state", "next", "last execution"],
                 rows)  # fmt: skip
    return exits.OK


@api_command("show", "Show one schedule: next occurrences, last executions",
             example="orbit schedule show nightly")  # fmt: skip
@SCHEDULE_ID
def show(client: Client, args: argparse.Namespace) -> int:
    """One schedule and what it did and will do."""
    found = client.schedule(args.schedule_id)
    return answered(args, found, lambda: _print_schedule(found))


def _print_schedule(found: Schedule) -> None:
    workflow = found.workflow + (f"@{found.version}" if found.version else "")
    state = output.status_word("paused" if found.paused else "active")
    output.line(found.schedule_id, f"{found.cron} ({found.timezone})", workflow,
                f"overlap {found.overlap}", state)  # fmt: skip
    now = int(time.time() * 1000)
    for ms in found.next_occurrences_ms:
        print(f"  next  {output.absolute(ms)}  ({output.relative(ms, now)})")
    for execution_id in found.last_execution_ids:
        print(f"  ran   {execution_id}")
    if found.last_error:
        print(f"  last error: {found.last_error}")


@api_command("delete", "Delete a schedule (its executions go on)",
             example="orbit schedule delete nightly")  # fmt: skip
@SCHEDULE_ID
def delete(client: Client, args: argparse.Namespace) -> int:
    """Delete one schedule."""
    client.delete_schedule(args.schedule_id)
    deleted = json.dumps({"deleted": args.schedule_id})
    print(deleted if args.json else f"{args.schedule_id}: deleted")
    return exits.OK


@api_command("pause", "Pause a schedule", example="orbit schedule pause nightly")
@SCHEDULE_ID
def pause(client: Client, args: argparse.Namespace) -> int:
    """Pause one schedule."""
    answer = client.pause_schedule(args.schedule_id)
    return answered(args, answer, f"{args.schedule_id}: paused")


@api_command("resume", "Resume a schedule (what was missed while paused does not fire)",
             example="orbit schedule resume nightly")  # fmt: skip
@SCHEDULE_ID
def resume(client: Client, args: argparse.Namespace) -> int:
    """Resume one schedule."""
    answer = client.resume_schedule(args.schedule_id)
    return answered(args, answer, f"{args.schedule_id}: resumed")


@api_command("trigger", "Start an occurrence now", example="orbit schedule trigger nightly")
@SCHEDULE_ID
def trigger(client: Client, args: argparse.Namespace) -> int:
    """Start one execution of the schedule now; prints its id."""
    execution_id = client.trigger_schedule(args.schedule_id)
    print(json.dumps({"execution_id": execution_id}) if args.json else execution_id)
    return exits.OK


for _action in (create, list_schedules, show, delete, pause, resume, trigger):
    schedule.add_command(_action)
