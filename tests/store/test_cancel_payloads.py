"""Tokens cancelled elsewhere go out as NOTIFY payloads, each under PostgreSQL's 8,000 bytes."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("psycopg")

from orbit_actors.store.postgres.cluster import _payloads


def test_many_tokens_are_split_into_payloads_under_the_limit_and_none_is_lost() -> None:
    tokens = {f"{n:016x}@execution-{n}": "cancelled by request " * 3 for n in range(1_000)}
    payloads = _payloads(tokens)
    assert len(payloads) > 1
    assert all(len(p.encode()) < 8_000 for p in payloads)
    merged: dict[str, str] = {}
    for payload in payloads:
        merged.update(json.loads(payload))
    assert merged == tokens


def test_a_long_reason_is_cut() -> None:
    (payload,) = _payloads({"t@e": "x" * 10_000})
    assert json.loads(payload) == {"t@e": "x" * 200}
