"""Values on the command line and in answers: ``--input`` JSON (or ``@file``), files read with
a one-line error, an API answer as the JSON the API sent."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..client import ApiError
from . import exits


def plain(answer: BaseModel | None) -> Any:
    """An answer as the JSON the API sent."""
    return None if answer is None else answer.model_dump(mode="json")


def answered(args: argparse.Namespace, found: BaseModel, show: str | Callable[[], None]) -> int:
    """Print ``found`` as indented JSON under ``--json``, else ``show`` (a line, or a printer
    called for people); a command's answer that worked, so its exit code is ``OK``."""
    if args.json:
        print(json.dumps(plain(found), indent=2))
    elif isinstance(show, str):
        print(show)
    else:
        show()
    return exits.OK


def read_file(path: Path) -> str:
    """The text of ``path``; an unreadable file is ApiError ``INVALID_REQUEST``."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ApiError("INVALID_REQUEST", f"{path}: cannot read: {exc.strerror}") from None


def json_argument(value: str | None, flag: str) -> Any:
    """The JSON of a flag's value, or of the file it names with ``@``; None when not given."""
    if value is None:
        return None
    text = read_file(Path(value[1:])) if value.startswith("@") else value
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ApiError("INVALID_REQUEST", f"{flag} is not valid JSON: {exc}") from None
