"""``orbit deploy --check`` and ``orbit replay`` against a real server: an incompatible file is
not deployed (exit 1, the diverging executions printed); a compatible one is; ``orbit replay``
prints one point with ``--at``/``--json`` and steps through a run in a terminal, driven in tmux
(n, p, g SEQ, q)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import ROOT, ServerProcess, wait_until
from .test_cli_server import orbit
from .test_upgrade import ADDED_AFTER, INSERTED_BEFORE, V1


def waiting(server: ServerProcess, count: int = 2) -> list[str]:
    ids = [f"cli-up{n}" for n in range(count)]
    with server.client() as client:
        client.deploy(V1)
        for execution_id in ids:
            client.start("approve-e2e", execution_id=execution_id)
    return ids


def test_deploy_check_refuses_an_incompatible_version_and_deploys_a_compatible_one(
    tmp_path: Path, server: ServerProcess
) -> None:
    ids = waiting(server)
    (tmp_path / "v2.yaml").write_text(INSERTED_BEFORE)
    (tmp_path / "v11.yaml").write_text(ADDED_AFTER)
    refused = orbit(server, "deploy", str(tmp_path / "v2.yaml"), "--check")
    assert refused.returncode == 1
    assert "nothing deployed" in refused.stderr
    assert all(f"{i} (run 1) at seq 3" in refused.stdout for i in ids)
    assert "The candidate would schedule step `audit`" in refused.stdout
    with server.client() as client:
        assert [d.version for d in client.definitions()] == ["1.0.0"]
    accepted = orbit(server, "deploy", str(tmp_path / "v11.yaml"), "--check")
    assert accepted.returncode == 0, accepted.stderr
    assert "compatible" in accepted.stdout and "created" in accepted.stdout


def test_replay_prints_one_point_as_text_or_json(server: ServerProcess) -> None:
    [execution_id] = waiting(server, 1)
    text = orbit(server, "replay", execution_id, "--at", "3")
    assert text.returncode == 0, text.stderr
    assert "event 3 of 5 · StepScheduled" in text.stdout and "schedule step `ask`" in text.stdout
    as_json = json.loads(orbit(server, "replay", execution_id, "--at", "5", "--json").stdout)
    assert as_json["at"] == 5 and as_json["state"]["steps"]["wait"] == "running"
    outside = orbit(server, "replay", execution_id, "--at", "9")
    assert outside.returncode == 1
    assert outside.stderr.strip() == "error: SEQ_OUT_OF_RANGE: run 1 has events 1 to 5"


@pytest.fixture
def tmux() -> Iterator[str]:
    if shutil.which("tmux") is None:
        pytest.skip(
            "tmux is not installed (apt-get install tmux); the interactive replay needs a terminal"
        )
    session = f"orbit-replay-{uuid.uuid4().hex[:8]}"
    yield session
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_replay_steps_forward_back_and_to_a_seq_in_a_terminal(
    server: ServerProcess, tmux: str, tmp_path: Path
) -> None:
    [execution_id] = waiting(server, 1)
    candidate = tmp_path / "v2.yaml"
    candidate.write_text(INSERTED_BEFORE)
    command = (
        f"cd {ROOT} && ORBIT_URL={server.url} {sys.executable} -m orbit_actors.cli replay "
        f"{execution_id} --definition {candidate}; echo replay-exited-$?; sleep 30"
    )
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", tmux, "-x", "200", "-y", "50", command], check=True
    )

    def screen() -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", tmux], capture_output=True, text=True
        ).stdout

    def press(*keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", tmux, *keys, "Enter"], check=True)

    wait_until(lambda: "event 1 of 5" in screen(), 30, what="the first event")
    assert "diverges at seq 3" in screen()
    press("n")
    wait_until(lambda: "event 2 of 5" in screen(), 30, what="the next event")
    press("g 5")
    wait_until(lambda: "event 5 of 5" in screen(), 30, what="event 5")
    press("p")
    wait_until(lambda: "event 4 of 5" in screen(), 30, what="the previous event")
    press("q")
    wait_until(lambda: "replay-exited-0" in screen(), 30, what="replay to quit")
