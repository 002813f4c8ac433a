"""Log output of the ``orbit`` processes: one line per record, human-readable by default or
one JSON object per line (``--log-format json``). Structured fields (``record.orbit``: an
execution id, a step, an attempt, a code) follow the message as ``key=value`` or as JSON keys."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = getattr(record, "orbit", None)
    return fields if isinstance(fields, dict) else {}


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class HumanFormatter(logging.Formatter):
    """``2026-12-02T10:00:00.000Z INFO  orbit.execution: execution completed execution_id=…``"""

    def format(self, record: logging.LogRecord) -> str:
        """One line (a traceback, when there is one, follows on its own lines)."""
        pairs = " ".join(f"{key}={value}" for key, value in _fields(record).items())
        line = f"{_timestamp(record)} {record.levelname:<5} {record.name}: {record.getMessage()}"
        line = f"{line} {pairs}" if pairs else line
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "message", …fields, "exception"?}`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        """One JSON object."""
        entry: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **_fields(record),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure_logging(level: str = "info", log_format: str = "text") -> None:
    """Send every record of ``level`` and above to stderr in ``log_format`` (text or json).

    Neither format prints where a record was made, nor its thread or process, so a record does
    not look them up (the logging documentation's "Optimization"): the caller's frame walk was
    most of the ~25 µs that the two lines of an execution cost the server at info level."""
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else HumanFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper()))
