"""The structured lines of significant events are written straight to Orbit's handler when it is
the only one (:func:`~orbit_actors.observe.logformat.log_structured`): checked here to be the
very lines ``logging`` writes through the formatters, and those the formatters wrote before the
direct path existed, for many generated records; and any other handler still gets the record."""

from __future__ import annotations

import io
import json
import logging
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbit_actors.history.events import (
    ErrorInfo,
    StepAttemptFailed,
    WorkflowCancelled,
    WorkflowCompleted,
    WorkflowFailed,
)
from orbit_actors.history.state import ExecutionState
from orbit_actors.observe.event_log import LOGGED
from orbit_actors.observe.logformat import OrbitHandler, log_structured, sole_handler, timestamp

MOMENTS = st.floats(min_value=0, max_value=4_102_444_800)  # 1970 to 2100
KEYS = st.sampled_from(["ts", "level", "logger", "message", "exception", "run"]) | st.text()
FIELDS = st.dictionaries(KEYS, st.integers() | st.text(), max_size=6) | st.dictionaries(
    KEYS, st.none() | st.booleans() | st.integers() | st.floats() | st.text(), max_size=6
)  # strings and integers are what the JSON line writes itself
LEVELS = st.sampled_from([logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR])


def _timestamp_before(created: float) -> str:
    moment = datetime.fromtimestamp(created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _shown(text: str) -> str:
    """``text`` with what could end a line or drive a terminal escaped, as the formats show it."""
    shown = []
    for char in text:
        code = ord(char)
        if char in _NAMED:
            shown.append(_NAMED[char])
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            shown.append(f"\\x{code:02x}")
        elif char in "\u2028\u2029":
            shown.append(f"\\u{code:04x}")
        else:
            shown.append(char)
    return "".join(shown)


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _json_shown(line: str) -> str:
    """A JSON line with DEL, the C1 controls and the line separators escaped."""
    return "".join(
        f"\\u{ord(char):04x}" if 0x7F <= ord(char) <= 0x9F or char in "\u2028\u2029" else char
        for char in line
    )


def _line_before(log_format: str, record: logging.LogRecord) -> str:
    """What HumanFormatter and JsonFormatter wrote before the direct path, with what could end
    a line or drive a terminal escaped."""
    fields = getattr(record, "orbit", None)
    fields = fields if isinstance(fields, dict) else {}
    if log_format == "json":
        entry: dict[str, Any] = {
            "ts": _timestamp_before(record.created), "level": record.levelname.lower(),
            "logger": record.name, "message": record.getMessage(), **fields,
        }  # fmt: skip
        if record.exc_info:
            entry["exception"] = logging.Formatter().formatException(record.exc_info)
        return _json_shown(json.dumps(entry, default=str, ensure_ascii=False))
    pairs = " ".join(f"{key}={value}" for key, value in fields.items())
    line = (f"{_timestamp_before(record.created)} {record.levelname:<5} {record.name}: "
            f"{record.getMessage()}")  # fmt: skip
    line = _shown(f"{line} {pairs}" if pairs else line)
    if record.exc_info:
        traceback = logging.Formatter().formatException(record.exc_info)
        line += "".join(f"\n    {_shown(part)}" for part in traceback.split("\n"))
    return line


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    """A logger of its own that does not propagate (pytest's handlers sit on the root)."""
    found = logging.getLogger("orbit.test-log-lines")
    found.propagate, found.level = False, logging.DEBUG
    yield found
    found.handlers.clear()
    found.filters.clear()


def _written(logger: logging.Logger, log_format: str) -> tuple[OrbitHandler, io.StringIO]:
    stream = io.StringIO()
    handler = OrbitHandler(stream, log_format)
    logger.handlers[:] = [handler]
    return handler, stream


@settings(max_examples=2000, deadline=None)
@given(created=MOMENTS)
def test_a_timestamp_is_the_text_datetime_makes_of_it(created: float) -> None:
    assert timestamp(created) == _timestamp_before(created)


@settings(max_examples=300, deadline=None)
@given(
    log_format=st.sampled_from(["text", "json"]), level=LEVELS, message=st.text(),
    fields=FIELDS, created=MOMENTS,
)  # fmt: skip
def test_a_line_written_directly_is_the_line_logging_writes(
    log_format: str, level: int, message: str, fields: dict[str, Any], created: float
) -> None:
    logger = logging.getLogger("orbit.test-log-lines")
    logger.propagate, logger.level = False, logging.DEBUG
    handler, stream = _written(logger, log_format)
    assert sole_handler(logger, level) is handler
    kept = _Kept()
    with mock.patch("time.time", return_value=created):
        log_structured(logger, level, message, fields)
        direct = stream.getvalue()
        logger.handlers.append(kept)  # now logging makes the record (and writes the line)
        log_structured(logger, level, message, fields)
    logger.handlers.clear()
    (record,) = kept.records
    through_logging = stream.getvalue()[len(direct) :]
    assert direct == through_logging == _line_before(log_format, record) + "\n"


@settings(max_examples=200, deadline=None)
@given(log_format=st.sampled_from(["text", "json"]), message=st.text(), fields=FIELDS)
def test_a_record_with_an_exception_is_its_line_then_its_traceback_indented(
    log_format: str, message: str, fields: dict[str, Any]
) -> None:
    try:
        raise ValueError("bad value")
    except ValueError:
        record = logging.LogRecord("orbit.x", logging.ERROR, "", 0, message, (), sys.exc_info())
    record.orbit = fields
    handler = OrbitHandler(io.StringIO(), log_format)
    assert handler.format(record) == _line_before(log_format, record)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda h, lg: lg.addHandler(_Kept()), id="another handler"),
        pytest.param(lambda h, lg: h.addFilter(lambda r: True), id="a filter on the handler"),
        pytest.param(lambda h, lg: lg.addFilter(lambda r: True), id="a filter on the logger"),
        pytest.param(lambda h, lg: h.setFormatter(logging.Formatter()), id="another formatter"),
        pytest.param(lambda h, lg: h.setLevel(logging.ERROR), id="a handler level above"),
    ],
)
def test_a_line_goes_through_logging_when_anything_else_could_see_it(
    logger: logging.Logger, change: Any
) -> None:
    handler, _ = _written(logger, "text")
    change(handler, logger)
    assert sole_handler(logger, logging.INFO) is None


