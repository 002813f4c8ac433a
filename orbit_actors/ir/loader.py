"""Reading definitions from YAML or JSON text so that every error names the file, the line and
column, and the field path (``steps[2].input.amount``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import DefinitionError, Problem
from .models import Definition
from .suggest import did_you_mean, field_names

Path = tuple[str | int, ...]


class _Loader(yaml.SafeLoader):
    """SafeLoader without implicit timestamps, so every scalar is a JSON value."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass
class Locator:
    """Where each path of a loaded document starts in its text (1-based line and column)."""

    file: str | None
    marks: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def problem(self, path: Path, reason: str, near: str | None = None) -> Problem:
        """A problem at ``path``, placed at the nearest enclosing position known; ``near`` is
        the text it is about, for a caret under it."""
        line = column = None
        for cut in range(len(path), -1, -1):
            found = self.marks.get(path[:cut])
            if found is not None:
                line, column = found
                break
        return Problem(format_path(path), reason, self.file, line, column, near)


def format_path(path: Sequence[str | int]) -> str:
    """``("steps", 2, "input", "amount")`` → ``steps[2].input.amount``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def load_document(text: str, file: str | None = None) -> tuple[Any, Locator]:
    """Parse YAML (JSON is YAML) into plain data and a :class:`Locator`; raises
    :class:`DefinitionError` for syntax errors, duplicate keys and non-JSON values."""
    locator = Locator(file)
    loader: _Loader | None = None
    try:
        loader = _Loader(text)
        node = loader.get_single_node()
        if node is None:
            raise DefinitionError([Problem("", "the document is empty", file, 1, 1)])
        return _build(node, (), loader, locator), locator
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        reason = " ".join(filter(None, [exc.context, exc.problem])) or "invalid YAML"
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise DefinitionError(
            [Problem("", f"invalid YAML: {reason}", file, line, column)]
        ) from None
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split())
        raise DefinitionError([Problem("", f"invalid YAML: {reason}", file)]) from None
    except RecursionError:
        reason = "the document nests too deeply or an alias refers to itself"
        raise DefinitionError([Problem("", reason, file)]) from None
    finally:
        if loader is not None:
            loader.dispose()


def _build(node: yaml.Node, path: Path, loader: _Loader, locator: Locator) -> Any:
    locator.marks.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        loader.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                key = _key_text(key, path, key_node, locator)
            if key in out:
                raise _at(locator, (*path, key), key_node, f"duplicate key {key!r}")
            mark = key_node.start_mark
            locator.marks[(*path, key)] = (mark.line + 1, mark.column + 1)
            out[key] = _build(value_node, (*path, key), loader, locator)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*path, i), loader, locator) for i, item in enumerate(node.value)]
    value = loader.construct_object(node, deep=True)
    if value is not None and not isinstance(value, bool | int | float | str):
        raise _at(locator, path, node, f"a {type(value).__name__} is not a JSON value")
    return value


def _key_text(key: object, path: Path, node: yaml.Node, locator: Locator) -> str:
    if isinstance(key, bool | int | float):
        return str(key).lower() if isinstance(key, bool) else str(key)
    raise _at(locator, path, node, "mapping keys must be strings")


def _at(locator: Locator, path: Path, node: yaml.Node, reason: str) -> DefinitionError:
    mark = node.start_mark
    problem = Problem(format_path(path), reason, locator.file, mark.line + 1, mark.column + 1)
    return DefinitionError([problem])


def parse_definition(data: Any, locator: Locator | None = None) -> Definition:
    """Validate plain data as a :class:`Definition`; raises :class:`DefinitionError` whose
    problems name each field path (and line and column when a locator is given)."""
    locator = locator or Locator(None)
    if not isinstance(data, dict):
        raise DefinitionError([locator.problem((), "a definition must be a mapping (object)")])
    deep = _too_deep(data)
    if deep is not None:
        reason = f"values may nest at most {MAX_DEPTH} levels deep"
        raise DefinitionError([locator.problem(deep, reason)])
    try:
        return Definition.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            path = _clean_loc(data, err["loc"])
            problems.append(locator.problem(path, _reason(err, path)))
        raise DefinitionError(problems) from None


def load_definition(text: str, file: str | None = None) -> tuple[Definition, Locator]:
    """Load and validate one definition from YAML or JSON text."""
    data, locator = load_document(text, file)
    return parse_definition(data, locator), locator


MAX_DEPTH = 100


def _too_deep(data: Any) -> Path | None:
    """The path of the first value nested deeper than :data:`MAX_DEPTH`, if any."""
    stack: list[tuple[Any, Path]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if len(path) > MAX_DEPTH:
            return path[:MAX_DEPTH]
        if isinstance(node, dict):
            stack.extend((v, (*path, k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(node))
    return None


def _clean_loc(data: Any, loc: Sequence[str | int]) -> Path:
    """Keep the parts of a pydantic location that are real keys or indexes of ``data``,
    dropping union tags such as ``list[literal[...]]``."""
    path: list[str | int] = []
    node: Any = data
    for part in loc:
        if _holds(node, part):
            node = node[part]
        elif isinstance(node, dict) and isinstance(part, str) and not _is_tag(part):
            path.append(part)  # a missing required field: name it, then stop
            break
        else:
            continue
        path.append(part)
    return tuple(path)


def _holds(node: Any, part: str | int) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _is_tag(part: str) -> bool:
    return "[" in part or part in {"Schema", "str", "int", "list", "dict", "bool", "float"}


def _reason(err: Any, path: Path) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        name = path[-1] if path else ""
        return "unknown field" + (
            did_you_mean(name, field_names(path)) if isinstance(name, str) else ""
        )
    if kind == "missing":
        return "is required"
    message = str(err["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return message
