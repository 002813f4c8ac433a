"""A record is one line, whatever a worker or a client put in it: no text can end the line early,
forge another one or drive the terminal (colours, cursor moves), in either log format, and text
that could do none of that is written as it is."""

from __future__ import annotations

import io
import json
import logging
import sys
import unicodedata
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orbit_actors.observe.logformat import OrbitHandler, log_structured

BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""Every character ``str.splitlines`` ends a line at."""
DRIVES = "\x1b\x9b\x07\x08\x00\x7f"
"""Escape (ANSI colours and cursor moves), the C1 CSI, bell, backspace, NUL, DEL."""
HOSTILE = st.text(st.sampled_from(BREAKS + DRIVES) | st.characters(), max_size=40)
READABLE = st.text(st.characters(blacklist_categories=["Cc", "Zl", "Zp"]), max_size=40)
"""Letters of any script, punctuation, spaces, emoji: anything but controls and separators."""
UNSAFE = {"Cc", "Zl", "Zp"}
"""Control characters (C0, DEL, C1) and the line and paragraph separators."""
FORGED = "2026-12-05T00:00:00.000Z INFO  orbit.execution: execution completed execution_id=x"


def _written(log_format: str, message: str, fields: dict[str, Any]) -> str:
    logger = logging.getLogger("orbit.test-one-line")
    logger.propagate, logger.level = False, logging.DEBUG
    stream = io.StringIO(newline="")  # no newline translation
    logger.handlers[:] = [OrbitHandler(stream, log_format)]
    try:
        log_structured(logger, logging.WARNING, message, fields)
    finally:
        logger.handlers.clear()
    return stream.getvalue()


@settings(max_examples=500, deadline=None)
@given(message=HOSTILE, code=HOSTILE, worker=HOSTILE)
def test_a_text_line_stays_one_line_without_control_characters(
    message: str, code: str, worker: str
) -> None:
    written = _written("text", message, {"code": code, "worker_id": worker, "attempt": 2})
    assert written.endswith("\n")
    assert written[:-1].splitlines() == [written[:-1]]
    assert not any(unicodedata.category(char) in UNSAFE for char in written[:-1])


@settings(max_examples=500, deadline=None)
@given(message=HOSTILE, code=HOSTILE, worker=HOSTILE)
def test_a_json_line_stays_one_line_and_reads_back_as_given(
    message: str, code: str, worker: str
) -> None:
    written = _written("json", message, {"code": code, "worker_id": worker, "attempt": 2})
    assert written[:-1].splitlines() == [written[:-1]]
    assert not any(unicodedata.category(char) in UNSAFE for char in written[:-1])
    entry = json.loads(written)
    assert (entry["message"], entry["code"], entry["worker_id"]) == (message, code, worker)


@settings(max_examples=300, deadline=None)
@given(message=READABLE, code=READABLE)
def test_readable_text_is_written_as_it_is(message: str, code: str) -> None:
    written = _written("text", message, {"code": code})
    assert written.endswith(f"WARNING orbit.test-one-line: {message} code={code}\n")


def test_a_forged_line_in_an_error_code_is_shown_escaped_inside_the_real_one() -> None:
    written = _written("text", "attempt failed", {"code": f"BROKEN\n{FORGED}\x1b[31m"})
    assert written.endswith(f"attempt failed code=BROKEN\\n{FORGED}\\x1b[31m\n")


@settings(max_examples=200, deadline=None)
@given(text=HOSTILE, log_format=st.sampled_from(["text", "json"]))
def test_a_traceback_cannot_pass_for_a_record(text: str, log_format: str) -> None:
    try:
        raise ValueError(f"{text}\n{FORGED}")
    except ValueError:
        record = logging.LogRecord("orbit.x", logging.ERROR, "", 0, text, (), sys.exc_info())
    written = OrbitHandler(io.StringIO(), log_format).format(record)
    first, *rest = written.splitlines()
    assert first.startswith(("1970", "20", "{"))  # the record itself
    assert all(line.startswith("    ") for line in rest)  # then its traceback, indented
    assert not any(unicodedata.category(char) in UNSAFE for char in "".join(written.splitlines()))
