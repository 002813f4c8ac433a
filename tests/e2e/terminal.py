"""A real terminal for the CLI's tests: a tmux session of a given size on its own tmux server
(``-L``), commands typed into bash, the screen read back with or without its colours.

A test waits for a typed command with ``tmux wait-for``: each command line ends by
signalling a channel, so the wait ends exactly when the shell is done (no polling)."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

TMUX = shutil.which("tmux")
_channels = itertools.count()


class Terminal:
    """A ``width`` by 50 bash in tmux with ``env`` and the venv's ``orbit`` on PATH."""

    def __init__(self, folder: Path, width: int, env: dict[str, str]) -> None:
        assert TMUX is not None
        self.socket = f"orbit-test-{os.getpid()}-{id(self)}"
        bin_folder = str(Path(sys.executable).parent)
        environment = {"PATH": f"{bin_folder}:/usr/bin:/bin", "HOME": str(folder),
                       "TERM": "xterm-256color", "LANG": "C.UTF-8", **env}  # fmt: skip
        self._tmux("-f", "/dev/null", "new-session", "-d", "-x", str(width), "-y", "50",
                   "-c", str(folder), "env", "-i",
                   *(f"{k}={v}" for k, v in environment.items()),
                   "bash", "--norc", "--noprofile")  # fmt: skip

    def _tmux(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True,
                              timeout=60, check=True)  # fmt: skip
        return done.stdout

    def run(self, line: str) -> None:
        """Type ``line`` and Enter; return once the shell has run it."""
        self.type_keys(line)
        self.finish()

    def type_keys(self, text: str, *keys: str) -> None:
        """Type ``text`` literally, then named keys such as ``Tab``."""
        self._tmux("send-keys", "-t", "0", "-l", "--", text)
        if keys:
            self._tmux("send-keys", "-t", "0", *keys)

    def finish(self) -> None:
        """End the line being typed with a signal to a fresh channel; wait for it."""
        channel = f"done-{next(_channels)}"
        self._tmux("send-keys", "-t", "0", "-l", f" ; tmux -L {self.socket} wait-for -S {channel}")
        self._tmux("send-keys", "-t", "0", "Enter")
        self._tmux("wait-for", channel)

    def clear(self) -> None:
        """Clear the screen and the scrollback."""
        self.run("clear")
        self._tmux("clear-history", "-t", "0")

    def screen(self, colours: bool = False) -> str:
        """What the terminal shows, lines the terminal wrapped joined again (``-J``)."""
        flags = ["-e"] if colours else []
        return self._tmux("capture-pane", "-p", "-J", "-t", "0", "-S", "-", *flags)

    def close(self) -> None:
        """Stop this terminal's tmux server."""
        self._tmux("kill-server")