def test_a_handler_beside_orbits_gets_the_record_with_its_fields(logger: logging.Logger) -> None:
    _, stream = _written(logger, "text")
    kept = _Kept()
    logger.addHandler(kept)
    log_structured(logger, logging.INFO, "execution started", {"execution_id": "e-1"})
    (record,) = kept.records
    assert record.getMessage() == "execution started" and record.levelno == logging.INFO
    assert record.orbit == {"execution_id": "e-1"}  # type: ignore[attr-defined]
    assert stream.getvalue().endswith(
        "INFO  orbit.test-log-lines: execution started execution_id=e-1\n"
    )


FAILED = ErrorInfo(code="BROKEN", message="it broke")
IDS = [("execution_id", "e-1"), ("workflow", "wf")]


@pytest.mark.parametrize(
    ("event", "message", "level", "fields"),
    [
        (SimpleNamespace(type="WorkflowCreated", run=2), "execution started", logging.INFO,
         [*IDS, ("run", 2)]),
        (WorkflowCompleted(seq=9, timestamp_ms=0, output=None), "execution completed",
         logging.INFO, [*IDS, ("run", 2)]),
        (WorkflowFailed(seq=9, timestamp_ms=0, error=FAILED, compensation="none"),
         "execution failed", logging.WARNING, [*IDS, ("code", "BROKEN"), ("run", 2)]),
        (WorkflowCancelled(seq=9, timestamp_ms=0, reason="asked"), "execution cancelled",
         logging.INFO, [*IDS, ("code", "asked"), ("run", 2)]),
        (StepAttemptFailed(seq=9, timestamp_ms=0, step="f", attempt=1, error=FAILED),
         "attempt failed", logging.INFO, [*IDS, ("step", "f"), ("attempt", 1), ("code", "BROKEN")]),
    ],
)  # fmt: skip
def test_the_event_log_hands_pytests_caplog_each_record_with_its_fields_in_order(
    caplog: pytest.LogCaptureFixture, event: Any, message: str, level: int,
    fields: list[tuple[str, Any]],
) -> None:  # fmt: skip
    state = ExecutionState()
    state.execution_id, state.workflow, state.run = "e-1", "wf", 2
    with caplog.at_level(logging.INFO, logger="orbit.execution"):
        LOGGED[event.type](state, event)
    (record,) = [r for r in caplog.records if r.name == "orbit.execution"]
    assert (record.getMessage(), record.levelno) == (message, level)
    assert list(record.orbit.items()) == fields  # type: ignore[attr-defined]


@pytest.mark.parametrize("write_through", [True, False], ids=["stderr-like", "buffered"])
def test_a_line_written_directly_reaches_the_file_at_once(
    logger: logging.Logger, write_through: bool
) -> None:
    reader, writer = os.pipe()
    raw = io.FileIO(writer, "w")
    binary = raw if write_through else io.BufferedWriter(raw)
    stream = io.TextIOWrapper(binary, encoding="utf-8", write_through=write_through)
    logger.handlers[:] = [OrbitHandler(stream, "text")]
    try:
        log_structured(logger, logging.INFO, "execution started", {"execution_id": "e-1"})
        assert os.read(reader, 4096).endswith(b"execution started execution_id=e-1\n")
    finally:
        logger.handlers.clear()
        stream.close()
        os.close(reader)
