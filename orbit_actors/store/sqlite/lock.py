"""One server per SQLite file (architecture.md): an exclusive ``flock`` on ``<file>.lock``, held
for the store's life and released by the kernel when the process dies (a SIGKILLed server needs
no clean-up). The file holds the pid of the server holding it, for the refusal's message."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from .schema import StoreOpenError


def lock_path(path: Path) -> Path:
    """The lock file of the database at ``path``."""
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold the database at ``path`` for this process; raises StoreOpenError naming the pid of
    the process that holds it already."""
    lock = lock_path(path)
    try:
        handle = open(lock, "a+", encoding="ascii")  # noqa: SIM115 - held for the whole block
    except OSError as exc:
        raise StoreOpenError(f"{path}: cannot open its lock file {lock}: {exc.strerror}") from None
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise StoreOpenError(
                f"{path} is already served by another Orbit server (pid {holder}); stop it "
                "first, or give this server another --db"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
