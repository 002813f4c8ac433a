"""Orbit as a user installs it: the wheel builds without deprecation warnings, installs into a
fresh virtual environment, and ``orbit dev`` run from an unrelated folder deploys the examples
that come with it, runs their worker, and an order saga started from the printed command
completes."""

from __future__ import annotations

import os
import re
import signal
import site
import subprocess
import sys
import time
from pathlib import Path

from orbit_actors.client import Client

from .harness import ROOT


def _build_wheel(folder: Path) -> tuple[Path, str]:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps",
         "-v", "-w", str(folder)], capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = folder.glob("orbit_actors-*.whl")
    return wheel, built.stdout + built.stderr


def _fresh_venv(folder: Path, wheel: Path) -> Path:
    """A venv holding the wheel; its dependencies are read from this environment's
    site-packages (a path line, so nothing of this environment's own orbit_actors)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True,
                   timeout=120)  # fmt: skip
    python = folder / "bin" / "python"
    lib = next((folder / "lib").glob("python3*")) / "site-packages"
    (lib / "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                    "--quiet", str(wheel)], check=True, timeout=300)  # fmt: skip
    return folder / "bin"


def test_the_wheel_builds_without_deprecation_warnings(tmp_path: Path) -> None:
    _, log = _build_wheel(tmp_path)
    assert "deprecat" not in log.lower(), [line for line in log.splitlines() if "eprecat" in line]


def test_orbit_dev_from_an_installed_wheel_runs_an_example_anywhere(tmp_path: Path) -> None:
    wheel, _ = _build_wheel(tmp_path / "wheel")
    bin_folder = _fresh_venv(tmp_path / "venv", wheel)
    elsewhere = tmp_path / "somewhere-else"
    elsewhere.mkdir()
    env = {"PATH": f"{bin_folder}:/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    where = subprocess.run([str(bin_folder / "python"), "-c", "import orbit_actors; print(orbit_actors.__file__)"],
                           capture_output=True, text=True, env=env, cwd=elsewhere, check=True)  # fmt: skip
    assert where.stdout.startswith(str(tmp_path / "venv"))
    dev = subprocess.Popen([str(bin_folder / "orbit"), "dev", "--bind", "127.0.0.1:0"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           env=env, cwd=elsewhere)  # fmt: skip
    try:
        welcome = _read_welcome(dev)
        url = re.search(r"Orbit dev server on (http://\S+)", welcome)
        command = re.search(r"orbit start order-saga --input @(\S+) --wait", welcome)
        assert url and command, welcome
        assert "Deployed: nothing" not in welcome and "order-saga@1.0.0" in welcome
        started = subprocess.run(
            [str(bin_folder / "orbit"), "start", "order-saga", "--input", f"@{command.group(1)}",
             "--wait", "--timeout", "120"], capture_output=True, text=True, cwd=elsewhere,
            env={**env, "ORBIT_URL": url.group(1)}, timeout=180,
        )  # fmt: skip
        assert started.returncode == 0, started.stderr
        assert ": completed" in started.stdout
        with Client(url.group(1)) as client:
            assert any(w.online for w in client.workers())
    finally:
        dev.send_signal(signal.SIGINT)
        dev.wait(timeout=30)
    assert (elsewhere / ".orbit" / "orbit.db").exists()


def _read_welcome(dev: subprocess.Popen[str]) -> str:
    """The welcome block ``orbit dev`` prints once ready (up to its API document line)."""
    assert dev.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = dev.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("API document:"):
            break
    return "".join(lines)


os.environ.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
