"""The web console's files (architecture.md, "Observability"): plain HTML, CSS and JavaScript
modules inside the package, served at ``/`` by the server with no build step.

:func:`asset` maps a request path to one of the files shipped here. The map is built once from
the package's own directory, so a path is only ever looked up, never joined to the file system:
``..``, encoded slashes or absolute paths simply name no asset. The files hold no data (the
pages fetch everything from the public ``/v1`` API with the user's token), so they are served
without authentication.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}
PREFIX = "/console/"  # where the assets live; the page itself is ``/``
# Same-origin only: the console's own scripts and styles, API calls to the server that served it.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


@dataclass(frozen=True)
class Asset:
    """One console file: its bytes, content type and entity tag."""

    body: bytes
    content_type: str
    etag: str

    def headers(self) -> list[tuple[str, str]]:
        """The headers it is served with: revalidated on every load (``no-cache`` with an
        ``ETag``), so an upgraded server never runs a stale script, yet an unchanged file costs
        a 304 only."""
        return [
            ("cache-control", "no-cache"),
            ("etag", self.etag),
            ("x-content-type-options", "nosniff"),
            ("content-security-policy", POLICY),
            ("referrer-policy", "no-referrer"),
        ]


def asset(path: str) -> Asset | None:
    """The asset served at ``path`` (``/`` is the page), or None when there is none."""
    if path == "/":
        return _assets().get("index.html")
    if not path.startswith(PREFIX):
        return None
    return _assets().get(path[len(PREFIX) :])


def is_console_path(path: str) -> bool:
    """Whether ``path`` belongs to the console (its page or its assets)."""
    return path == "/" or path.startswith(PREFIX)


@cache
def _assets() -> dict[str, Asset]:
    found: dict[str, Asset] = {}
    root = resources.files(__name__)
    pending = [(root, "")]
    while pending:
        folder, prefix = pending.pop()
        for entry in folder.iterdir():
            name = prefix + entry.name
            if entry.is_dir():
                pending.append((entry, name + "/"))
                continue
            content_type = CONTENT_TYPES.get("." + entry.name.rpartition(".")[2])
            if content_type is not None:
                body = entry.read_bytes()
                etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
                found[name] = Asset(body, content_type, etag)
    return found
