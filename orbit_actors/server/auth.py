"""Bearer tokens (http-api.md, "Authentication").

An admin token guards the API; worker tokens guard the worker endpoints (the WebSocket and the
HTTP task fallback). A worker token may be bound to one worker id (``WORKER_ID=TOKEN``): then it
registers only as that worker and reports only that worker's tasks. Tokens are compared in
constant time, against every configured token (so the time taken does not tell which one came
close), and never logged.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InvalidRequestError


@dataclass(frozen=True)
class WorkerToken:
    """A worker token, bound to ``worker_id`` when one is given."""

    token: str
    worker_id: str | None = None


@dataclass(frozen=True)
class Credentials:
    """The tokens a server accepts; none configured means that side is open."""

    admin_token: str | None = None
    worker_tokens: tuple[WorkerToken, ...] = field(default=())

    @property
    def admin_required(self) -> bool:
        """True when the API needs the admin token."""
        return self.admin_token is not None

    @property
    def workers_required(self) -> bool:
        """True when the worker endpoints need a worker token."""
        return bool(self.worker_tokens)

    def is_admin(self, authorization: str | None) -> bool:
        """True when the header carries the admin token (or none is required)."""
        if self.admin_token is None:
            return True
        return _same(_bearer(authorization), self.admin_token)

    def worker(self, authorization: str | None) -> WorkerToken | None:
        """The worker token the header carries, or None when it carries none that is valid.
        With no worker tokens configured every caller is an unbound worker."""
        if not self.worker_tokens:
            return WorkerToken("")
        presented = _bearer(authorization)
        found: WorkerToken | None = None
        for candidate in self.worker_tokens:  # every one compared: no early exit
            if _same(presented, candidate.token):
                found = candidate
        return found


def parse_worker_token(text: str) -> WorkerToken:
    """``TOKEN`` or ``WORKER_ID=TOKEN``."""
    text = text.strip()
    worker_id, equals, token = text.partition("=")
    if not equals:
        worker_id, token = "", text
    if not token:
        raise InvalidRequestError(
            "--worker-token takes TOKEN or WORKER_ID=TOKEN; the token is empty"
        )
    return WorkerToken(token, worker_id or None)


def read_token_file(path: Path) -> list[str]:
    """The non-empty, non-comment lines of a token file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidRequestError(f"cannot read the token file {path}: {exc.strerror}") from None
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _bearer(authorization: str | None) -> str:
    if not authorization:
        return ""
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _same(presented: str, expected: str) -> bool:
    return hmac.compare_digest(presented.encode(), expected.encode()) and bool(expected)
