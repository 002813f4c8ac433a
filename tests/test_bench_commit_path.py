"""bench/commit_path.py runs and ends with its JSON line (its numbers are read by people)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_commit_path_prints_its_json_line() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "commit_path.py"), "--executions", "5"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(line) == {"ms_per_exec"}
