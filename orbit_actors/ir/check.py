"""Every problem of a definition file in one pass, for ``orbit check``: syntax, fields,
the language's rules and (unless asked not to) the expressions' types.

The server stops at the first stage that fails; a person fixing a file wants the whole list.
So unknown fields are reported and then set aside, and the definition without them goes
through the compiler and the type checker too."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..errors import DefinitionError, Problem
from .compile import ChildResolver, compile_definition
from .loader import Locator, Path, load_document, parse_definition
from .models import Definition
from .plan import CompiledDefinition
from .typecheck import type_problems


@dataclass
class Checked:
    """What checking one file found: the compiled definition when it is valid, and every
    problem (sorted by line) when it is not."""

    definition: Definition | None = None
    locator: Locator | None = None
    compiled: CompiledDefinition | None = None
    problems: list[Problem] = field(default_factory=list)


def load_checked(text: str, file: str | None = None) -> Checked:
    """Load and validate ``text``; unknown fields are problems and are then left out, so the
    rest of the definition is still loaded (and can be compiled) when that is all."""
    try:
        data, locator = load_document(text, file)
    except DefinitionError as exc:
        return Checked(problems=list(exc.problems))
    try:
        return Checked(parse_definition(data, locator), locator)
    except DefinitionError as exc:
        problems = list(exc.problems)
    trimmed = _without_unknown_fields(data)
    if trimmed is None:
        return Checked(locator=locator, problems=problems)
    try:
        return Checked(parse_definition(trimmed, locator), locator, problems=problems)
    except DefinitionError:
        return Checked(locator=locator, problems=problems)


def compile_checked(
    checked: Checked, resolve_child: ChildResolver | None = None, *, types: bool = True
) -> Checked:
    """Compile what :func:`load_checked` loaded, adding the compiler's and the type
    checker's problems; ``compiled`` is set only when there is no problem at all."""
    if checked.definition is None or checked.locator is None:
        return checked
    problems = list(checked.problems)
    compiled = None
    try:
        compiled = compile_definition(
            checked.definition, resolve_child=resolve_child, locator=checked.locator
        )
    except DefinitionError as exc:
        problems += exc.problems
    if types:
        problems += type_problems(checked.definition, checked.locator)
    problems.sort(key=lambda p: (p.line or 0, p.column or 0))
    return Checked(checked.definition, checked.locator, None if problems else compiled, problems)


def _without_unknown_fields(data: Any) -> Any | None:
    """``data`` without the fields the models do not know; None when there are none (then
    the problems are of another kind and the definition cannot be loaded)."""
    try:
        Definition.model_validate(data)
    except ValidationError as exc:
        unknown = [err["loc"] for err in exc.errors() if err["type"] == "extra_forbidden"]
        if not unknown:
            return None
        trimmed = copy.deepcopy(data)
        for loc in unknown:
            _remove(trimmed, _real_path(trimmed, loc))
        return trimmed
    return None


def _real_path(data: Any, loc: tuple[Any, ...]) -> Path:
    """The keys and indexes of a pydantic location that exist in ``data`` (tags dropped)."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        ):
            node = node[part]
            path.append(part)
    return tuple(path)


def _remove(data: Any, path: Path) -> None:
    node = data
    for part in path[:-1]:
        node = node[part]
    if path and isinstance(node, dict):
        node.pop(path[-1], None)
