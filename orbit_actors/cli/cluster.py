"""``orbit workers`` and ``orbit servers``: who does the work and who serves it."""

from __future__ import annotations

import argparse
import json
import time

from ..client import Client
from . import exits, output
from .options import api_command
from .values import plain


@api_command("workers", "List every worker ever registered",
             example="orbit workers\norbit workers --json | jq '.workers[].worker_id'")  # fmt: skip
def workers(client: Client, args: argparse.Namespace) -> int:
    """Workers as a table: state, tasks in flight, contracts, last seen."""
    found = client.workers()
    if args.json:
        print(json.dumps({"workers": [plain(w) for w in found]}, indent=2))
        return exits.OK
    now = int(time.time() * 1000)
    rows = [[w.worker_id, output.status_word("online" if w.online else "offline"),
             str(w.inflight),
             ", ".join(f"{c['task_name']}@{c['contract_version']}" for c in w.contracts),
             output.relative(w.last_seen_ms, now)] for w in found]  # fmt: skip
    output.table(["worker", "state", "inflight", "contracts", "last seen"], rows)
    return exits.OK


@api_command("servers", "List the servers sharing the store",
             example="orbit servers")  # fmt: skip
def servers(client: Client, args: argparse.Namespace) -> int:
    """Servers as a table: address, host and pid, lease, executions held."""
    found = client.servers()
    if args.json:
        print(json.dumps({"servers": [plain(s) for s in found]}, indent=2))
        return exits.OK
    now = int(time.time() * 1000)
    rows = [[s.server_id, s.address, f"{s.host}:{s.pid}",
             output.status_word("online" if s.online else "expired"), str(s.executions),
             output.relative(s.started_at_ms, now), output.relative(s.lease_until_ms, now)]
            for s in found]  # fmt: skip
    header = ["server", "address", "host:pid", "state", "executions", "started", "lease until"]
    output.table(header, rows)
    return exits.OK
