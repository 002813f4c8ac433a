"""The public surface is pinned: a change to it is a decision, not an accident."""

from __future__ import annotations

import orbit_actors
from orbit_actors import client, decide, history, ir, server, worker


def test_the_package_exports() -> None:
    assert sorted(orbit_actors.__all__) == sorted(
        [
            "ApiError",
            "AsyncClient",
            "Client",
            "TaskContext",
            "TaskFailed",
            "Worker",
            "CompiledDefinition",
            "DefinitionError",
            "OrbitError",
            "Problem",
            "__version__",
            "compile_ir",
            "compile_source",
        ]
    )


def test_every_export_exists() -> None:
    for module in (orbit_actors, ir, history, decide, server, worker, client):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"
