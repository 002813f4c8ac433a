"""Log output of the ``orbit`` processes: one line per record, human-readable by default or
one JSON object per line (``--log-format json``). Structured fields (``record.orbit``: an
execution id, a step, an attempt, a code) follow the message as ``key=value`` or as JSON keys.

The lines of significant events (``event_log.py``: two per execution at the default info level)
go through :func:`log_structured`: when Orbit's own handler is the only one its records would
reach, it writes the line itself, without building a ``LogRecord`` (~90 K instructions a line
through ``logging``); with any other handler, filter or record factory in the way (pytest's
``caplog``, an application's own set-up), it logs the record as ``logging`` always does.

A record is one line whatever it carries: error codes and messages a worker reported, reasons and
ids a client sent, a worker's name. In the text format, what could end a line or drive a
terminal (control characters, Unicode's line and paragraph separators) is written as an escape
(``\\n``, ``\\x1b``, ``\\u2028``), so nothing a client or a worker sends can forge a line or colour
one; a traceback follows its record on lines of its own, each indented, so only a record's first
line starts at the margin. The JSON format escapes the same characters within its strings."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

Line = Callable[[float, str, str, str, Mapping[str, Any]], str]
"""One line from a record's time, level name, logger name, message and fields."""

_second: tuple[int, str] = (-1, "")  # the last second written, as text up to the dot
_MILLISECONDS = tuple(f"{ms:03d}Z" for ms in range(1000))  # a format spec costs ~3 K a call


def timestamp(created: float) -> str:
    """``created`` (seconds since the epoch, UTC) as ``2026-12-02T10:00:00.000Z``: rounded to
    the microsecond as ``datetime.fromtimestamp`` rounds it, then cut to milliseconds. The text
    up to the second is kept from one call to the next (most lines share their second)."""
    global _second
    whole = int(created)
    # datetime rounds half to even; half up (cheaper than round()) differs only at a tie above
    # an even microsecond k, and k + 1 never starts a millisecond (1000 divides no odd number)
    milli = int((created - whole) * 1e6 + 0.5) // 1000
    if milli == 1000:
        whole, milli = whole + 1, 0
    second, prefix = _second
    if whole != second:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(whole))
        _second = (whole, prefix)
    return prefix + _MILLISECONDS[milli]


_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""What could end a line or drive a terminal: the C0 and C1 controls and DEL, and Unicode's line
and paragraph separators (every character ``str.splitlines`` breaks a line at is among them)."""


def _escape(found: re.Match[str]) -> str:
    return found.group().encode("unicode_escape").decode("ascii")  # \n, \x1b, \u2028


def one_line(text: str) -> str:
    """``text`` with every :data:`_UNSAFE` character written as its escape (``\\n``, ``\\x1b``);
    other text, non-ASCII included, as it is."""
    return text if text.isprintable() else _UNSAFE.sub(_escape, text)


_PADDED = {name: f"{name:<5}" for name in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")}
"""The standard level names as the text format aligns them (a format spec costs ~2 K a line)."""


def human_line(
    created: float, level: str, name: str, message: str, fields: Mapping[str, Any]
) -> str:
    """``2026-12-02T10:00:00.000Z INFO  orbit.execution: execution completed execution_id=…``:
    the message and the fields (what can carry a client's or a worker's text) on one line; the
    level and the logger's name are the program's own."""
    text = message
    for key, value in fields.items():
        text += f" {key}={value}"
    if not text.isprintable():
        text = _UNSAFE.sub(_escape, text)
    padded = _PADDED.get(level) or f"{level:<5}"
    return f"{timestamp(created)} {padded} {name}: {text}"


def indented(text: str) -> str:
    """The lines of ``text`` (a traceback) each indented and on one line of its own, so no line
    of it can pass for a record."""
    return "\n".join(["    " + one_line(part) for part in text.split("\n")])


_JSON = json.JSONEncoder(default=str, ensure_ascii=False)  # json.dumps builds one per call
_text = json.encoder.encode_basestring  # the encoder's own for strings (ensure_ascii=False)
_OWN_KEYS = frozenset({"ts", "level", "logger", "message"})
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029]")
"""The :data:`_UNSAFE` characters the encoder leaves as they are (it escapes the C0 controls)."""


def _json_escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def json_safe(line: str) -> str:
    """A JSON line with the :data:`_JSON_UNSAFE` characters escaped: they can only be inside
    its strings, where the escape reads back as the same character."""
    if line.isascii() and "\x7f" not in line:
        return line
    return _JSON_UNSAFE.sub(_json_escape, line)


def json_line(
    created: float, level: str, name: str, message: str, fields: Mapping[str, Any]
) -> str:
    """``{"ts", "level", "logger", "message", …fields}`` on one line, as ``json.dumps`` writes
    it: written out here when every field is a string or an integer under a new key (~15 K
    instructions less than the encoder), by the encoder otherwise."""
    parts = [f'{{"ts": "{timestamp(created)}", "level": {_text(level.lower())}, '
             f'"logger": {_text(name)}, "message": {_text(message)}']  # fmt: skip
    for key, value in fields.items():
        kind = type(value)
        if type(key) is not str or key in _OWN_KEYS or (kind is not str and kind is not int):
            return _encoded(created, level, name, message, fields)
        parts.append(f", {_text(key)}: {_text(value) if kind is str else value}")
    parts.append("}")
    return json_safe("".join(parts))


def _encoded(
    created: float, level: str, name: str, message: str, fields: Mapping[str, Any]
) -> str:  # fmt: skip
    entry: dict[str, Any] = {
        "ts": timestamp(created), "level": level.lower(), "logger": name, "message": message
    }  # fmt: skip
    entry.update(fields)
    return json_safe(_JSON.encode(entry))


def _fields(record: logging.LogRecord) -> Mapping[str, Any]:
    fields = getattr(record, "orbit", None)
    return fields if isinstance(fields, dict) else {}


class HumanFormatter(logging.Formatter):
    """:func:`human_line` of a record."""

    def format(self, record: logging.LogRecord) -> str:
        """One line (a traceback, when there is one, follows on its own indented lines)."""
        line = human_line(record.created, record.levelname, record.name, record.getMessage(),
                          _fields(record))  # fmt: skip
        if record.exc_info:
            line += "\n" + indented(self.formatException(record.exc_info))
        return line


class JsonFormatter(logging.Formatter):
    """:func:`json_line` of a record, with ``"exception"`` last when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        """One JSON object."""
        fields = _fields(record)
        if not record.exc_info:
            return json_line(record.created, record.levelname, record.name, record.getMessage(),
                             fields)  # fmt: skip
        exception = self.formatException(record.exc_info)
        return _encoded(record.created, record.levelname, record.name, record.getMessage(),
                        {**fields, "exception": exception})  # fmt: skip


