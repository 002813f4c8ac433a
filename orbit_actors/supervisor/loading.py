"""Bringing an execution back from its durable history: its state and the definition it runs."""

from __future__ import annotations

from ..errors import ExecutionNotFoundError, OrbitError
from ..history.apply import replay
from ..history.events import DefinitionMigrated, Event, WorkflowCreated
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from ..store.base import Store
from ..store.definitions import DefinitionRegistry

_DEFINES = (WorkflowCreated, DefinitionMigrated)


class Loader:
    """Replays an execution's current run from the store."""

    def __init__(self, store: Store, definitions: DefinitionRegistry) -> None:
        self._store = store
        self._definitions = definitions

    async def __call__(self, execution_id: str) -> tuple[ExecutionState, CompiledDefinition]:
        """The state the history describes and its definition; raises ExecutionNotFoundError."""
        return await self.with_history(execution_id, await self._store.history(execution_id))

    async def with_history(
        self, execution_id: str, history: list[Event]
    ) -> tuple[ExecutionState, CompiledDefinition]:
        """Like :meth:`from_history`, reading definitions registered since (by another server
        sharing the store) when the one it needs is not known here (the one the run started
        with, or the one it was migrated to)."""
        needed = {e.definition_hash for e in history if isinstance(e, _DEFINES)}
        if any(self._definitions.by_hash(h) is None for h in needed):
            await self._definitions.refresh()
        return self.from_history(execution_id, history)

    def from_history(
        self, execution_id: str, history: list[Event]
    ) -> tuple[ExecutionState, CompiledDefinition]:
        """The state ``history`` (already read) describes and its definition."""
        if not history:
            raise ExecutionNotFoundError()
        state = replay(history)
        definition = self._definitions.by_hash(state.definition_hash)
        if definition is None:
            missing = state.definition_hash
            raise OrbitError(f"execution `{execution_id}` needs definition {missing}, not stored")
        return state, definition
