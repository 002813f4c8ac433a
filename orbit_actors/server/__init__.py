"""The server: the HTTP API and the worker gateway on one port (see :mod:`.serve`)."""

from .app import AppState, OrbitApp
from .serve import DEFAULT_BIND, ServerOptions, serve

__all__ = ["DEFAULT_BIND", "AppState", "OrbitApp", "ServerOptions", "serve"]
