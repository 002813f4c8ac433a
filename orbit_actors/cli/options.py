"""How an ``orbit`` command is declared: :func:`command` for any command, :func:`api_command`
for one that talks to a server (it adds ``--url``, ``--token``, ``--cacert`` and ``--json``,
opens the client and turns a refusal into one line and an exit code).

A command's body is a plain function of the parsed flags as an ``argparse.Namespace`` (and,
for API commands, the open :class:`~orbit_actors.client.Client`) returning its exit code, so
it reads and tests like a function; the decorators only describe the command line."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import click

from ..client import ApiError, Client
from . import exits

Body = Callable[[argparse.Namespace], int]
ApiBody = Callable[[Client, argparse.Namespace], int]

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def command(
    name: str, summary: str, example: str, details: str = ""
) -> Callable[[Body], click.Command]:
    """A click command running ``body(args)``; ``summary`` is its line in ``orbit --help``,
    ``example`` one or more command lines shown under "Examples" in its own help."""

    def declare(body: Body) -> click.Command:
        def callback(**flags: Any) -> int:
            return body(argparse.Namespace(**flags))

        declared: click.Command = click.Command(
            name, callback=callback, help=_help(summary, details), short_help=summary,
            epilog=_examples(example), context_settings=CONTEXT,
            params=list(reversed(getattr(body, "__click_params__", []))),
        )  # fmt: skip
        return declared

    return declare


def api_command(
    name: str, summary: str, example: str, details: str = ""
) -> Callable[[ApiBody], click.Command]:
    """Like :func:`command`, for a command that calls the server through a Client."""

    def declare(body: ApiBody) -> click.Command:
        def run(args: argparse.Namespace) -> int:
            return run_with_client(body, args)

        run.__click_params__ = [*_API_OPTIONS, *getattr(body, "__click_params__", [])]  # type: ignore[attr-defined]
        return command(name, summary, example, details)(run)

    return declare


def run_with_client(body: ApiBody, args: argparse.Namespace) -> int:
    """Open a Client from ``--url``/``--token``/``--cacert`` and run ``body``; a refusal is
    one line on stderr and exit 1, an unreachable server exit 3."""
    from . import output

    url, token, cacert = args.__dict__.pop("url"), args.__dict__.pop("token"), args.cacert
    del args.cacert
    try:
        verify = cacert or os.environ.get("ORBIT_CA_FILE") or True
        with Client(url, token=token, verify=verify) as client:
            return body(client, args)
    except ApiError as exc:
        output.error(f"{exc.code}: {exc.message}")
        return exit_code_of(exc)


def exit_code_of(exc: ApiError) -> int:
    """3 when nothing answered, 1 for any refusal."""
    return exits.UNREACHABLE if exc.code == "UNAVAILABLE" and exc.status == 0 else exits.FAILED


def _help(summary: str, details: str) -> str:
    return f"{summary}.\n\n{details}" if details else f"{summary}."


def _examples(example: str) -> str:
    lines = "\n".join(f"  {line}" for line in example.strip().splitlines())
    return f"\b\nExamples:\n{lines}\n\n\b\n{exits.EXIT_CODES_HELP}"


def _params(function: Callable[..., Any]) -> list[click.Parameter]:
    """The click parameters a set of decorators put on ``function``."""
    return list(getattr(function, "__click_params__", []))


def _api_options() -> list[click.Parameter]:
    def holder() -> None: ...

    for option in (
        click.option("--json", "json", is_flag=True,
                     help="Print the API's JSON answer instead of a table (for scripts)."),
        click.option("--cacert", metavar="FILE",
                     help="Trust this CA file for https (default $ORBIT_CA_FILE). "
                          "Example: --cacert ca.pem"),
        click.option("--token", metavar="TOKEN",
                     help="The admin token (default $ORBIT_TOKEN). Example: --token s3cret"),
        click.option("--url", metavar="URL",
                     help="The server (default $ORBIT_URL or http://127.0.0.1:7233). "
                          "Example: --url http://orbit:7233"),
    ):  # fmt: skip
        option(holder)
    return _params(holder)


_API_OPTIONS = _api_options()
