"""Traces from the real server to an OTLP/HTTP collector played by the test: ``--otlp-endpoint``,
spans of a run and its attempts in the trace of the execution, flushed when the server stops."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from orbit_actors.observe.tracing import execution_span_id, trace_id_of

from .conftest import ECHO3
from .harness import ServerProcess, WorkerProcess


class Collector:
    """Every span POSTed to ``/v1/traces``."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.paths: list[str] = []
        collector = self

        class Receive(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                collector.paths.append(self.path)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        collector.spans.extend(scope.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Receive)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"


@pytest.fixture
def collector() -> Iterator[Collector]:
    found = Collector()
    thread = threading.Thread(target=found.http.serve_forever, daemon=True)
    thread.start()
    yield found
    found.http.shutdown()


def test_the_server_exports_an_executions_spans_to_the_collector(
    tmp_path: Path, collector: Collector, workers: list[WorkerProcess]
) -> None:
    server = ServerProcess(tmp_path, "--otlp-endpoint", collector.url).start()
    try:
        workers.append(WorkerProcess(server, "traced"))
        with server.client() as client:
            client.deploy(ECHO3)
            client.start("three", input={"n": 1}, execution_id="t-1")
            assert client.wait("t-1", timeout=30).status == "completed"
        assert server.kill(signal.SIGTERM) == 0  # a graceful stop flushes the batch
    finally:
        server.stop()
    assert set(collector.paths) == {"/v1/traces"}
    names = sorted(span.name for span in collector.spans)
    assert names == ["step a", "step b", "step c", "workflow three"]
    trace_id = trace_id_of("t-1").to_bytes(16, "big")
    assert {span.trace_id for span in collector.spans} == {trace_id}
    run = next(span for span in collector.spans if span.name == "workflow three")
    assert run.span_id == execution_span_id("t-1", 1).to_bytes(8, "big")
    for step in (span for span in collector.spans if span.name.startswith("step")):
        assert step.parent_span_id == run.span_id


def test_otlp_endpoint_must_be_an_http_url(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="--otlp-endpoint takes an OTLP/HTTP URL"):
        ServerProcess(tmp_path, "--otlp-endpoint", "collector:4318").start()
