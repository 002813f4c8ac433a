"""``orbit completion bash|zsh|fish``: the shell completion script, from click's own
completion (the script calls ``orbit`` back with ``_ORBIT_COMPLETE`` set)."""

from __future__ import annotations

import argparse

import click
from click.shell_completion import get_completion_class

from . import exits
from .options import command

SHELLS = ("bash", "zsh", "fish")
INSTALL = {
    "bash": 'eval "$(orbit completion bash)"   # in ~/.bashrc',
    "zsh": 'eval "$(orbit completion zsh)"    # in ~/.zshrc',
    "fish": "orbit completion fish > ~/.config/fish/completions/orbit.fish",
}


@command(
    "completion", "Print the shell completion script for bash, zsh or fish",
    example="\n".join(INSTALL.values()),
    details="Completes commands, flags and choices. Load it once per shell, as in the examples.",
)  # fmt: skip
@click.argument("shell", type=click.Choice(SHELLS))
def completion(args: argparse.Namespace) -> int:
    """Print the script that makes ``shell`` complete ``orbit``'s commands and flags."""
    from .app import orbit

    kind = get_completion_class(args.shell)
    assert kind is not None  # every name in SHELLS is one of click's
    script = kind(orbit, {}, "orbit", "_ORBIT_COMPLETE").source()
    click.echo(script)
    return exits.OK
