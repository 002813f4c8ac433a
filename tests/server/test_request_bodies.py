"""What the API takes from a start's body and query: the one-pass parse of a start's body takes
and refuses exactly what the two-step parse (``json.loads``, then strict validation) does, with
the same words, and a query kept from an earlier request is the query validated anew."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from orbit_actors.api import models as m
from orbit_actors.errors import InvalidRequestError
from orbit_actors.server.app import _describe, _json_body, _Queries, _validated_body

HOSTILE = [
    '{"workflow":"a"}',
    ' {"workflow":"a","input":{"x":[1,2.5,{"y":null}]}}\n',
    '\ufeff{"workflow":"a"}',  # a byte order mark
    '{"workflow":"a\x01b"}',  # a raw control character
    '{"workflow":"a","input":"\t"}',
    '{"workflow":"\\ud800"}',  # lone surrogates
    '{"workflow":"a","input":"\\udc00x"}',
    '{"workflow":"a"} x',  # trailing data
    '{"workflow":"a","input":[1,]}',
    '{"workflow":"a","input":01}',
    '{"workflow":"a","input":NaN}',
    '{"workflow":"a","input":-Infinity}',
    '{"workflow":"a","input":1e400}',
    '{"workflow":"a","input":123456789012345678901234567890123}',
    '{"workflow":"a","input":1E2,"version":"1"}',
    '{"workflow":"a","workflow":"b"}',  # a repeated key: the last one
    '{"workflow":"a","input":"\\uD83D\\uDE00"}',
    '{"workflow":"a","input":"\\u0000"}',
    '{"workflow":""}',
    '{"workflow":1}',
    '{"workflow":"a","version":2}',
    '{"workflow":"a","extra":true}',
    '{"input":{}}',
    "[]",
    "null",
    '"workflow"',
    "{" * 70 + "}" * 70,
    '{"workflow":"a","input":' + "[" * 70 + "]" * 70 + "}",
]


def _two_step(text: str) -> m.StartExecution:
    """The body as it was read before the one-pass parse: ``json.loads``, then strict
    validation."""
    parsed = _json_body(text.encode())
    try:
        return m.StartExecution.model_validate(parsed, strict=True)
    except ValidationError as exc:
        raise InvalidRequestError(_describe(exc, "body")) from None


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        value = call()
    except InvalidRequestError as exc:
        return "refused", exc.message
    return "taken", repr(value)


@pytest.mark.parametrize("text", HOSTILE)
def test_a_start_body_is_taken_or_refused_as_the_two_step_parse_does(text: str) -> None:
    one_pass = _outcome(lambda: _validated_body(m.StartExecution, text.encode()))
    assert one_pass == _outcome(lambda: _two_step(text))


def test_a_kept_query_is_the_query_validated_again() -> None:
    queries = _Queries()
    first = queries.validated(m.StartQuery, {"wait": "60"})
    assert first == queries.validated(m.StartQuery, {"wait": "60"}) == m.StartQuery(wait=60)
    assert queries.validated(m.StartQuery, {}) == m.StartQuery()


def test_a_refused_query_is_refused_every_time() -> None:
    queries = _Queries()
    for _ in range(2):
        with pytest.raises(InvalidRequestError, match="query.wait"):
            queries.validated(m.StartQuery, {"wait": "-1"})
