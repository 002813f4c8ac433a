"""The ``orbit`` commands that talk to a server through :class:`~orbit_actors.client.Client`:
deploy, start, show, list, workers, servers, signal, query, cancel, resume and ``schedule …``.
Tables for people, ``--json`` for scripts; a refusal is one line with the API's code and
message, and a non-zero exit."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .api.models import DefinitionRegistered, ExecutionResult, Schedule
from .cli_upgrade import add_replay_command, check_paths, replay_execution
from .client import ApiError, Client
from .errors import DefinitionError
from .ir import Definition, load_definition

FAILED_STATUSES = {"failed", "cancelled", "timed_out"}


def add_api_commands(commands: Any) -> None:
    """Register the API commands on the ``orbit`` sub-parsers."""
    deploy = _command(commands, "deploy", "validate and register definitions (children first)")
    deploy.add_argument("files", nargs="+", type=Path)
    deploy.add_argument(
        "--check", action="store_true",
        help="first check each file against the running executions of its workflow's latest "
        "version; exit 1 without deploying if any would diverge",
    )  # fmt: skip
    deploy.set_defaults(run=_deploy)

    replay = _command(commands, "replay", "step through a run event by event (n, p, g SEQ, q)")
    add_replay_command(replay)
    replay.set_defaults(run=_api(replay_execution))

    start = _command(commands, "start", "start an execution")
    start.add_argument("workflow")
    start.add_argument("--version")
    start.add_argument("--input", help="JSON, or @file holding JSON")
    start.add_argument("--id", dest="execution_id")
    start.add_argument("--wait", action="store_true", help="follow it until it finishes")
    start.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait at most")
    start.set_defaults(run=_start)

    show = _command(commands, "show", "an execution's status and units, or its history")
    show.add_argument("execution_id")
    show.add_argument("--history", action="store_true")
    show.add_argument("--run", type=int, dest="run_number")
    show.set_defaults(run=_show)

    listing = _command(commands, "list", "executions, newest first")
    listing.add_argument("--status")
    listing.add_argument("--workflow")
    listing.add_argument("--limit", type=int, default=50)
    listing.set_defaults(run=_list)

    _command(commands, "workers", "every worker ever registered").set_defaults(run=_workers)
    _command(commands, "servers", "the servers sharing the store").set_defaults(run=_servers)

    signal = _command(commands, "signal", "send a signal")
    signal.add_argument("execution_id")
    signal.add_argument("name")
    signal.add_argument("--payload", help="JSON, or @file holding JSON")
    signal.set_defaults(run=_signal)

    query = _command(commands, "query", "evaluate a query")
    query.add_argument("execution_id")
    query.add_argument("name")
    query.set_defaults(run=_query)

    cancel = _command(commands, "cancel", "cancel an execution")
    cancel.add_argument("execution_id")
    cancel.add_argument("--reason")
    cancel.set_defaults(run=_cancel)

    resume = _command(commands, "resume", "resume a quarantined execution")
    resume.add_argument("execution_id")
    resume.set_defaults(run=_resume)

    _add_schedule_commands(commands)


def _add_schedule_commands(commands: Any) -> None:
    help = "cron schedules: create, list, show, delete, pause, resume, trigger"
    schedule = commands.add_parser("schedule", help=help, description=help)
    actions = schedule.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = _command(actions, "create", "create a schedule (the same fields again: no change)")
    create.add_argument("schedule_id")
    create.add_argument("--cron", required=True, help="5 fields, or @hourly, @daily, …")
    create.add_argument("--workflow", required=True)
    create.add_argument("--timezone", default="UTC", help="an IANA name (default UTC)")
    create.add_argument("--version", help="default: the latest version at each occurrence")
    create.add_argument("--input", help="JSON, or @file holding JSON")
    create.add_argument("--overlap", choices=["skip", "allow"], default="skip")
    create.add_argument("--paused", action="store_true")
    create.set_defaults(run=_api(_create_schedule))
    _command(actions, "list", "every schedule").set_defaults(run=_api(_list_schedules))
    for name, help, run in (
        ("show", "one schedule: next occurrences, last executions", _show_schedule),
        ("delete", "delete a schedule (its executions go on)", _delete_schedule),
        ("pause", "pause a schedule", _pause_schedule),
        ("resume", "resume a schedule (what was missed while paused does not fire)",
         _resume_schedule),
        ("trigger", "start an occurrence now", _trigger_schedule),
    ):  # fmt: skip
        action = _command(actions, name, help)
        action.add_argument("schedule_id")
        action.set_defaults(run=_api(run))


def _command(commands: Any, name: str, help: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(name, help=help, description=help)
    parser.add_argument("--url", help="the server (default $ORBIT_URL or http://127.0.0.1:7233)")
    parser.add_argument("--token", help="the admin token (default $ORBIT_TOKEN)")
    parser.add_argument("--cacert", help="trust this CA file for https (default $ORBIT_CA_FILE)")
    parser.add_argument("--json", action="store_true", help="print the API's JSON answer")
    return parser


def run_api_command(args: argparse.Namespace) -> int:
    """Run an API command; an API refusal is one line on stderr and exit 1."""
    try:
        verify = args.cacert or os.environ.get("ORBIT_CA_FILE") or True
        with Client(args.url, token=args.token, verify=verify) as client:
            code: int = args.api(client, args)
            return code
    except ApiError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 1


def _api(function: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        args.api = function
        return run_api_command(args)

    return run


# -- commands ----------------------------------------------------------------------------
def _deploy_files(client: Client, args: argparse.Namespace) -> int:
    if args.check and not check_paths(client, args.files, quiet=args.json):
        print("error: incompatible with running executions; nothing deployed", file=sys.stderr)
        return 1
    answers = deploy_paths(client, args.files, quiet=args.json)
    if args.json:
        print(json.dumps([_plain(answer) for answer in answers], indent=2))
    return 0


def deploy_paths(
    client: Client, paths: list[Path], *, quiet: bool = False
) -> list[DefinitionRegistered]:
    """Check every file, then register them children first; returns the API's answers. A
    file with problems prints them and deploys nothing (ApiError ``INVALID_IR``)."""
    loaded: list[tuple[Path, Definition, str]] = []
    for path in paths:
        text = _read(path)
        try:
            definition, _ = load_definition(text, str(path))
        except DefinitionError as exc:
            for problem in exc.problems:
                print(str(problem), file=sys.stderr)
            invalid = f"{path} is not a valid definition; nothing deployed"
            raise ApiError("INVALID_IR", invalid) from None
        loaded.append((path, definition, text))
    names = {(d.workflow, d.version) for _, d, _ in loaded}
    answers = []
    while loaded:  # children first: a file whose children among the files are all deployed
        ready = [item for item in loaded if not _children_left(item[1], names)]
        path, definition, text = (ready or loaded)[0]
        loaded.remove((path, definition, text))
        names.discard((definition.workflow, definition.version))
        answer = client.deploy(text)
        answers.append(answer)
        if not quiet:
            what = "created" if answer.created else "unchanged"
            name = f"{answer.name}@{answer.version}"
            print(f"{what:9}  {name:28}  {answer.definition_hash[:12]}  {path}")
    return answers


def _children_left(definition: Definition, names: set[tuple[str, str]]) -> bool:
    return any((name, child.version) in names for name, child in definition.workflows.items())


_deploy = _api(_deploy_files)


def _start_execution(client: Client, args: argparse.Namespace) -> int:
    value = _json_argument(args.input, "--input")
    answer = client.start(
        args.workflow, input=value, version=args.version, execution_id=args.execution_id
    )
    execution_id = answer.execution_id
    if not args.wait:
        print(json.dumps(_plain(answer)) if args.json else execution_id)
        return 0
    final = _follow(client, execution_id, args.timeout, quiet=args.json)
    if args.json:
        print(json.dumps(_plain(client.describe(execution_id)), indent=2))
    else:
        print(f"{execution_id}: {final.status}")
        shown = final.output if final.status == "completed" else _plain(final.error)
        if shown is not None:
            print(json.dumps(shown, indent=2))
    return 0 if final.status == "completed" else 1


_start = _api(_start_execution)


def _follow(client: Client, execution_id: str, timeout: float, quiet: bool) -> ExecutionResult:
    """Wait in short long-polls, printing each step as it resolves."""
    deadline = time.monotonic() + timeout
    shown: set[str] = set()
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
                line = f"  {unit.key:30} {unit.status}"
                if unit.status in ("succeeded", "failed", "skipped") and line not in shown:
                    shown.add(line)
                    print(line, file=sys.stderr)


def _show_execution(client: Client, args: argparse.Namespace) -> int:
    if args.history or args.run_number is not None:
        history = client.history(args.execution_id, args.run_number)
        if args.json:
            print(json.dumps(_plain(history), indent=2))
            return 0
        rows = [[str(e["seq"]), _time(e.get("timestamp_ms")), e["type"], _event_detail(e)]
                for e in history.events]  # fmt: skip
        print(f"{history.execution_id}  run {history.run}")
        _table(["seq", "time", "event", "detail"], rows)
        return 0
    detail = client.describe(args.execution_id)
    if args.json:
        print(json.dumps(_plain(detail), indent=2))
        return 0
    flag = "  QUARANTINED" if detail.quarantined else ""
    name = f"{detail.workflow}@{detail.version}"
    print(f"{detail.execution_id}  {name}  {detail.status}  run {detail.run}{flag}")
    units = [[u.key, u.status, str(u.attempt), u.worker_id or "", u.error.code if u.error else ""]
             for u in detail.units]  # fmt: skip
    _table(["unit", "status", "attempt", "worker", "error"], units)
    if detail.status == "completed":
        print("output:", json.dumps(detail.output))
    elif detail.error:
        print("error:", json.dumps(_plain(detail.error)))
    return 0


_show = _api(_show_execution)


def _list_executions(client: Client, args: argparse.Namespace) -> int:
    page = client.executions(status=args.status, workflow=args.workflow, limit=args.limit)
    if args.json:
        print(json.dumps(_plain(page), indent=2))
        return 0
    rows = [
        [e.execution_id, f"{e.workflow}@{e.version}", e.status, _time(e.started_at_ms),
         _time(e.closed_at_ms)]
        for e in page.executions
    ]  # fmt: skip
    _table(["execution", "workflow", "status", "started", "closed"], rows)
    return 0


_list = _api(_list_executions)


def _list_workers(client: Client, args: argparse.Namespace) -> int:
    workers = client.workers()
    if args.json:
        print(json.dumps({"workers": [_plain(w) for w in workers]}, indent=2))
        return 0
    rows = [[w.worker_id, "online" if w.online else "offline", str(w.inflight),
             ", ".join(f"{c['task_name']}@{c['contract_version']}" for c in w.contracts),
             _time(w.last_seen_ms)] for w in workers]  # fmt: skip
    _table(["worker", "state", "inflight", "contracts", "last seen"], rows)
    return 0


_workers = _api(_list_workers)


def _list_servers(client: Client, args: argparse.Namespace) -> int:
    servers = client.servers()
    if args.json:
        print(json.dumps({"servers": [_plain(s) for s in servers]}, indent=2))
        return 0
    rows = [[s.server_id, s.address, f"{s.host}:{s.pid}", "online" if s.online else "expired",
             str(s.executions), _time(s.started_at_ms), _time(s.lease_until_ms)]
            for s in servers]  # fmt: skip
    _table(["server", "address", "host:pid", "state", "executions", "started", "lease until"],
           rows)  # fmt: skip
    return 0


_servers = _api(_list_servers)


def _send_signal(client: Client, args: argparse.Namespace) -> int:
    seq = client.signal(args.execution_id, args.name, _json_argument(args.payload, "--payload"))
    print(json.dumps({"seq": seq}) if args.json else f"signal `{args.name}` recorded as seq {seq}")
    return 0


_signal = _api(_send_signal)


def _run_query(client: Client, args: argparse.Namespace) -> int:
    value = client.query(args.execution_id, args.name)
    print(json.dumps({"value": value}) if args.json else json.dumps(value, indent=2))
    return 0


_query = _api(_run_query)


def _cancel_execution(client: Client, args: argparse.Namespace) -> int:
    detail = client.cancel(args.execution_id, args.reason)
    print(
        json.dumps(_plain(detail), indent=2)
        if args.json
        else f"{args.execution_id}: cancel requested"
    )
    return 0


_cancel = _api(_cancel_execution)


def _resume_execution(client: Client, args: argparse.Namespace) -> int:
    detail = client.resume(args.execution_id)
    print(json.dumps(_plain(detail), indent=2) if args.json else f"{args.execution_id}: resumed")
    return 0


_resume = _api(_resume_execution)


def _create_schedule(client: Client, args: argparse.Namespace) -> int:
    answer = client.create_schedule(
        args.schedule_id, args.cron, args.workflow, timezone=args.timezone,
        version=args.version, input=_json_argument(args.input, "--input"),
        overlap=args.overlap, paused=args.paused,
    )  # fmt: skip
    if args.json:
        print(json.dumps(_plain(answer), indent=2))
        return 0
    print(f"{args.schedule_id}: {'created' if answer.created else 'unchanged'}")
    _print_schedule(answer)
    return 0


def _list_schedules(client: Client, args: argparse.Namespace) -> int:
    schedules = client.schedules()
    if args.json:
        print(json.dumps({"schedules": [_plain(s) for s in schedules]}, indent=2))
        return 0
    rows = [[s.schedule_id, s.cron, s.timezone, s.workflow, "paused" if s.paused else "active",
             _time(_first(s.next_occurrences_ms)), _first(s.last_execution_ids) or ""]
            for s in schedules]  # fmt: skip
    _table(["schedule", "cron", "timezone", "workflow", "state", "next", "last execution"], rows)
    return 0


def _show_schedule(client: Client, args: argparse.Namespace) -> int:
    schedule = client.schedule(args.schedule_id)
    if args.json:
        print(json.dumps(_plain(schedule), indent=2))
    else:
        _print_schedule(schedule)
    return 0


def _print_schedule(schedule: Schedule) -> None:
    workflow = schedule.workflow + (f"@{schedule.version}" if schedule.version else "")
    state = "paused" if schedule.paused else "active"
    print(f"{schedule.schedule_id}  {schedule.cron} ({schedule.timezone})  {workflow}  "
          f"overlap {schedule.overlap}  {state}")  # fmt: skip
    for ms in schedule.next_occurrences_ms:
        print(f"  next  {_time(ms)} UTC")
    for execution_id in schedule.last_execution_ids:
        print(f"  ran   {execution_id}")
    if schedule.last_error:
        print(f"  last error: {schedule.last_error}")


def _delete_schedule(client: Client, args: argparse.Namespace) -> int:
    client.delete_schedule(args.schedule_id)
    print(
        json.dumps({"deleted": args.schedule_id}) if args.json else f"{args.schedule_id}: deleted"
    )
    return 0


def _pause_schedule(client: Client, args: argparse.Namespace) -> int:
    answer = client.pause_schedule(args.schedule_id)
    print(json.dumps(_plain(answer), indent=2) if args.json else f"{args.schedule_id}: paused")
    return 0


def _resume_schedule(client: Client, args: argparse.Namespace) -> int:
    answer = client.resume_schedule(args.schedule_id)
    print(json.dumps(_plain(answer), indent=2) if args.json else f"{args.schedule_id}: resumed")
    return 0


def _trigger_schedule(client: Client, args: argparse.Namespace) -> int:
    execution_id = client.trigger_schedule(args.schedule_id)
    print(json.dumps({"execution_id": execution_id}) if args.json else execution_id)
    return 0


def _first(values: list[Any]) -> Any:
    return values[0] if values else None


# -- helpers -----------------------------------------------------------------------------
def _plain(answer: BaseModel | None) -> Any:
    """An answer as the JSON the API sent."""
    return None if answer is None else answer.model_dump(mode="json")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ApiError("INVALID_REQUEST", f"{path}: cannot read: {exc.strerror}") from None


def _json_argument(value: str | None, flag: str) -> Any:
    if value is None:
        return None
    text = _read(Path(value[1:])) if value.startswith("@") else value
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ApiError("INVALID_REQUEST", f"{flag} is not valid JSON: {exc}") from None


def _event_detail(event: dict[str, Any]) -> str:
    skip = {"seq", "type", "timestamp_ms"}
    text = json.dumps({k: v for k, v in event.items() if k not in skip}, separators=(",", ":"))
    return text if len(text) <= 100 else text[:97] + "..."


def _time(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _table(header: list[str], rows: list[list[str]]) -> None:
    if not rows:
        print("(none)")
        return
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
