"""Durations and semantic versions."""

from __future__ import annotations

import pytest

from orbit_actors.ir import format_duration, latest, parse_duration, parse_semver


@pytest.mark.parametrize(
    ("text", "ms"),
    [("250ms", 250), ("30s", 30_000), ("5m", 300_000), ("2h", 7_200_000), ("7d", 604_800_000),
     ("1h30m", 5_400_000), (1500, 1500), ("1500", 1500)],
)  # fmt: skip
def test_durations_are_milliseconds(text: object, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize("bad", ["", "5 minutes", "1.5s", "-3s", -1, True, None, "s5"])
def test_a_malformed_duration_says_what_is_accepted(bad: object) -> None:
    with pytest.raises(ValueError, match="250ms|negative"):
        parse_duration(bad)


def test_formatted_durations_read_back() -> None:
    assert format_duration(5_400_000) == "1h30m"
    assert parse_duration(format_duration(90_061_001)) == 90_061_001


def test_latest_is_the_highest_release_by_precedence() -> None:
    assert latest(["1.0.0", "1.10.0", "1.9.0", "2.0.0-rc.1"]) == "1.10.0"


def test_a_prerelease_is_latest_only_without_any_release() -> None:
    assert latest(["2.0.0-alpha", "2.0.0-alpha.1", "2.0.0-beta"]) == "2.0.0-beta"


def test_build_metadata_is_ignored_and_the_last_registered_wins() -> None:
    assert latest(["1.0.0+a", "1.0.0+b"]) == "1.0.0+b"
    assert latest(["1.0.0+b", "1.0.0+a"]) == "1.0.0+a"


def test_prerelease_identifiers_compare_numerically_then_lexically() -> None:
    order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
             "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"]  # fmt: skip
    keys = [parse_semver(v).precedence for v in order]
    assert keys == sorted(keys)


@pytest.mark.parametrize("bad", ["1.0", "01.0.0", "1.0.0-", "v1.0.0", "1.0.0+"])
def test_a_malformed_version_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="MAJOR.MINOR.PATCH"):
        parse_semver(bad)
