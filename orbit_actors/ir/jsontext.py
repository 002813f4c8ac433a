"""Compact JSON text, the one form Orbit sends and counts payloads in.

One encoder is built once: ``json.dumps`` with non-default options builds a new encoder on every
call, which cost more than the encoding itself for the small values of frames and answers. The
C encoder is called directly, with the options ``JSONEncoder.encode`` gives it (the same text,
the same errors), without the two Python calls around it, and without the dict of markers that
detects cycles: a cycle recurses until ``RecursionError``, and only then is the value encoded
again with the markers, which raise the standard encoder's ``ValueError`` (a value nested too
deeply raises ``RecursionError`` from both, as before).
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)  # None where C is missing
_OPTIONS = (_COMPACT.default, json.encoder.encode_basestring, None, ":", ",", False, False, True)
_UNCHECKED: Any = _C_ENCODER(None, *_OPTIONS) if _C_ENCODER is not None else None


def compact_json(value: Any) -> str:
    """``value`` as JSON without spaces, non-ASCII kept as is."""
    if _UNCHECKED is None or isinstance(value, str):
        return _COMPACT.encode(value)
    try:  # one encoder for every call: without a cycle check it keeps no state between calls
        return "".join(_UNCHECKED(value, 0))
    except RecursionError:
        pass  # a cycle, or nesting too deep: the encoder that checks for cycles says which
    # a fresh dict of markers, as JSONEncoder.iterencode makes: "Circular reference detected"
    return "".join(_C_ENCODER({}, *_OPTIONS)(value, 0))


def json_bytes(value: Any) -> int:
    """The size in bytes of ``value`` as compact UTF-8 JSON (what payload limits count)."""
    text = compact_json(value)
    return len(text) if text.isascii() else len(text.encode())  # ASCII: a byte a character


MAX_DEPTH = 64
"""How deeply a JSON document taken from a client may nest arrays and objects (http-api.md,
"Connection limits"): parsers, validators and hashing recurse, and a document nested 100,000
levels deep would exhaust the stack."""

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class TooDeepError(ValueError):
    """A JSON document nests arrays and objects deeper than :data:`MAX_DEPTH`."""

    def __init__(self, max_depth: int = MAX_DEPTH) -> None:
        super().__init__(f"JSON nested deeper than {max_depth} levels is not accepted")


def check_depth(text: str, max_depth: int = MAX_DEPTH) -> None:
    """Raise :class:`TooDeepError` when ``text`` (JSON, not yet parsed) nests deeper than
    ``max_depth``. A text with no more brackets than that cannot, so the usual small document
    costs two counts; otherwise strings are cut out and the brackets left are summed, all in C
    loops, never recursion."""
    if text.count("[") + text.count("{") <= max_depth:
        return
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > max_depth:
        raise TooDeepError(max_depth)
