"""Which executions a migration moves: the plan is made from the store before anything is
written (so a refused migration leaves every execution on its version), and each compatible
execution is then moved by its owner, which checks its durable history once more."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..actors import commands as cmd
from ..errors import ExecutionNotFoundError, WorkflowNotFoundError
from ..ir.plan import CompiledDefinition
from ..mailbox import Reply
from ..store.base import ExecutionRow, Store
from ..store.definitions import DefinitionRegistry
from . import forwarding as fw
from .registry import Registry
from .upgrade import Upgrades

PAGE = 1000


@dataclass(frozen=True)
class MigrationRequest:
    """``POST /v1/executions/migrate``: the executions of ``workflow@from_version`` (all the
    running ones, or ``ids``) to move to ``to_version``; ``dry_run`` only says which would."""

    workflow: str
    from_version: str
    to_version: str
    ids: list[str] | None = None
    dry_run: bool = False


@dataclass
class MigrationResult:
    """Ids moved (or, dry, that would move), and the executions skipped with why."""

    migrated: list[str]
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def add(self, execution_id: str, outcome: dict[str, Any]) -> None:
        """Note one owner's answer ``{migrated, first_divergent_seq, reason}``."""
        if outcome["migrated"]:
            self.migrated.append(execution_id)
        else:
            self.skipped.append(
                skip(execution_id, outcome["first_divergent_seq"], outcome["reason"])
            )


def skip(execution_id: str, seq: int | None, reason: str) -> dict[str, Any]:
    """One entry of ``skipped``."""
    return {"execution_id": execution_id, "first_divergent_seq": seq, "reason": reason}


@dataclass(frozen=True)
class MigrationPlan:
    """The executions the check found compatible, and those skipped already."""

    compatible: list[str]
    skipped: list[dict[str, Any]]


async def plan_migration(
    store: Store, upgrades: Upgrades, request: MigrationRequest, target: CompiledDefinition
) -> MigrationPlan:
    """Check the executions a request names against ``target``; raises ExecutionNotFoundError
    for a named id that is not stored (before anything is written)."""
    rows = (
        await _named(store, request.ids)
        if request.ids is not None
        else await _running(store, request)
    )
    skipped: list[dict[str, Any]] = []
    eligible: list[str] = []
    for row in rows:
        reason = _ineligible(row, request)
        if reason is None:
            eligible.append(row.execution_id)
        else:
            skipped.append(skip(row.execution_id, None, reason))
    compatible: list[str] = []
    for start in range(0, len(eligible), PAGE):
        ids = eligible[start : start + PAGE]
        _, found = await upgrades.divergences(ids, target)
        for execution_id in ids:
            divergence = found.get(execution_id)
            if divergence is None:
                compatible.append(execution_id)
            else:
                skipped.append(skip(execution_id, divergence.seq, divergence.candidate))
    return MigrationPlan(compatible, skipped)


def _ineligible(row: ExecutionRow, request: MigrationRequest) -> str | None:
    if row.workflow != request.workflow:
        return f"the execution runs workflow `{row.workflow}`"
    if row.status != "running":
        return f"the execution has finished ({row.status})"
    if row.version != request.from_version:
        return f"the execution runs version {row.version}"
    return None


async def _named(store: Store, ids: list[str]) -> list[ExecutionRow]:
    rows: list[ExecutionRow] = []
    for execution_id in dict.fromkeys(ids):
        row = await store.execution(execution_id)
        if row is None:
            raise ExecutionNotFoundError(
                f"execution `{execution_id}` not found; nothing was migrated"
            )
        rows.append(row)
    return rows


async def _running(store: Store, request: MigrationRequest) -> list[ExecutionRow]:
    rows: list[ExecutionRow] = []
    cursor: str | None = None
    while True:
        page = await store.list_executions(
            status="running", workflow=request.workflow, limit=PAGE, cursor=cursor
        )
        rows += [row for row in page.executions if row.version == request.from_version]
        if page.next_cursor is None:
            return rows
        cursor = page.next_cursor


def migrate_here(
    definitions: DefinitionRegistry, registry: Registry
) -> Callable[[str, fw.MigrateCommand], Awaitable[dict[str, Any]]]:
    """How this server carries out a migration of an execution it holds (the router's route):
    the owner's actor checks its history once more and records ``DefinitionMigrated``."""

    async def carry_out(execution_id: str, c: fw.MigrateCommand) -> dict[str, Any]:
        definition = definitions.by_hash(c.definition_hash)
        if definition is None:
            await definitions.refresh()  # registered on another server sharing the store
            definition = definitions.by_hash(c.definition_hash)
        if definition is None:
            raise WorkflowNotFoundError(f"definition {c.definition_hash} is not registered")
        command = cmd.MigrateTo(definition, c.from_version, definitions.by_hash, reply=Reply())
        answer: dict[str, Any] = await registry.request(execution_id, command)
        return answer

    return carry_out
