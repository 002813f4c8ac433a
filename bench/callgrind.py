"""Instructions a whole run of a bench script takes, counted by callgrind: the in-process
benches (cpu.py, pure.py, commit_path.py) judge a change by the difference of two runs of
themselves, which load on the machine does not move."""

from __future__ import annotations

import re
import subprocess
import sys


def collected(script: str, *args: str) -> int:
    """The "Collected" total of ``python script *args`` under ``valgrind --tool=callgrind``."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
    done = subprocess.run([*command, script, *args], capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found is not None, done.stderr[-2000:]
    return int(found.group(1))


def per_execution(script: str, base: int, more: int, *args: str) -> float:
    """Instructions per execution of ``script``: a run of ``base + more`` executions less a run
    of ``base`` (the same start-up and warm-up), divided by ``more``. The script takes
    ``--executions N``; ``args`` are passed to both runs."""
    longer = collected(script, "--executions", str(base + more), *args)
    return (longer - collected(script, "--executions", str(base), *args)) / more
