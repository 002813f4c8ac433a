"""The core benchmark runs and ends with its JSON line (its numbers are read by people, not
asserted: tests never depend on wall-clock speed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def json_line(script: str, *args: str, timeout: float = 300) -> dict[str, Any]:
    """Run ``bench/<script>`` with ``args``; the JSON line it ends with."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    line: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return line


def test_bench_core_prints_its_json_line() -> None:
    assert set(json_line("core.py", "--quick")) == {
        "events_per_s_10step", "events_per_s_fanout1000", "cost_ratio_10000_vs_100",
    }  # fmt: skip


def test_bench_e2e_prints_its_json_line() -> None:
    line = json_line("e2e.py", "--executions", "30", "--in-flight", "5", "--idle", "3")
    assert {"exec_per_s", "p50_ms", "p99_ms", "server_cpu_ms_per_exec", "idle_p50_ms",
            "idle_p99_ms"} <= set(line)  # fmt: skip


def test_bench_e2e_burst_prints_its_json_line() -> None:
    line = json_line("e2e.py", "--burst", "20", "--idle", "3", "--skip-5000")
    assert set(line) == {"burst_one_request_exec_per_s", "burst_server_cpu_ms_per_exec",
                         "burst_worker_cpu_ms_per_exec", "burst_idle_p50_ms", "burst_idle_p99_ms",
                         "burst_5000_completed"}  # fmt: skip


def test_bench_endpoints_prints_its_json_line() -> None:
    line = json_line("endpoints.py", "--requests", "5")
    assert set(line) == {"server_cpu_ms", "ratio_to_healthz"}
    assert {"healthz", "start", "describe_finished", "wait_finished"} <= set(line["server_cpu_ms"])


def test_bench_faults_prints_a_line_of_counts_per_fault() -> None:
    line = json_line("faults.py", "--only", "crash:result-before-ack", timeout=600)
    assert line["fault"] == "crash:result-before-ack"
    assert line["lost"] == line["resolved_twice"] == 0
    assert line["acknowledged"] == line["completed"] > 0


def test_bench_retention_prints_its_json_line() -> None:
    line = json_line("retention.py", "--n", "2000", "--in-flight", "20", timeout=600)
    assert {"file_growth_ratio", "throughput_ratio_purging", "purge_transaction_ms_max"} <= set(
        line
    )


def test_bench_upgrade_prints_its_json_line() -> None:
    line = json_line("upgrade.py", "--n", "300", "--page", "100", timeout=600)
    assert {"check_100k_s", "serving_p50_ratio_during_check", "n"} <= set(line)


def test_bench_batches_prints_its_json_line() -> None:
    line = json_line("batches.py", "--n", "50")
    assert line["executions"] == 50 and line["cpu_ms_per_execution"] > 0


def test_where_puts_a_sample_in_the_area_of_its_innermost_named_frame() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import where

    stack = ";".join([
        "run (trio/_core/_run.py:2532)",
        "Execution.step (orbit_actors/actors/execution.py:10)",
        "decide (orbit_actors/decide/decider.py:20)",
        "dumps (json/__init__.py:231)",
        "encode (json/encoder.py:200)",
    ])  # fmt: skip
    assert where.area_of(stack) == "standard JSON encode and decode"
    assert where.area_of(stack.rsplit(";", 2)[0]) == "decider and expressions (decide/, ir/)"
    assert where.area_of("f (functools.py:1);g (enum.py:2)").startswith("other")


def test_bench_pure_prints_its_json_line() -> None:
    assert set(json_line("pure.py", "--executions", "20")) == {"pure_us_per_exec"}


def test_bench_latency_prints_its_json_line() -> None:
    assert set(json_line("latency.py", "--executions", "5")) == {"p50_ms", "p90_ms", "p99_ms"}


def test_bench_commit_path_prints_its_json_line() -> None:
    assert set(json_line("commit_path.py", "--executions", "5")) == {"ms_per_exec"}


def test_bench_log_lines_prints_its_json_line() -> None:
    assert set(json_line("log_lines.py", "--executions", "5")) == {"log_format", "us_per_exec"}


PERF_TRACE = """\
     0.100 ( 0.010 ms): python/100 read(fd: 7, buf: 0x1, count: 65536)          = 155
     0.900 ( 0.020 ms): python/100 futex(uaddr: 0x2, op: WAKE|PRIVATE_FLAG, val: 1)   = 1
     1.300 ( 0.700 ms): python/101 fdatasync(fd: 13)                            = 0
     2.100 ( 0.030 ms): python/101 sendto(fd: 11, buff: 0x3, len: 1)            = 1
     2.300 ( 0.010 ms): python/100 recvfrom(fd: 10, ubuf: 0x4, size: 4096)      = 1
     2.700 ( 0.050 ms): python/100 write(fd: 9, buf: 0x5, count: 348)           = 348
     3.300 ( 0.010 ms): python/100 read(fd: 9, buf: 0x6, count: 65536)          = 170
"""


def test_bench_latency_splits_a_trace_at_its_system_calls(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import latency
    finally:
        sys.path.remove(str(ROOT / "bench"))
    trace = tmp_path / "trace.txt"
    trace.write_text(PERF_TRACE)
    segments = latency.split(latency.read_trace(trace), "100")
    rounded = {name: [round(v, 3) for v in values] for name, values in segments.items()}
    assert rounded == {
        "request read -> writer woken": [0.8],
        "writer woken -> fdatasync": [0.4],
        "fdatasync": [0.7],
        "fdatasync done -> trio thread signalled": [0.1],
        "signalled -> trio thread runs": [0.2],
        "trio thread runs -> task written": [0.4],
        "task written -> result read (worker)": [0.6],
    }
