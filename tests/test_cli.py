"""``orbit check`` and ``orbit schema``: errors as lines with positions, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orbit_actors.cli import main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orbit_actors.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_check_prints_each_problem_with_file_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("workflow: x\nversion: 1.0.0\nsteps:\n  - id: a\n    task: nope\n")
    result = run("check", str(bad))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{bad}:5:5: steps[0].task: task `nope` is not declared in `tasks`",
        "    5 |     task: nope",
        "      |           ^^^^",
    ]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "text",
    ["", "{", "- 1", "workflow: [1, 2]", "workflow: x\nversion: 1.0.0\nsteps: [{id: a, value: '${ }'}]",
     "\x00\x01", "workflow: x\nversion: 1.0.0\nsteps: [{id: a, for: '1', task: t}]", "a: &x [*x]"],
)  # fmt: skip
def test_malformed_files_never_print_a_traceback(tmp_path: Path, text: str) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(text)
    result = run("check", str(path))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and result.stderr.strip()


def test_a_missing_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path / "nope.yaml")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_schema_prints_a_json_schema_editors_can_use(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert {"workflow", "version", "steps"} <= set(schema["required"])
    step = schema["$defs"]["Step"]["properties"]
    assert {"await", "for", "as", "continue_as_new"} <= set(step)
