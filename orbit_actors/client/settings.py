"""Where a client connects and how it proves who it is, from arguments or the environment."""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from typing import Any

from ..api.calls import Call

DEFAULT_URL = "http://127.0.0.1:7233"


@dataclass(frozen=True)
class Settings:
    """A client's server ``url`` (``ORBIT_URL``), its bearer ``headers`` (``ORBIT_TOKEN``), the
    ``trust`` for TLS and the default ``timeout`` of a request in seconds."""

    url: str
    headers: dict[str, str]
    trust: ssl.SSLContext | bool
    timeout: float

    @classmethod
    def of(cls, url: str | None, token: str | None, verify: str | bool, timeout: float) -> Settings:
        """Settings from a client's arguments; ``verify`` is a CA file (PEM) to trust, or a bool."""
        url = (url or os.environ.get("ORBIT_URL") or DEFAULT_URL).rstrip("/")
        token = token if token is not None else os.environ.get("ORBIT_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        trust = ssl.create_default_context(cafile=verify) if isinstance(verify, str) else verify
        return cls(url, headers, trust, timeout)

    def timeout_for(self, seconds: float | None) -> float:
        """The timeout of one request: the default, or longer for a long poll."""
        return self.timeout if seconds is None else max(self.timeout, seconds)

    def client_options(self) -> dict[str, Any]:
        """The keyword arguments of an httpx client (sync or async) for these settings."""
        return {
            "base_url": self.url, "headers": self.headers, "timeout": self.timeout,
            "verify": self.trust,
        }  # fmt: skip

    def request_options(self, call: Call[Any]) -> dict[str, Any]:
        """The keyword arguments of the httpx request that sends ``call``."""
        headers = {"Content-Type": call.content_type} if call.content_type else None
        return {
            "method": call.method, "url": call.path, "json": call.json, "content": call.content,
            "headers": headers, "params": call.params, "timeout": self.timeout_for(call.timeout),
        }  # fmt: skip
