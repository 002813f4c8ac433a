"""The server: the HTTP API and the worker gateway on one hypercorn port (see :mod:`.serve`)."""

from .app import AppState, create_app
from .serve import DEFAULT_BIND, ServerOptions, serve

__all__ = ["DEFAULT_BIND", "AppState", "ServerOptions", "create_app", "serve"]
