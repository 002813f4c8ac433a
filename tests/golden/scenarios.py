"""The scenarios the golden histories were recorded from. Run ``python -m tests.golden.scenarios``
to write a new golden file; existing ones are only rewritten on purpose (``--force``), because
their point is to catch a decider that no longer explains yesterday's histories."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from orbit_actors.decide import child_finished
from orbit_actors.history.events import ErrorInfo, event_to_dict
from orbit_actors.ir import CompiledDefinition, compile_source
from orbit_actors.testing import Driver

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def load(example: str, **kwargs: object) -> Driver:
    text = (ROOT / "examples" / example).read_text()
    return Driver(compile_source(text), **kwargs)  # type: ignore[arg-type]


ORDER = {
    "order_id": "o-1",
    "amount": 42.5,
    "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}],
}


def order_saga_completes() -> Driver:
    d = load("order_saga.yaml", execution_id="order-1").start(ORDER)
    d.run_task("charge", {"charge_id": "ch_1"})
    d.run_task("reserve[1]", {"reservation_id": "r1"})
    d.run_task("reserve[0]", {"reservation_id": "r0"})
    d.advance(10)
    d.run_task("ship", {"tracking": "TR-1"})
    return d


def order_saga_compensates() -> Driver:
    d = load("order_saga.yaml", execution_id="order-2").start(ORDER)
    d.run_task("charge", {"charge_id": "ch_2"})
    d.run_task("reserve[0]", {"reservation_id": "r0"})
    d.run_task("reserve[1]", {"reservation_id": "r1"})
    token = d.dispatch("ship")
    d.advance(120_000)
    for _ in range(3):
        d.advance(20_000)
        if d.scheduled() == ["ship"]:
            token = d.dispatch("ship")
            d.fail(token, "CARRIER_DOWN", "no carrier", retryable=True)
    while d.scheduled():
        key = d.scheduled()[0]
        d.run_task(key, {"ok": True})
        d.advance(10)
    return d


def approval_signalled() -> Driver:
    d = load("approval.yaml", execution_id="req-1").start({"request_id": "r1", "amount": 900})
    d.run_task("ask", {})
    d.advance(3_600_000)
    d.signal("decision", {"approved": True, "by": "ann"})
    d.run_task("place_order", {"po_number": "PO-9"})
    d.run_task("notify", {})
    return d


def approval_times_out() -> Driver:
    d = load("approval.yaml", execution_id="req-2").start({"request_id": "r2", "amount": 5})
    d.run_task("ask", {})
    d.advance(2 * 86_400_000)
    d.run_task("handler:tell_requester", {})
    return d


def batch_with_retry_and_redelivery() -> Driver:
    d = load("batch.yaml", execution_id="batch-1").start({"images": ["a.png", "b.png", "c.png"]})
    lost = d.dispatch("resize[0]", "w1", "s1")
    d.fail(d.dispatch("resize[1]"), "TRANSIENT", "disk busy")
    d.lose_worker(lost)
    d.complete(d.dispatch("resize[0]", "w2", "s2"), {"url": "u0", "bytes": 10})
    d.advance(200)
    d.complete(d.dispatch("resize[1]"), {"url": "u1", "bytes": 11})
    d.complete(lost, {"url": "late", "bytes": 1})
    d.complete(d.dispatch("resize[2]"), {"url": "u2", "bytes": 12})
    d.run_task("summarize", {})
    return d


def month_end_with_children() -> Driver:
    customers = [{"id": "c1", "amount": 10.0}, {"id": "c2", "amount": 20.0}]
    d = load("month_end.yaml", execution_id="me-2026-11").start(
        {"month": "2026-11", "customers": customers}
    )
    d.run_task("close", {})
    for index in range(2):
        key = f"invoices[{index}]"
        child = f"me-2026-11.invoices.{index}"
        d.dispatch(key, "orbit-runtime", f"child:{child}")
        d.record(child_finished(d.state, key, workflow="invoice", child_id=child, status="completed",
                                output={"invoice_id": f"inv-{index}"}, now=d.now))  # fmt: skip
    return d


def countdown_three_runs() -> Driver:
    d = load("countdown.yaml", execution_id="count-1").start({"remaining": 2})
    for _ in range(3):
        d.run_task("work", {})
        d.advance(1000)
        d.advance(0)
    return d


# -- reruns (operations.md, "Rerun from a step") -----------------------------------------------
def pipeline(version: str = "") -> CompiledDefinition:
    return compile_source((HERE / "definitions" / f"pipeline{version}.yaml").read_text())


def _pipeline_fails_at_transform(execution_id: str) -> Driver:
    d = Driver(pipeline(), execution_id=execution_id).start({"source": "s3://a"})
    d.run_task("extract", {"rows": 3})
    d.fail(d.dispatch("transform"), "BAD_ROW", "row 2 is malformed", retryable=False)
    return d


def pipeline_rerun_failed_sequential_step() -> Driver:
    d = _pipeline_fails_at_transform("etl-1")
    d.rerun()  # from transform: extract is reused
    d.run_task("transform", {"rows": 3})
    d.run_task("load", {"count": 3})
    return d


def pipeline_rerun_with_new_input() -> Driver:
    d = _pipeline_fails_at_transform("etl-2")
    d.rerun("extract", input={"source": "s3://b"})
    d.run_task("extract", {"rows": 4})
    d.run_task("transform", {"rows": 4})
    d.run_task("load", {"count": 4})
    return d


def pipeline_rerun_on_another_version() -> Driver:
    d = _pipeline_fails_at_transform("etl-3")
    d.rerun(definition=pipeline("_v2"))
    d.run_task("transform", {"rows": 3})
    d.run_task("load", {"count": 3})
    d.run_task("check", {"rows": 3})
    return d


def pipeline_rerun_timed_out_run() -> Driver:
    d = Driver(pipeline(), execution_id="etl-4").start({"source": "s3://a"})
    d.run_task("extract", {"rows": 3})
    d.run_task("transform", {"rows": 3})
    d.dispatch("load")
    d.advance(3_600_000)  # the run's timeout: load is cancelled
    d.rerun()  # from load: extract and transform are reused
    d.run_task("load", {"count": 3})
    return d


def batch_rerun_failed_fan_out_element() -> Driver:
    d = load("batch.yaml", execution_id="batch-2").start({"images": ["a.png", "b.png"]})
    d.complete(d.dispatch("resize[0]"), {"url": "u0", "bytes": 10})
    d.fail(d.dispatch("resize[1]"), "CORRUPT", "b.png is not an image", retryable=False)
    d.rerun()  # from resize: the fan-out is decided again, every element with a new key
    d.complete(d.dispatch("resize[0]"), {"url": "u0", "bytes": 10})
    d.complete(d.dispatch("resize[1]"), {"url": "u1", "bytes": 11})
    d.run_task("summarize", {})
    return d


def month_end_rerun_failed_child() -> Driver:
    customers = [{"id": "c1", "amount": 10.0}, {"id": "c2", "amount": 20.0}]
    d = load("month_end.yaml", execution_id="me-2026-12").start(
        {"month": "2026-12", "customers": customers}
    )
    d.run_task("close", {})
    _child_ends(d, 0, "me-2026-12.invoices.0", "completed")
    _child_ends(d, 1, "me-2026-12.invoices.1", "failed")
    d.rerun()  # from invoices: close is reused, the children start again under run 2's ids
    for index in range(2):
        _child_ends(d, index, f"me-2026-12.run2.invoices.{index}", "completed")
    return d


def _child_ends(d: Driver, index: int, child: str, status: str) -> None:
    key = f"invoices[{index}]"
    d.dispatch(key, "orbit-runtime", f"child:{child}")
    failure = ErrorInfo(code="RENDER_FAILED", message="no template") if status == "failed" else None
    output = {"invoice_id": f"inv-{index}"} if status == "completed" else None
    d.record(child_finished(d.state, key, workflow="invoice", child_id=child, status=status,
                            output=output, failure=failure, now=d.now))  # fmt: skip


SCENARIOS: dict[str, Callable[[], Driver]] = {
    "order_saga_completes": order_saga_completes,
    "order_saga_compensates": order_saga_compensates,
    "approval_signalled": approval_signalled,
    "approval_times_out": approval_times_out,
    "batch_with_retry_and_redelivery": batch_with_retry_and_redelivery,
    "month_end_with_children": month_end_with_children,
    "countdown_three_runs": countdown_three_runs,
    "pipeline_rerun_failed_sequential_step": pipeline_rerun_failed_sequential_step,
    "pipeline_rerun_with_new_input": pipeline_rerun_with_new_input,
    "pipeline_rerun_on_another_version": pipeline_rerun_on_another_version,
    "pipeline_rerun_timed_out_run": pipeline_rerun_timed_out_run,
    "batch_rerun_failed_fan_out_element": batch_rerun_failed_fan_out_element,
    "month_end_rerun_failed_child": month_end_rerun_failed_child,
}
EXAMPLE_OF = {
    "order_saga": "order_saga.yaml", "approval": "approval.yaml", "batch": "batch.yaml",
    "month_end": "month_end.yaml", "countdown": "countdown.yaml",
    "pipeline": "../tests/golden/definitions/pipeline.yaml",
}  # fmt: skip
RUN_DEFINITION = {
    ("pipeline_rerun_on_another_version", 2): "../tests/golden/definitions/pipeline_v2.yaml",
}
"""A run of a scenario that runs on another definition than its first run."""


def write(name: str, force: bool = False) -> list[Path]:
    """Record scenario ``name``: one JSON-lines file per run."""
    driver = SCENARIOS[name]()
    example = next(v for k, v in EXAMPLE_OF.items() if name.startswith(k))
    written = []
    for number, history in enumerate([*driver.runs, driver.history], start=1):
        path = HERE / (f"{name}.jsonl" if not driver.runs else f"{name}.run{number}.jsonl")
        if path.exists() and not force:
            continue
        source = RUN_DEFINITION.get((name, number), example)
        lines = [json.dumps({"definition": os.path.normpath(f"examples/{source}")})]
        lines += [json.dumps(event_to_dict(e), sort_keys=True) for e in history]
        path.write_text("\n".join(lines) + "\n")
        written.append(path)
    return written


if __name__ == "__main__":
    force = "--force" in sys.argv
    for scenario in SCENARIOS:
        for path in write(scenario, force):
            print(f"wrote {path.relative_to(ROOT)}")
