"""The handlers of the upgrade check, migration and step-by-step replay (operations.md). Their
rows are in :data:`orbit_actors.server.api.ENDPOINTS`. A check and a replay write nothing."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..api import upgrade_models as u
from ..decide.compat import Divergence
from ..errors import DefinitionError, Problem
from ..history.events import event_to_dict
from ..ir.jsontext import TooDeepError, check_depth
from ..ir.plan import CompiledDefinition
from ..supervisor.migration import MigrationRequest

if TYPE_CHECKING:
    from .api import Answer, Call


def definition_source(text: str, content_type: str) -> str | dict[str, Any]:
    """A definition body: the IR when it is a JSON object (unless sent as YAML), else YAML
    source (whose errors carry line and column)."""
    if "yaml" in content_type:
        return text
    try:
        check_depth(text)
    except TooDeepError as exc:
        raise DefinitionError([Problem("", str(exc))]) from None
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    return parsed if isinstance(parsed, dict) else text


def candidate_ref(definition: CompiledDefinition) -> dict[str, str]:
    """``{name, version, definition_hash}`` of a candidate."""
    return {
        "name": definition.name,
        "version": definition.version,
        "definition_hash": definition.definition_hash,
    }


async def check_definition(call: Call) -> Answer:
    """Check a candidate against a page of the running executions of ``name@version``."""
    query: u.CheckQuery = call.query
    source = definition_source(call.body, call.content_type)
    candidate, page = await call.runtime.check_candidate(
        call.params["name"], call.params["version"], source, query.limit, query.cursor
    )
    incompatible = [
        {
            "execution_id": item.execution_id,
            "run": item.run,
            "first_divergent_seq": item.divergence.seq,
            "recorded": item.divergence.recorded,
            "candidate": item.divergence.candidate,
        }
        for item in page.incompatible
    ]
    return 200, {
        "candidate": candidate_ref(candidate),
        "checked": page.checked,
        "compatible": page.checked - len(incompatible),
        "incompatible": incompatible,
        "next_cursor": page.next_cursor,
    }


async def migrate_executions(call: Call) -> Answer:
    """Move the compatible running executions to a registered version."""
    body: u.MigrateExecutions = call.body
    request = MigrationRequest(
        body.workflow, body.from_version, body.to_version, body.ids, body.dry_run
    )
    result = await call.runtime.migrate(request)
    return 200, {"migrated": result.migrated, "skipped": result.skipped, "dry_run": body.dry_run}


async def replay_execution(call: Call) -> Answer:
    """One point of a run, decided by the definition in force there."""
    query: u.ReplayQuery = call.query
    return 200, await _replay(call, query.run, query.at, None)


async def replay_candidate(call: Call) -> Answer:
    """One point of a run, decided by a candidate, with where the candidate diverges."""
    body: u.ReplayCandidate = call.body
    return 200, await _replay(call, body.run, body.at, body.definition)


async def _replay(
    call: Call, run: int | None, at: int | None, source: str | dict[str, Any] | None
) -> dict[str, Any]:
    execution_id = call.params["execution_id"]
    if isinstance(source, str):
        source = definition_source(source, "")
    number, point, candidate, divergence = await call.runtime.replay(execution_id, run, at, source)
    answer: dict[str, Any] = {
        "execution_id": execution_id,
        "run": number,
        "at": point.at,
        "last_seq": point.last_seq,
        "event": event_to_dict(point.event),
        "state": point.state,
        "decided": [event_to_dict(event) for event in point.decided],
    }
    if candidate is not None:
        answer["candidate"] = candidate_ref(candidate)
        answer["diverges_at"] = divergence.seq if divergence else None
        answer["divergence"] = _divergence(divergence)
    return answer


def _divergence(found: Divergence | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {"seq": found.seq, "recorded": found.recorded, "candidate": found.candidate}
