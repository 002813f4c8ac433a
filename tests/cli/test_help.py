"""Every command and flag of ``orbit`` says what it does, every command shows an example, and
the command line's own mistakes exit 2."""

from __future__ import annotations

from importlib.metadata import version

import click
import pytest

from orbit_actors.cli import main, orbit


def _commands(group: click.Group, prefix: str = "orbit") -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    for name, command in group.commands.items():
        found.append((f"{prefix} {name}", command))
        if isinstance(command, click.Group):
            found += _commands(command, f"{prefix} {name}")
    return found


COMMANDS = _commands(orbit)


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_command_has_help_and_an_example(name: str, command: click.Command) -> None:
    assert command.get_short_help_str().strip(), name
    assert command.epilog and "Examples:" in command.epilog, name
    assert "  orbit " in command.epilog, name


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_flag_has_help(name: str, command: click.Command) -> None:
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{name} {param.opts[0]}"


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_a_flag_that_takes_a_value_shows_an_example(name: str, command: click.Command) -> None:
    for param in command.params:
        if isinstance(param, click.Option) and not param.is_flag and param.help:
            chosen = isinstance(param.type, click.Choice)
            assert chosen or "Example:" in param.help, f"{name} {param.opts[0]}"


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"orbit {version('orbit-actors')}\n"


def test_help_lists_each_command_on_its_own_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    shown = capsys.readouterr().out
    for name in ("check", "deploy", "start", "show", "list", "schedule", "completion"):
        assert f"\n  {name} " in shown


@pytest.mark.parametrize(
    "argv", [["nope"], ["start"], ["list", "--limit", "many"], ["schedule", "create", "x"]]
)
def test_a_usage_mistake_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "Usage: orbit" in capsys.readouterr().err


def test_orbit_alone_prints_the_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    shown = capsys.readouterr()
    assert "Commands:" in shown.out + shown.err
