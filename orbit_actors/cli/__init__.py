"""The ``orbit`` command, on click with rich output. A user's mistake prints one line (or one
line per problem) and a non-zero exit code (:mod:`.exits`), never a traceback.

Modules, one concept each: :mod:`.app` (the group, the list of commands, exit codes),
:mod:`.options` (how a command is declared), :mod:`.output` (tables, colour, relative times),
:mod:`.definitions`, :mod:`.executions`, :mod:`.schedules`, :mod:`.cluster`, :mod:`.run`
(server, dev, worker) and :mod:`.completion`."""

from __future__ import annotations

from .app import COMMANDS, main, orbit
from .definitions import deploy_paths

__all__ = ["COMMANDS", "deploy_paths", "main", "orbit"]
