"""A throwaway PostgreSQL server for tests: ``initdb`` into a temporary folder, ``postgres`` on
127.0.0.1 on a free port (its socket in that folder), run as the ``postgres`` user when the
tests run as root (initdb refuses root). Durability is off (``fsync=off``) unless asked: the tests
kill Orbit servers, never this one. :func:`start_postgres` returns None, with the reason in
:data:`UNAVAILABLE`, where PostgreSQL is not installed."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUPERUSER = "orbit"
UNAVAILABLE: list[str] = []


def _binaries() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _run_as() -> dict[str, Any]:
    """Popen arguments that drop root to the ``postgres`` user (or another non-root one)."""
    if os.geteuid() != 0:
        return {}
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return {"user": entry.pw_uid, "group": entry.pw_gid}
    raise RuntimeError("running as root and no postgres user to run PostgreSQL as")


@dataclass
class PostgresServer:
    """A running throwaway server; :meth:`url` names one of its databases."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes]
    created: list[str] = field(default_factory=list)

    def url(self, database: str = "postgres") -> str:
        """The connection URL of ``database`` (no password: trust on loopback)."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def execute(self, sql: str, database: str = "postgres") -> None:
        """Run one statement outside a transaction (CREATE DATABASE needs that)."""
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(sql.encode())

    def create_database(self, name: str, template: str | None = None) -> str:
        """Create database ``name`` (from ``template``) and return its URL."""
        extra = f" TEMPLATE {template} STRATEGY FILE_COPY" if template else ""
        self.execute(f"CREATE DATABASE {name}{extra}")
        return self.url(name)

    def stop(self) -> None:
        """Stop the server and remove its folder."""
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def start_postgres(
    *, durable: bool = False, settings: tuple[str, ...] = ()
) -> PostgresServer | None:
    """A new server, or None (the reason in UNAVAILABLE) where PostgreSQL or psycopg is
    missing. Tests leave durability off; ``durable`` keeps PostgreSQL's defaults (fsync and
    synchronous_commit on), for measuring. ``settings`` (``name=value``) come last and win."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        UNAVAILABLE[:] = ["psycopg is not installed (pip install -e '.[postgres]')"]
        return None
    binaries = _binaries()
    if binaries is None:
        UNAVAILABLE[:] = ["PostgreSQL is not installed (apt-get install postgresql)"]
        return None
    folder = Path(tempfile.mkdtemp(prefix="orbit-pg-"))
    as_user = _run_as()
    if as_user:
        os.chown(folder, as_user["user"], as_user["group"])
    data = folder / "data"
    made = subprocess.run(
        [binaries / "initdb", "-D", data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
         "--no-sync", "--no-instructions"],
        capture_output=True, text=True, cwd=folder, **as_user,
    )  # fmt: skip
    if made.returncode != 0:
        raise RuntimeError(f"initdb failed: {made.stderr[-2000:]}")
    chosen = ["max_connections=200", "shared_buffers=64MB"]
    if not durable:
        chosen += ["fsync=off", "synchronous_commit=off", "full_page_writes=off"]
    return _run(binaries, folder, data, [*chosen, *settings])


def _run(binaries: Path, folder: Path, data: Path, settings: list[str]) -> PostgresServer:
    port = _free_port()
    command: list[str | Path] = [binaries / "postgres", "-D", data, "-h", "127.0.0.1", "-p",
                                 str(port), "-k", folder,
                                 *[a for s in settings for a in ("-c", s)]]  # fmt: skip
    log = open(folder / "postgres.log", "ab")  # noqa: SIM115 - the server's for its life
    # cwd: the user PostgreSQL runs as may not be able to enter the tests' folder (/root/...)
    process = subprocess.Popen(command, stdout=log, stderr=log, cwd=folder, **_run_as())
    server = PostgresServer(folder, port, process)
    _wait_ready(server)
    return server


REPLICATED = ("synchronous_commit=on", "synchronous_standby_names=*")
"""Settings of a primary whose commits return once its streaming replica has them (so a
failover loses nothing acknowledged); fsync stays off: the tests kill processes, not power."""


def start_replica(primary: PostgresServer) -> PostgresServer:
    """A streaming replica of ``primary`` (``pg_basebackup -R``), a hot standby on a port of
    its own; ``pg_ctl promote`` (:func:`promote`) makes it the primary."""
    binaries = _binaries()
    assert binaries is not None
    folder = Path(tempfile.mkdtemp(prefix="orbit-pg-replica-"))
    as_user = _run_as()
    if as_user:
        os.chown(folder, as_user["user"], as_user["group"])
    data = folder / "data"
    copied = subprocess.run(
        [binaries / "pg_basebackup", "-D", data, "-h", "127.0.0.1", "-p", str(primary.port),
         "-U", SUPERUSER, "-R", "-X", "stream", "--no-sync"],
        capture_output=True, text=True, cwd=folder, **as_user,
    )  # fmt: skip
    if copied.returncode != 0:
        raise RuntimeError(f"pg_basebackup failed: {copied.stderr[-2000:]}")
    # no synchronous standby of its own: once promoted it is alone, and a commit waiting for a
    # standby that does not exist would wait for ever
    settings = ["max_connections=200", "shared_buffers=64MB", "fsync=off"]
    replica = _run(binaries, folder, data, settings)
    _wait_synchronous(primary, replica)
    return replica


def promote(replica: PostgresServer) -> None:
    """Make the replica the primary and wait until it takes writes."""
    binaries = _binaries()
    assert binaries is not None
    subprocess.run([binaries / "pg_ctl", "promote", "-w", "-D", replica.folder / "data"],
                   check=True, capture_output=True, cwd=replica.folder, **_run_as())  # fmt: skip


def _wait_synchronous(
    primary: PostgresServer, replica: PostgresServer, timeout: float = 60
) -> None:
    """Wait until the primary counts ``replica`` as its synchronous standby (streaming, and
    ``sync_state = 'sync'``): before that its walreceiver may still be catching up, and a test
    that kills the primary would not be testing a synchronous pair. PostgreSQL has nothing to
    wait on for this, so it is asked again every 0.1 s, as :func:`_wait_ready` does."""
    import psycopg

    deadline = time.monotonic() + timeout
    query = "SELECT 1 FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = 'sync'"
    with psycopg.connect(primary.url(), autocommit=True) as conn:
        while conn.execute(query.encode()).fetchone() is None:
            if replica.process.poll() is not None or time.monotonic() > deadline:
                log = (replica.folder / "postgres.log").read_text(errors="replace")
                replica.stop()
                raise RuntimeError(f"the replica did not become synchronous: {log[-2000:]}")
            time.sleep(0.1)


def _wait_ready(server: PostgresServer, timeout: float = 60.0) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(server.url(), connect_timeout=2):
                return
        except psycopg.OperationalError:
            if server.process.poll() is not None or time.monotonic() > deadline:
                log = (server.folder / "postgres.log").read_text(errors="replace")
                server.stop()
                raise RuntimeError(f"PostgreSQL did not start: {log[-2000:]}") from None
            time.sleep(0.1)
