"""Semantic versions (``MAJOR.MINOR.PATCH[-pre][+build]``) and their precedence, so "the latest"
version of a workflow is chosen the way semver.org says."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


@dataclass(frozen=True)
class SemVer:
    """A parsed version; ``precedence`` orders versions, ignoring build metadata."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...]
    build: str | None

    @property
    def is_release(self) -> bool:
        """True when the version has no pre-release part."""
        return not self.prerelease

    @property
    def precedence(self) -> tuple[object, ...]:
        """A sort key: releases above their pre-releases, identifiers compared as semver says."""
        pre: tuple[object, ...] = tuple(
            (0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.prerelease
        )
        return (self.major, self.minor, self.patch, 0 if self.prerelease else 1, pre)


def parse_semver(text: str) -> SemVer:
    """Parse ``text``; raises ``ValueError`` naming the expected form."""
    match = _SEMVER.fullmatch(text)
    if match is None:
        raise ValueError(
            f"{text!r} is not a semantic version; expected MAJOR.MINOR.PATCH[-pre][+build]"
        )
    major, minor, patch, pre, build = match.groups()
    return SemVer(int(major), int(minor), int(patch), tuple(pre.split(".")) if pre else (), build)


def latest(versions: Iterable[str]) -> str | None:
    """The latest of ``versions`` in registration order: the highest release by precedence (the
    last registered among equals), or the highest pre-release when there is no release."""
    best: tuple[tuple[bool, tuple[object, ...]], str] | None = None
    for version in versions:
        parsed = parse_semver(version)
        key = (parsed.is_release, parsed.precedence)
        if best is None or key >= best[0]:
            best = (key, version)
    return None if best is None else best[1]
