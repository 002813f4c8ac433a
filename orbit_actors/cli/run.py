"""The ``orbit`` commands that run something: ``server``, ``dev`` and ``worker``."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

import click
import trio

from ..actors.execution import Passivation
from ..decide.transitions import ServerLimits
from ..errors import InvalidRequestError
from ..ir.durations import parse_duration
from ..runtime import RuntimeConfig
from .options import command
from .server_flags import server_flags

log = logging.getLogger("orbit")

PACKAGED_EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
"""The examples installed with Orbit (in the repository, a link to its examples/ folder)."""


def server_options(args: argparse.Namespace) -> Any:
    """ServerOptions from the parsed flags; a bad value is an InvalidRequestError."""
    from ..server import ServerOptions

    try:
        session_timeout = parse_duration(args.session_timeout)
        heartbeat = parse_duration(args.heartbeat_interval)
        passivate_after = parse_duration(args.passivate_after)
        lease_time = parse_duration(args.lease_time)
    except ValueError as exc:
        raise InvalidRequestError(str(exc)) from None
    if args.database_url is not None and args.db != Path("orbit.db"):
        raise click.UsageError(
            "argument --database-url: not allowed with argument --db (give one of them)"
        )
    host, _, port = args.bind.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise InvalidRequestError(
            f"--bind takes HOST:PORT (like 127.0.0.1:7233), not {args.bind!r}"
        )
    runtime = RuntimeConfig(
        limits=ServerLimits(args.max_fan_out, args.max_history_events, args.max_payload_bytes),
        max_active_executions=args.max_active_executions,
        heartbeat_interval_ms=heartbeat,
        session_timeout_ms=session_timeout,
        enable_http_adapter=args.enable_http_adapter,
        passivation=Passivation(idle_s=passivate_after / 1000) if passivate_after else None,
        schedule_to_start_ms=args.schedule_to_start or None,
        retention_ms=args.retention or None,
        batch_rate=args.batch_rate,
    )
    if (args.certfile is None) != (args.keyfile is None):
        raise InvalidRequestError("TLS needs both --certfile and --keyfile")
    if args.max_connections < 1:
        raise InvalidRequestError("--max-connections takes a positive number")
    if lease_time < 300:
        raise InvalidRequestError("--lease-time takes a duration of at least 300ms (like 10s)")
    return ServerOptions(
        db=args.db, database_url=_database_url(args.database_url), bind=args.bind,
        synchronous=args.synchronous, runtime=runtime,
        credentials=_credentials(args), insecure=args.insecure, certfile=args.certfile,
        keyfile=args.keyfile, otlp_endpoint=_otlp_endpoint(args.otlp_endpoint),
        max_connections=args.max_connections, server=args.server, lease_time=lease_time / 1000,
    )  # fmt: skip


def _database_url(url: str | None) -> str | None:
    if url is None:
        return None
    if importlib.util.find_spec("psycopg") is None:
        raise InvalidRequestError(
            "--database-url needs the postgres extra: pip install 'orbit-actors[postgres]'"
        )
    return url


def _otlp_endpoint(url: str | None) -> str | None:
    if url is None:
        return None
    if not url.startswith(("http://", "https://")):
        raise InvalidRequestError(
            f"--otlp-endpoint takes an OTLP/HTTP URL like http://127.0.0.1:4318, not {url!r}"
        )
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        raise InvalidRequestError(
            "--otlp-endpoint needs the otel extra: pip install 'orbit-actors[otel]'"
        )
    return url


def _credentials(args: argparse.Namespace) -> Any:
    from ..server.auth import Credentials, parse_worker_token, read_token_file

    admin = args.admin_token or os.environ.get("ORBIT_ADMIN_TOKEN")
    if args.admin_token_file is not None:
        lines = read_token_file(args.admin_token_file)
        if len(lines) != 1:
            raise InvalidRequestError(f"{args.admin_token_file} must hold exactly one token")
        admin = lines[0]
    worker_lines = list(args.worker_token)
    if args.worker_tokens_file is not None:
        worker_lines += read_token_file(args.worker_tokens_file)
    workers = tuple(parse_worker_token(line) for line in worker_lines)
    return Credentials(admin_token=admin or None, worker_tokens=workers)


def _configure_logging(level: str, log_format: str = "text") -> None:
    from ..observe.logformat import configure_logging

    configure_logging(level, log_format)


@command(
    "server", "Run the server",
    example="orbit server\norbit server --db /var/lib/orbit/orbit.db --bind 0.0.0.0:7233 "
            "--admin-token-file admin.token --worker-tokens-file workers.tokens",
    details="Serves the HTTP API, the worker WebSocket and the web console until SIGTERM or "
            "Ctrl-C, on a SQLite file (one server per file) or a PostgreSQL database shared "
            "by several servers.",
)  # fmt: skip
@server_flags
def run_server(args: argparse.Namespace) -> int:
    """``orbit server``: serve until SIGTERM/SIGINT."""
    from ..server import serve

    _configure_logging(args.log_level, args.log_format)
    options = server_options(args)

    def ready(urls: list[str]) -> None:
        print(f"Orbit is ready on {', '.join(urls)} (database {options.database})", flush=True)

    return _run(partial(serve, options, on_ready=ready))


def _run(main: Any) -> int:
    """Run ``main``; a database Orbit cannot open or an address it cannot bind is one line."""
    from ..errors import LeaseLostError
    from ..store import StoreOpenError

    problems: list[str] = []
    try:
        trio.run(main)
    except* (StoreOpenError, LeaseLostError) as group:
        problems += [str(exc) for exc in _leaves(group)]
    except* OSError as group:
        problems += [
            f"cannot serve: {getattr(exc, 'strerror', None) or exc}" for exc in _leaves(group)
        ]
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found += _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
    return found


@command(
    "dev", "A server, the examples deployed and their worker, in one command",
    example="orbit dev\norbit dev --bind 127.0.0.1:8233",
    details="The database is .orbit/orbit.db in the current folder; Ctrl-C stops everything. "
            "The examples are the ones that come with Orbit (installed with it), unless "
            "--examples names a folder of your own.",
)  # fmt: skip
@click.option(
    "--bind",
    default="127.0.0.1:7233",
    show_default=True,
    metavar="HOST:PORT",
    help="Where to listen (port 0: any free port). Example: --bind 127.0.0.1:8233",
)
@click.option(
    "--examples",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    default=None,
    metavar="FOLDER",
    help="The folder of definitions (*.yaml) and workers.py. Example: --examples flows",
)
def run_dev(args: argparse.Namespace) -> int:
    """``orbit dev``: a server on ``.orbit/orbit.db``, the examples deployed, their worker."""
    from ..server import ServerOptions, serve

    _configure_logging("warning")
    folder: Path = args.examples or PACKAGED_EXAMPLES
    Path(".orbit").mkdir(exist_ok=True)
    options = ServerOptions(db=Path(".orbit/orbit.db"), bind=args.bind)

    async def serve_then_stop(
        scope: trio.CancelScope, *, task_status: trio.TaskStatus[list[str]]
    ) -> None:
        await serve(options, task_status=task_status)
        scope.cancel()  # Ctrl-C stopped the server: the worker goes too

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            urls: list[str] = await nursery.start(serve_then_stop, nursery.cancel_scope)
            url = urls[0]
            deployed = await trio.to_thread.run_sync(_deploy_examples, url, folder)
            if (folder / "workers.py").exists():
                nursery.start_soon(_run_example_worker, url, folder)
            _print_welcome(url, deployed, folder)

    return _run(main)


def _deploy_examples(url: str, folder: Path) -> list[str]:
    from ..client import Client
    from .definitions import deploy_paths

    files = sorted(folder.glob("*.yaml"))
    with Client(url) as client:
        answers = deploy_paths(client, files, quiet=True)
    return [f"{a.name}@{a.version}" for a in answers]


async def _run_example_worker(url: str, folder: Path) -> None:
    environment = {**os.environ, "ORBIT_URL": url}
    if folder == PACKAGED_EXAMPLES:
        module = "orbit_actors.examples.workers:worker"  # importable wherever Orbit is installed
    else:
        root = str(folder.resolve().parent)
        paths = [root, os.environ.get("PYTHONPATH")]
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
        module = f"{folder.resolve().name}.workers:worker"
    command = [sys.executable, "-m", "orbit_actors.cli", "worker", module]
    await trio.run_process(command, env=environment, check=False)


def _print_welcome(url: str, deployed: list[str], folder: Path) -> None:
    shown = folder.resolve()
    worker = shown / "workers.py"
    print(f"\nOrbit dev server on {url}   (database .orbit/orbit.db; Ctrl-C stops it)")
    print(f"Deployed: {', '.join(deployed) or f'nothing (no *.yaml in {shown})'}")
    print(f"Worker:   {worker if worker.exists() else f'none (no workers.py in {shown})'}")
    order_input = shown / "inputs" / "order_saga.json"
    print(f"\nTry:\n  export ORBIT_URL={url}")
    if any(name.startswith("order-saga@") for name in deployed) and order_input.exists():
        print(f"  orbit start order-saga --input @{order_input} --wait")
    print("  orbit list\n  orbit show <execution id> --history\n  orbit workers")
    print(f"API document: {url}/v1/openapi.json\n", flush=True)


@command(
    "worker", "Run a Python worker defined in a module",
    example="orbit worker examples.workers:worker\n"
            "orbit worker myapp.tasks:worker --url ws://orbit:7233",
    details="TARGET is MODULE:ATTRIBUTE naming an orbit_actors.Worker; the module is imported "
            "from the current folder. Runs until Ctrl-C (tasks in flight are drained first).",
)  # fmt: skip
@click.argument("target", metavar="MODULE:WORKER")
@click.option("--url", metavar="URL",
              help="ws://host:port (default $ORBIT_WORKER_URL or $ORBIT_URL). "
                   "Example: --url ws://orbit:7233")  # fmt: skip
def run_worker(args: argparse.Namespace) -> int:
    """``orbit worker MODULE:WORKER``: run a worker defined in a module until Ctrl-C."""
    from ..worker import Worker, WorkerRefused

    _configure_logging("info")
    module_name, _, attribute = args.target.partition(":")
    if not module_name or not attribute:
        raise InvalidRequestError(
            "name the worker as MODULE:ATTRIBUTE, e.g. examples.workers:worker"
        )
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InvalidRequestError(f"cannot import {module_name}: {exc}") from None
    worker = getattr(module, attribute, None)
    if not isinstance(worker, Worker):
        raise InvalidRequestError(f"{args.target} is not an orbit_actors.Worker")
    if args.url:
        worker.url = args.url.rstrip("/")
    try:
        worker.run()
    except WorkerRefused as exc:
        print(f"error: the server refused the worker: {exc}", file=sys.stderr)
        return 1
    return 0
