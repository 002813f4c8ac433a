"""The CEL interpreter of ``common-expression-language`` (its Rust extension, ``cel.cel``),
loaded without the package's ``__init__``: that also imports the package's interactive command
line (prompt_toolkit, rich), which was about half of the server's start-up time. The package is
left unimported, so code that later imports ``cel`` gets all of it, sharing this extension."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import cel as _typed


def _load() -> types.ModuleType:
    if "cel" in sys.modules:  # already imported whole: use it
        return sys.modules["cel"]
    spec = importlib.util.find_spec("cel")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the package common-expression-language (module cel) is not installed")
    stub = types.ModuleType("cel")
    stub.__path__ = list(spec.submodule_search_locations)
    sys.modules["cel"] = stub
    try:
        return importlib.import_module("cel.cel")
    finally:
        del sys.modules["cel"]


if TYPE_CHECKING:
    cel = _typed
else:
    cel = _load()

__all__ = ["cel"]
