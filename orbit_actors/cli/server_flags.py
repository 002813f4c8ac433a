"""The flags of ``orbit server`` (many, so apart from what they do in :mod:`.run`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..decide.transitions import ServerLimits
from ..ir.durations import parse_duration

F = TypeVar("F", bound=Callable[..., Any])
_LIMITS = ServerLimits()
_PATH = click.Path(path_type=Path)


class Duration(click.ParamType[int]):
    """A duration (``30s``, ``2h``, ``30d``) in milliseconds; a malformed one is a usage error
    naming the flag (exit 2)."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        """Milliseconds of ``value``."""
        if isinstance(value, int):
            return value
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


_FLAGS: list[Callable[[Any], Any]] = [
    click.option("--db", type=_PATH, default=Path("orbit.db"), show_default=True, metavar="PATH",
                 help="The SQLite file. Example: --db /var/lib/orbit/orbit.db"),
    click.option("--database-url", metavar="URL",
                 help="Serve from this PostgreSQL database instead of a SQLite file (needs "
                      "orbit-actors[postgres]). Example: --database-url postgresql://orbit@db/orbit"),
    click.option("--bind", default="127.0.0.1:7233", show_default=True, metavar="HOST:PORT",
                 help="Where to listen (port 0: any free port). Example: --bind 0.0.0.0:7233"),
    click.option("--enable-http-adapter", is_flag=True,
                 help="Let workflows run built-in http steps."),
    click.option("--max-active-executions", type=int, default=None, metavar="N",
                 help="Refuse new executions beyond this many running (429). "
                      "Example: --max-active-executions 10000"),
    click.option("--max-fan-out", type=int, default=_LIMITS.max_fan_out, show_default=True,
                 metavar="N",
                 help="Elements of one fan-out step at most. Example: --max-fan-out 500"),
    click.option("--max-history-events", type=int, default=_LIMITS.max_history_events,
                 show_default=True, metavar="N",
                 help="Events of one run at most. Example: --max-history-events 20000"),
    click.option("--max-payload-bytes", type=int, default=_LIMITS.max_payload_bytes,
                 show_default=True, metavar="N",
                 help="Bytes of one input, output or payload at most. "
                      "Example: --max-payload-bytes 1048576"),
    click.option("--session-timeout", default="30s", show_default=True, metavar="DURATION",
                 help="A worker silent this long loses its tasks. Example: --session-timeout 1m"),
    click.option("--lease-time", default="10s", show_default=True, metavar="DURATION",
                 help="With --database-url: a server silent this long loses its executions to "
                      "the others. Example: --lease-time 15s"),
    click.option("--heartbeat-interval", default="5s", show_default=True, metavar="DURATION",
                 help="How often workers are asked to beat. Example: --heartbeat-interval 2s"),
    click.option("--passivate-after", default="10s", show_default=True, metavar="DURATION",
                 help="An execution with nothing near to do leaves memory after this long "
                      "without a command (0s: never). Example: --passivate-after 1m"),
    click.option("--schedule-to-start", type=Duration(), default=None, metavar="DURATION",
                 help="A unit no worker took within this fails its attempt with SCHEDULE_TIMEOUT "
                      "(retried by its policy), for tasks that declare no schedule_to_start; "
                      "unset: units wait forever. Example: --schedule-to-start 5m"),
    click.option("--retention", type=Duration(), default="30d", show_default=True,
                 metavar="DURATION",
                 help="Finished executions are purged this long after they closed, unless "
                      "their workflow says its own retention (0: keep forever). "
                      "Example: --retention 7d"),
    click.option("--batch-rate", type=click.FloatRange(min=0, min_open=True), default=100,
                 show_default=True, metavar="N",
                 help="Executions batches act on per second at most, all batches together, so "
                      "live traffic is not starved. Example: --batch-rate 500"),
    click.option("--synchronous", type=click.Choice(["full", "normal"]), default="full",
                 show_default=True,
                 help="SQLite durability: full survives power loss, normal only a crash."),
    click.option("--log-level", type=click.Choice(["debug", "info", "warning"]), default="info",
                 show_default=True, help="Log this and above."),
    click.option("--log-format", type=click.Choice(["text", "json"]), default="text",
                 show_default=True, help="One line per event: human-readable or JSON."),
    click.option("--otlp-endpoint", metavar="URL",
                 help="Send OpenTelemetry traces to this OTLP/HTTP collector (needs "
                      "orbit-actors[otel]). Example: --otlp-endpoint http://127.0.0.1:4318"),
    click.option("--max-connections", type=int, default=10_000, show_default=True, metavar="N",
                 help="Connections served at once (lowered to fit the open-file limit); more "
                      "wait in the listen backlog. Example: --max-connections 5000"),
    click.option("--server", type=click.Choice(["orbit", "hypercorn"]), default="orbit",
                 show_default=True, help="orbit (its own transport) or hypercorn (ASGI)."),
    click.option("--admin-token", metavar="TOKEN",
                 help="The API's bearer token (or $ORBIT_ADMIN_TOKEN). "
                      "Example: --admin-token s3cret"),
    click.option("--admin-token-file", type=_PATH, metavar="FILE",
                 help="Read the admin token from a file. Example: --admin-token-file admin.token"),
    click.option("--worker-token", multiple=True, metavar="[WORKER_ID=]TOKEN",
                 help="A worker token, bound to WORKER_ID when given (repeatable). "
                      "Example: --worker-token billing=t0ken"),
    click.option("--worker-tokens-file", type=_PATH, metavar="FILE",
                 help="Worker tokens, one [WORKER_ID=]TOKEN per line (kept out of ps). "
                      "Example: --worker-tokens-file workers.tokens"),
    click.option("--insecure", is_flag=True, help="Listen beyond loopback without both tokens."),
    click.option("--certfile", type=_PATH, metavar="FILE",
                 help="Serve TLS with this certificate (PEM). Example: --certfile orbit.pem"),
    click.option("--keyfile", type=_PATH, metavar="FILE",
                 help="The certificate's private key (PEM). Example: --keyfile orbit.key"),
]  # fmt: skip


def server_flags(function: F) -> F:
    """Put every flag of ``orbit server`` on ``function`` (in the order above)."""
    for flag in reversed(_FLAGS):
        function = flag(function)
    return function
