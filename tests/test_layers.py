"""The pure layers import nothing of trio, sqlite, the network or a later layer; the transport
(``orbit_actors/http``) imports nothing of Orbit at all."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "orbit_actors"
ORDER = ["http", "errors", "crashpoints", "ir", "history", "decide", "wire", "mailbox", "store", "views", "api", "observe", "actors", "supervisor",
         "runtime", "server", "worker", "client", "cli", "testing"]  # fmt: skip
PURE = {"ir", "history", "decide", "wire"}
FORBIDDEN_IN_PURE = {"trio", "sqlite3", "socket", "httpx", "asyncio", "threading", "psycopg",
                     "h11", "wsproto", "trio_websocket", "urllib", "http"}  # fmt: skip
SELF_CONTAINED = {"http"}  # layers that may import only themselves of orbit_actors


def imports_of(source: str, package: str) -> list[str]:
    """Absolute names of every module ``source`` imports, relative imports resolved."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                found.append(".".join([*base, node.module] if node.module else base))
            else:
                found.append(node.module or "")
    return found


def violations(layer: str, names: list[str]) -> list[str]:
    """The imports of a module in ``layer`` that break the layering."""
    bad = []
    for name in names:
        own = name == "orbit_actors" or name.startswith("orbit_actors.")
        if layer in SELF_CONTAINED and own and name.split(".")[1:2] != [layer]:
            bad.append(name)
            continue
        if name.startswith("orbit_actors."):
            target = name.split(".")[1]
            if target in ORDER and layer in ORDER and ORDER.index(target) > ORDER.index(layer):
                bad.append(name)
        if layer in PURE and name.split(".")[0] in FORBIDDEN_IN_PURE:
            bad.append(name)
    return bad


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down_the_layers(path: Path) -> None:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    package = ".".join(parts if path.name == "__init__.py" else parts[:-1])
    package = package.removesuffix(".__init__")
    layer = parts[1].removesuffix(".py") if len(parts) > 1 else "orbit_actors"
    layer = "errors" if layer == "__init__" else layer
    if path == PACKAGE / "__init__.py":
        return  # the package root re-exports the public surface
    assert violations(layer, imports_of(path.read_text(), package)) == []


def test_the_walk_catches_a_forbidden_import() -> None:
    source = "import trio\nfrom sqlite3 import connect\nfrom ..store import sqlite\n"
    names = imports_of(source, "orbit_actors.decide")
    assert violations("decide", names) == ["trio", "sqlite3", "orbit_actors.store"]


def test_the_transport_may_import_only_itself_of_orbit() -> None:
    source = "from . import frames\nfrom ..errors import OrbitError\nimport orbit_actors\n"
    names = imports_of(source, "orbit_actors.http")
    assert violations("http", names) == ["orbit_actors.errors", "orbit_actors"]


TEST_ONLY = {"trio_websocket", "wsproto", "h11"}  # test dependencies, not the package's


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_test_only_dependency(path: Path) -> None:
    """The worker's WebSocket client is Orbit's own: a user's install has no trio-websocket."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    package = ".".join(parts[:-1])
    names = imports_of(path.read_text(), package)
    assert [name for name in names if name.split(".")[0] in TEST_ONLY] == []
