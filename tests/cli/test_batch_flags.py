"""``orbit batch``'s instants take epoch milliseconds or ISO 8601 times; anything else is a
usage error naming the flag (exit 2) before any request is sent."""

from __future__ import annotations

import click
import pytest

from orbit_actors.cli import main
from orbit_actors.cli.batches import Instant


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1764547200000", 1_764_547_200_000),
        ("2025-12-01T00:00:00Z", 1_764_547_200_000),
        ("2025-12-01T01:00:00+01:00", 1_764_547_200_000),
        ("2025-12-01T00:00:00", 1_764_547_200_000),
    ],
)
def test_an_instant_is_epoch_milliseconds_or_iso_8601(text: str, ms: int) -> None:
    assert Instant().convert(text, None, None) == ms


def test_a_bad_instant_is_a_usage_error_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["batch", "terminate", "--started-after", "yesterday", "--url", "http://127.0.0.1:1"]
    )
    assert code == 2
    assert "--started-after" in capsys.readouterr().err


def test_an_instant_that_is_not_one_fails() -> None:
    with pytest.raises(click.BadParameter, match="neither epoch milliseconds"):
        Instant().convert("soon", None, None)
