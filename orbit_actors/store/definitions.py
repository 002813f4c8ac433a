"""The registered definitions, compiled once and kept by hash; "latest" by semver precedence."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import trio

from ..errors import DefinitionConflictError, WorkflowNotFoundError
from ..ir import CompiledDefinition, compile_ir, compile_source
from ..ir.semver import latest
from ..store.base import DefinitionRecord, Store


class DefinitionRegistry:
    """Every definition of the store, compiled; registration goes through the store first."""

    def __init__(self, store: Store, schedule_to_start_ms: int | None = None) -> None:
        self._store = store
        self._schedule_to_start_ms = schedule_to_start_ms
        self._by_hash: dict[str, CompiledDefinition] = {}
        self._versions: dict[str, list[str]] = {}  # name -> versions in registration order
        self._latest: dict[str, str] = {}  # name -> its latest version (worked out on register)
        self._records: dict[tuple[str, str], DefinitionRecord] = {}
        self._task_versions: dict[str, set[str]] = {}

    @property
    def schedule_to_start_ms(self) -> int | None:
        """The server's default schedule-to-start, which every compiled definition carries."""
        return self._schedule_to_start_ms

    async def load(self) -> None:
        """Read and compile every stored definition."""
        for record in await self._store.definitions():
            self._add(record, compile_ir(json.loads(record.ir)))

    async def refresh(self) -> int:
        """Add the definitions another server sharing the store registered since (a miss
        calls this before it is answered); returns how many were new."""
        added = 0
        for record in await self._store.definitions():
            if (record.name, record.version) not in self._records:
                self._add(record, compile_ir(json.loads(record.ir)))
                added += 1
        return added

    def _add(self, record: DefinitionRecord, compiled: CompiledDefinition) -> None:
        compiled.default_schedule_to_start_ms = self._schedule_to_start_ms
        self._by_hash[record.definition_hash] = compiled
        self._records[(record.name, record.version)] = record
        versions = self._versions.setdefault(record.name, [])
        versions.append(record.version)
        self._latest[record.name] = latest(versions) or record.version
        for task, contract in compiled.ir.tasks.items():
            self._task_versions.setdefault(task, set()).add(contract.version)

    async def register(
        self, source: str | dict[str, Any], now_ms: int
    ) -> tuple[DefinitionRecord, bool]:
        """Compile (children pinned and required) and store a definition; returns the record
        and whether it was created. Raises DefinitionError, ChildNotRegisteredError or
        DefinitionConflictError."""
        resolve = self.child_hash
        if isinstance(source, str):
            work = partial(compile_source, source, resolve_child=resolve, require_children=True)
        else:
            work = partial(compile_ir, source, resolve_child=resolve, require_children=True)
        compiled = await trio.to_thread.run_sync(work)  # a large definition must not stall actors
        ir = json.dumps(compiled.ir.to_ir_dict(), sort_keys=True)
        record = DefinitionRecord(
            compiled.name, compiled.version, compiled.definition_hash, ir, now_ms
        )
        put = await self._store.put_definition(record)
        if put.outcome == "conflict":
            raise DefinitionConflictError(
                f"{compiled.name}@{compiled.version} is already registered with a different "
                f"definition ({put.record.definition_hash}); workflow definitions are immutable, "
                "bump the version"
            )
        if put.outcome == "created":
            self._add(record, compiled)
        return put.record, put.outcome == "created"

    def child_hash(self, name: str, version: str) -> str | None:
        """The hash of a registered ``name@version``."""
        record = self._records.get((name, version))
        return record.definition_hash if record else None

    def by_hash(self, definition_hash: str) -> CompiledDefinition | None:
        """A compiled definition by its hash."""
        return self._by_hash.get(definition_hash)

    def resolve(self, name: str, version: str | None) -> CompiledDefinition:
        """``name@version``, or the latest version; raises WorkflowNotFoundError."""
        if version is None:
            version = self._latest.get(name)
        record = self._records.get((name, version or ""))
        if record is None:
            shown = f"{name}@{version}" if version else name
            raise WorkflowNotFoundError(f"workflow {shown} is not registered")
        return self._by_hash[record.definition_hash]

    def record(self, name: str, version: str | None) -> DefinitionRecord:
        """The stored record of ``name@version`` (or the latest); raises WorkflowNotFoundError."""
        compiled = self.resolve(name, version)
        return self._records[(compiled.name, compiled.version)]

    def records(self) -> list[DefinitionRecord]:
        """Every definition, in registration order."""
        return list(self._records.values())

    def task_versions(self, task_name: str) -> set[str]:
        """Contract versions of a task that registered workflows use."""
        return set(self._task_versions.get(task_name, set()))
