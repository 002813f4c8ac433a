"""Expressions checked against the schemas a definition declares: a field read from ``input``,
from a task's output (``steps.<id>.output``, the task's ``output`` schema) or from a signal's
payload (``steps.<id>.output`` of an ``await`` step) must be a field the schema declares, and a
comparison of a field with a literal must compare like with like (a string with a string).

A schema that allows undeclared properties (``additionalProperties: true``), or declares none,
says nothing about a field, so nothing is refused there. These checks are what ``orbit check``
adds to the language's own rules (``--no-types`` leaves them out); the server does not run
them, so a definition it accepted before is accepted still."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from ..errors import Problem
from .expressions import TemplateError, compile_template
from .loader import Locator, Path
from .models import Definition, Step
from .schema import Schema
from .suggest import did_you_mean

_TOKENS: Final = re.compile(
    r"""(?P<str>'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")"""
    r"|(?P<chain>[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)"
    r"|(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
    r"|(?P<op>==|!=|<=|>=|<|>)"
    r"|(?P<other>\S)"
)


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str


def type_problems(definition: Definition, locator: Locator) -> list[Problem]:
    """Every read of an undeclared field and every string/number comparison, with its path."""
    checker = _TypeChecker(definition)
    problems: list[Problem] = []
    for path, source in _expressions(definition):
        for reason, near in checker.check(source):
            problem = locator.problem(path, reason)
            problems.append(_near(problem, near))
    return problems


def _near(problem: Problem, near: str) -> Problem:
    return Problem(problem.path, problem.reason, problem.file, problem.line, problem.column, near)


class _TypeChecker:
    """The schema each root of a field path reads: ``input`` and ``steps.<id>.output``."""

    def __init__(self, definition: Definition) -> None:
        self.input = definition.input
        self.outputs: dict[str, Schema | None] = {}
        for step in _all_steps(definition):
            self.outputs[step.id] = self._output_schema(definition, step)

    @staticmethod
    def _output_schema(definition: Definition, step: Step) -> Schema | None:
        if step.fans_out:
            return None  # a list of the elements' outputs
        if step.task is not None and step.task in definition.tasks:
            return definition.tasks[step.task].output
        if step.await_ is not None:
            return definition.signals.get(step.await_)
        return None

    def check(self, source: str) -> Iterator[tuple[str, str]]:
        """``(reason, the text it is about)`` for each problem of one expression."""
        tokens = [_Token(m.lastgroup or "", m.group()) for m in _TOKENS.finditer(source)]
        for index, token in enumerate(tokens):
            if token.kind == "chain":
                called = index + 1 < len(tokens) and tokens[index + 1].text == "("
                # `a.b.map(x, …)`: the last name is a method, not a field
                yield from self._field(token.text.rsplit(".", 1)[0] if called else token.text)
            elif token.kind == "op" and 0 < index < len(tokens) - 1:
                yield from self._comparison(tokens[index - 1], token, tokens[index + 1])

    def _root(self, parts: list[str]) -> tuple[str, Schema | None, list[str]] | None:
        """The name shown for the root, its schema and the fields read below it."""
        if parts[0] == "input":
            return "input", self.input, parts[1:]
        if len(parts) >= 3 and parts[0] == "steps" and parts[2] == "output":
            return f"steps.{parts[1]}.output", self.outputs.get(parts[1]), parts[3:]
        return None

    def _field(self, chain: str) -> Iterator[tuple[str, str]]:
        found = self._resolve(chain)
        if isinstance(found, str):
            yield found, chain.split(".")[-1]

    def _resolve(self, chain: str) -> Schema | str | None:
        """The schema at ``chain``; a reason when it names an undeclared field; None when
        nothing is known about it."""
        parts = [part.strip() for part in chain.split(".")]
        root = self._root(parts)
        if root is None or root[1] is None:
            return None
        shown, schema, fields = root
        for name in fields:
            if schema is None or _is_open(schema):
                return None
            properties = schema.properties or {}
            if name not in properties:
                return f"{shown} has no field `{name}`{did_you_mean(name, properties)}"
            schema, shown = properties[name], f"{shown}.{name}"
        return schema

    def _comparison(self, left: _Token, op: _Token, right: _Token) -> Iterator[tuple[str, str]]:
        kinds = (self._kind(left), self._kind(right))
        if _mixed(kinds):
            field = left if left.kind == "chain" else right
            other = kinds[1] if field is left else kinds[0]
            mine = kinds[0] if field is left else kinds[1]
            yield (f"`{field.text} {op.text} …` compares {field.text} ({mine}) with a {other}; "
                   "they are never equal and cannot be ordered", field.text)  # fmt: skip

    def _kind(self, token: _Token) -> str | None:
        if token.kind == "str":
            return "string"
        if token.kind == "num":
            return "number"
        if token.kind != "chain":
            return None
        found = self._resolve(token.text)
        if not isinstance(found, Schema) or len(found.types) != 1:
            return None
        return found.types[0]


def _mixed(kinds: tuple[str | None, str | None]) -> bool:
    """One side a string, the other a number (an integer is a number)."""
    numbers = {"number", "integer"}
    return (kinds[0] == "string" and kinds[1] in numbers) or (
        kinds[1] == "string" and kinds[0] in numbers
    )


def _is_open(schema: Schema) -> bool:
    """True when the schema says nothing about which fields exist."""
    return not schema.properties or schema.additional_properties is True


def _all_steps(definition: Definition) -> list[Step]:
    steps = list(definition.steps)
    for handler in definition.handler_lists().values():
        steps += handler
    return steps


def _expressions(definition: Definition) -> Iterator[tuple[Path, str]]:
    """Every expression of the definition with the field path it is written at."""
    groups: list[tuple[str, list[Step]]] = [("steps", definition.steps)]
    groups += list(definition.handler_lists().items())
    for field_name, steps in groups:
        for index, step in enumerate(steps):
            yield from _step_expressions(step, (field_name, index))
    for name, source in definition.queries.items():
        yield ("queries", name), source
    yield from _template_expressions(definition.output, ("output",))


def _step_expressions(step: Step, path: Path) -> Iterator[tuple[Path, str]]:
    for name, source in (("when", step.when), ("for", step.for_), ("until", step.until)):
        if source is not None:
            yield (*path, name), source
    for name, raw in (("input", step.input), ("value", step.value),
                      ("continue_as_new", step.continue_as_new)):  # fmt: skip
        yield from _template_expressions(raw, (*path, name))
    if step.http is not None:
        yield from _template_expressions(step.http.model_dump(), (*path, "http"))
    if step.compensate is not None:
        yield from _template_expressions(step.compensate.input, (*path, "compensate", "input"))


def _template_expressions(raw: object, path: Path) -> Iterator[tuple[Path, str]]:
    if raw is None:
        return
    try:
        template = compile_template(raw)
    except (TemplateError, ValueError):
        return  # the compiler reports it
    for sub_path, expression in template.expressions:
        yield (*path, *_split(sub_path)), expression.source


def _split(sub_path: str) -> Path:
    parts: list[str | int] = []
    for chunk in sub_path.replace("[", ".[").split("."):
        if chunk:
            parts.append(int(chunk[1:-1]) if chunk.startswith("[") else chunk)
    return tuple(parts)