class OrbitHandler(logging.StreamHandler[TextIO]):
    """The handler :func:`configure_logging` installs: a stream handler with Orbit's formatter,
    which can also write a structured line that never became a record (:func:`log_structured`)."""

    def __init__(self, stream: TextIO, log_format: str) -> None:
        super().__init__(stream)
        json_lines = log_format == "json"
        self.orbit_formatter: logging.Formatter = (
            JsonFormatter() if json_lines else HumanFormatter()
        )
        self.format_line: Line = json_line if json_lines else human_line
        self.setFormatter(self.orbit_formatter)
        self.unbuffered = _unbuffered(stream)

    def setStream(self, stream: TextIO) -> TextIO | None:
        """Write to ``stream`` from now on (``logging``'s own method), noting how it buffers."""
        self.unbuffered = _unbuffered(stream)
        return super().setStream(stream)

    def write_line(self, logger: logging.Logger, level: int, message: str,
                   fields: Mapping[str, Any]) -> None:  # fmt: skip
        """Write the line ``logger.log(level, message, extra={"orbit": fields})`` would, as
        ``StreamHandler.emit`` writes it: under the handler's lock, flushed at once (nothing is
        held back, so a process killed by SIGKILL has lost no line it logged). A stream that
        holds nothing back (stderr: text written through to the file) needs no flush."""
        line = self.format_line(
            time.time(), logging.getLevelName(level), logger.name, message, fields
        )
        with self.lock:  # type: ignore[union-attr]  # a handler always has one once built
            try:
                self.stream.write(line + self.terminator)
                if not self.unbuffered:
                    self.stream.flush()
            except RecursionError:
                raise
            except Exception:  # as logging does: reported on stderr, never raised
                record = logger.makeRecord(logger.name, level, "(unknown file)", 0, message,
                                           (), None, extra={"orbit": fields})  # fmt: skip
                self.handleError(record)


def _unbuffered(stream: TextIO) -> bool:
    """Whether ``stream`` hands each write to its file at once: a text stream writing through to
    an unbuffered binary one, as Python opens stderr (a flush would do nothing, ~1.4 K a line)."""
    if not isinstance(stream, io.TextIOWrapper):
        return False
    return stream.write_through and isinstance(stream.buffer, io.RawIOBase)


def sole_handler(logger: logging.Logger, level: int) -> OrbitHandler | None:
    """Orbit's handler, if it is all that a record of ``logger`` at ``level`` would meet, and
    would write the record its own way: no filter on the logger or the handler, no other handler
    on the way up, the standard record factory, the handler's level at most ``level`` and its own
    formatter. Checked on every line, since handlers come and go (pytest's ``caplog``)."""
    if logger.filters or logging.getLogRecordFactory() is not logging.LogRecord:
        return None
    found: OrbitHandler | None = None
    node: logging.Logger | None = logger
    while node is not None:
        handlers = node.handlers
        if handlers:
            if found is not None or len(handlers) > 1 or not isinstance(handlers[0], OrbitHandler):
                return None
            found = handlers[0]
        node = node.parent if node.propagate else None
    if found is None or level < found.level or found.filters:
        return None
    return found if found.formatter is found.orbit_formatter else None


def log_structured(
    logger: logging.Logger, level: int, message: str, fields: Mapping[str, Any]
) -> None:
    """``logger.log(level, message, extra={"orbit": fields})``, written straight to Orbit's
    handler when it is the only one (:func:`sole_handler`). The caller has checked
    ``logger.isEnabledFor(level)`` (it need not build ``fields`` otherwise)."""
    handler = sole_handler(logger, level)
    if handler is None:
        logger.log(level, message, extra={"orbit": fields})
    else:
        handler.write_line(logger, level, message, fields)


def configure_logging(level: str = "info", log_format: str = "text") -> None:
    """Send every record of ``level`` and above to stderr in ``log_format`` (text or json).

    Neither format prints where a record was made, nor its thread or process, so a record does
    not look them up (the logging documentation's "Optimization"): the caller's frame walk was
    most of the ~25 µs that the two lines of an execution cost the server at info level."""
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    root = logging.getLogger()
    root.handlers[:] = [OrbitHandler(sys.stderr, log_format)]
    root.setLevel(getattr(logging, level.upper()))
