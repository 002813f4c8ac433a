"""Orbit: a durable workflow runtime built on trio actors.

The pure core: :mod:`orbit_actors.ir` (definitions), :mod:`orbit_actors.history` (events and
state) and :mod:`orbit_actors.decide` (the decider). Errors: :mod:`orbit_actors.errors`.
"""

from .errors import DefinitionError, OrbitError, Problem
from .ir import CompiledDefinition, compile_ir, compile_source

__version__ = "0.1.0"

__all__ = [
    "CompiledDefinition",
    "DefinitionError",
    "OrbitError",
    "Problem",
    "__version__",
    "compile_ir",
    "compile_source",
]
