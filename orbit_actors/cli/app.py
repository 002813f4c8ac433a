"""The ``orbit`` command group: every command, ``--version``, and the exit code of a run.

To add a command: write its body in the module of its concept (or a new one) as a function of
``(client, args)`` decorated with :func:`~.options.api_command` (``args`` holds the flags as an
``argparse.Namespace``) and its ``click.argument``/``click.option`` lines, each with help and
an example; then add it to :data:`COMMANDS`. docs/decisions.md ("CLI") says the same."""

from __future__ import annotations

from collections.abc import Sequence

import click

from . import (
    batches,
    cluster,
    definitions,
    executions,
    exits,
    operate,
    output,
    run,
    schedules,
    upgrade,
)
from .completion import completion
from .options import CONTEXT

COMMANDS: list[click.Command] = [
    # definitions
    definitions.check, definitions.deploy, definitions.schema,
    # executions
    executions.start, executions.show, executions.list_executions, executions.signal,
    executions.query, executions.cancel, executions.resume, executions.delete, upgrade.replay,
    operate.terminate, operate.pause, operate.unpause, operate.rerun, batches.batch,
    # schedules, workers and servers
    schedules.schedule, cluster.workers, cluster.servers,
    # running things
    run.run_server, run.run_dev, run.run_worker,
    completion,
]  # fmt: skip


class Orbit(click.Group):
    """The root group: commands listed in the order of :data:`COMMANDS`, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


@click.group(
    "orbit", cls=Orbit, context_settings=CONTEXT, no_args_is_help=True,
    epilog="\b\nExamples:\n  orbit dev\n  orbit start order-saga --input @order.json --wait\n"
           f"  orbit show <id> --history\n\n\b\n{exits.EXIT_CODES_HELP}\n\n\b\n"
           "Environment: ORBIT_URL, ORBIT_TOKEN, ORBIT_CA_FILE; NO_COLOR turns colour off.\n"
           "Completion: eval \"$(orbit completion bash)\" (or zsh, fish).",
)  # fmt: skip
@click.version_option(
    package_name="orbit-actors", prog_name="orbit", message="%(prog)s %(version)s"
)
def orbit() -> None:
    """Orbit, a durable workflow runtime: define workflows in YAML, deploy them, start and
    watch executions, run the server and workers."""


for _command in COMMANDS:
    orbit.add_command(_command)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``orbit`` console script; returns the exit code."""
    from ..errors import OrbitError

    try:
        code = orbit.main(args=list(argv) if argv is not None else None, prog_name="orbit",
                          standalone_mode=False)  # fmt: skip
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        return exits.INTERRUPTED
    except OrbitError as exc:
        output.error(exc.message)
        return exits.FAILED
    return code if isinstance(code, int) else exits.OK
