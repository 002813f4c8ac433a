"""CEL expressions and value templates, compiled once at deploy time.

Evaluation is done by a maintained CEL implementation (the ``cel`` module of
``common-expression-language``). This module adds what the language needs around it: the names an
expression references (so unknown steps and variables are refused at deploy), bindings built from
only those names (so evaluating ``${item.sku}`` costs the same in a 10-unit and a 10,000-unit
execution), and the conversion of results to JSON values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .cel_engine import cel

_TEMPLATE = re.compile(r"\$\{\s*(.*?)\s*\}", re.DOTALL)
_TOKEN = re.compile(
    r"""(?P<str>[rR]?[bB]?[rR]?("""
    r"'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"))"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[uU]?)"
    r"|(?P<punct>\S)",
    re.DOTALL,
)
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_FIELD_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NO_LAZY: Mapping[str, Callable[[Any], Any]] = {}


class ExpressionSyntaxError(ValueError):
    """An expression does not compile; the message says where in the expression."""


class EvaluationError(Exception):
    """An expression failed at run time (missing field, type error, non-JSON result)."""


@dataclass(frozen=True, eq=False)
class Expression:
    """A compiled CEL expression and the names it reads.

    ``variables`` are the top-level names (``input``, ``steps``, ``item`` …); ``step_refs`` the
    step ids read as ``steps.<id>`` or ``steps["<id>"]``; ``reads_all_steps`` is true when
    ``steps`` is used in a way that names no single step (``steps[x]``, ``size(steps)``)."""

    source: str
    program: cel.Program
    variables: frozenset[str]
    step_refs: frozenset[str]
    reads_all_steps: bool
    field_path: tuple[str, ...] | None = None  # set when the source is only ``a.b.c``

    def evaluate(self, scope: Scope) -> Any:
        """The expression's JSON value in ``scope``; raises :class:`EvaluationError`."""
        if self.field_path is not None:
            # most expressions only select fields; reading them directly gives the value CEL
            # would, without converting the bindings to CEL and back. Anything unusual on the
            # way (a missing key, a non-map, a value CEL would treat differently) goes to CEL,
            # so errors stay CEL's own.
            try:
                return scope.select(self.field_path)
            except _NotPlain:
                pass
        try:
            result = self.program.execute(scope.bindings(self))
        except EvaluationError:
            raise
        except Exception as exc:  # the CEL library raises many builtin types
            raise EvaluationError(_describe(exc)) from None
        return to_json_value(result)


def compile_expression(source: str) -> Expression:
    """Compile ``source``; raises :class:`ExpressionSyntaxError` with the library's diagnosis."""
    if not isinstance(source, str) or not source.strip():
        raise ExpressionSyntaxError("an expression must be a non-empty string")
    try:
        program = cel.compile(source)
    except Exception as exc:
        raise ExpressionSyntaxError(_syntax_message(exc)) from None
    bound, step_refs, all_steps = _scan(source)
    variables = frozenset(program.variables()) - bound
    stripped = source.strip()
    path = tuple(stripped.split(".")) if _FIELD_PATH.fullmatch(stripped) else None
    return Expression(source, program, variables, frozenset(step_refs), all_steps, path)


class Steps(Protocol):
    """What a scope reads the steps through: ``step_view(id)`` gives a step's whole view;
    ``step_field(id, name)`` one field of it (``KeyError`` for a name the view does not have)
    without building the view: most expressions read ``steps.<id>.output.…``."""

    def step_view(self, step_id: str) -> dict[str, Any]: ...

    def step_field(self, step_id: str, name: str) -> Any: ...


class Scope:
    """The variables an expression may read, built lazily: only the names an expression
    references are converted, and of ``steps`` only the entries it names (read through
    ``steps``; ``step_ids`` names them all). A name of ``lazy`` is computed when an expression
    reads it, by its function of ``steps`` (most read none of ``execution``).

    A scope is made for every template a decision renders, so making one costs no more than
    its four slots: the steps and the lazy names come as one object and one shared table,
    not as a bound method and a dict each."""

    __slots__ = ("_lazy", "_step_ids", "_steps", "_values")

    def __init__(
        self,
        values: Mapping[str, Any],
        steps: Steps | None = None,
        step_ids: Iterable[str] | None = None,
        lazy: Mapping[str, Callable[[Any], Any]] = _NO_LAZY,
    ) -> None:
        self._values = values
        self._steps = steps
        self._step_ids = step_ids
        self._lazy = lazy

    def bindings(self, expression: Expression) -> dict[str, Any]:
        """The CEL activation for ``expression``."""
        out: dict[str, Any] = {}
        for name in expression.variables:
            if name == "steps" and self._steps is not None:
                out[name] = self._steps_for(expression)
            elif name in self._values:
                out[name] = self._values[name]
            elif name in self._lazy:
                out[name] = self._lazy[name](self._steps)
        return out

    def select(self, path: tuple[str, ...]) -> Any:
        """The JSON value at ``path`` (``steps.<id>.…`` through the step view); raises
        :class:`_NotPlain` unless every step is a present key of a map and the value is plain
        JSON that CEL would give back unchanged."""
        head = path[0]
        steps = self._steps
        if head == "steps" and steps is not None:
            if len(path) > 2:
                try:
                    value: Any = steps.step_field(path[1], path[2])
                except KeyError:
                    raise _NotPlain from None
                rest = path[3:]
            elif len(path) > 1:
                value, rest = steps.step_view(path[1]), path[2:]
            else:
                raise _NotPlain
        elif head in self._values:
            value, rest = self._values[head], path[1:]
        elif head in self._lazy:
            value, rest = self._lazy[head](steps), path[1:]
        else:
            raise _NotPlain
        for key in rest:
            if type(value) is not dict or key not in value:
                raise _NotPlain
            value = value[key]
        kind = type(value)
        if kind is str or kind is bool or value is None:
            return value  # the usual leaves, without a call
        if kind is int and _INT64_MIN <= value <= _INT64_MAX:
            return value
        return _plain_copy(value)

    def _steps_for(self, expression: Expression) -> dict[str, Any]:
        assert self._steps is not None
        if expression.reads_all_steps and self._step_ids is not None:
            names: Iterable[str] = self._step_ids
        else:
            names = expression.step_refs
        return {name: self._steps.step_view(name) for name in names}


@dataclass(frozen=True, eq=False)
class Template:
    """A value template: literal JSON in which a string of the exact form ``${expr}`` stands for
    the expression's typed value, at any depth. ``expressions`` lists them with their paths."""

    raw: Any
    renderer: Callable[[Scope], Any]  # the compiled template as one function of the scope
    expressions: tuple[tuple[str, Expression], ...]

    def render(self, scope: Scope) -> Any:
        """The template's value in ``scope``; raises :class:`EvaluationError` naming the path."""
        if not self.expressions:
            return self.raw
        return self.renderer(scope)


class TemplateError(ValueError):
    """An expression inside a template does not compile; ``path`` is relative to the template."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


def compile_template(value: Any) -> Template:
    """Compile every ``${…}`` inside ``value``; raises :class:`TemplateError` with its path."""
    found: list[tuple[str, Expression]] = []
    renderer = _renderer(_compile_node(value, "", found))
    return Template(value, renderer or (lambda scope: value), tuple(found))


@dataclass(frozen=True, eq=False)
class _Hole:
    path: str
    expression: Expression

    def render(self, scope: Scope) -> Any:
        try:
            return self.expression.evaluate(scope)
        except EvaluationError as exc:
            where = f"{self.path}: " if self.path else ""
            raise EvaluationError(f"{where}{exc} (in ${{{self.expression.source}}})") from None


def _compile_node(value: Any, path: str, found: list[tuple[str, Expression]]) -> Any:
    if isinstance(value, str):
        match = _TEMPLATE.fullmatch(value)
        if match is None:
            return value
        try:
            expression = compile_expression(match.group(1))
        except ExpressionSyntaxError as exc:
            raise TemplateError(path, str(exc)) from None
        found.append((path, expression))
        return _Hole(path, expression)
    if isinstance(value, dict):
        return {k: _compile_node(v, _child(path, k), found) for k, v in value.items()}
    if isinstance(value, list):
        return [_compile_node(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
    return value


def _renderer(node: Any) -> Callable[[Scope], Any] | None:
    """The function that renders a compiled template part: each hole evaluated, each dict and
    list built anew; None for any other value, which renders as itself. Built once per
    template, so a render walks no node types."""
    if isinstance(node, _Hole):
        path = node.expression.field_path
        if path is None:
            return node.render
        return _path_renderer(path, node)
    if isinstance(node, dict):
        entries = tuple((key, _renderer(value), value) for key, value in node.items())

        def render_dict(scope: Scope) -> dict[str, Any]:
            out = {}
            for key, render, value in entries:
                out[key] = value if render is None else render(scope)
            return out

        return render_dict
    if isinstance(node, list):
        items = tuple((_renderer(value), value) for value in node)
        return lambda scope: [value if render is None else render(scope) for render, value in items]
    return None


def _path_renderer(path: tuple[str, ...], hole: _Hole) -> Callable[[Scope], Any]:
    """A hole that only selects a field (``${steps.a.output.n}``) reads it straight from the
    scope, without the hole's and the expression's calls around the read; anything the direct
    read does not take goes through the hole as before (CEL's value, the path in the error)."""

    def render_path(scope: Scope) -> Any:
        try:
            return scope.select(path)
        except _NotPlain:
            return hole.render(scope)

    return render_path


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _NotPlain(Exception):
    """A field path cannot be read directly; CEL evaluates it."""


def _plain_copy(value: Any) -> Any:
    """A copy of JSON ``value`` (int64 integers, finite floats, string keys), else
    :class:`_NotPlain`."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        if _INT64_MIN <= value <= _INT64_MAX:
            return value
        raise _NotPlain
    if kind is float:
        if math.isfinite(value):
            return value
        raise _NotPlain
    if kind is dict:
        copy = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            copy[key] = _plain_copy(item)
        return copy
    if kind is list:
        return [_plain_copy(item) for item in value]
    raise _NotPlain


def to_json_value(value: Any) -> Any:
    """``value`` as JSON data; raises :class:`EvaluationError` for anything JSON cannot hold."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        raise EvaluationError(f"the result {value} is not a JSON number")
    if isinstance(value, list | tuple):
        return [to_json_value(v) for v in value]
    if isinstance(value, dict):
        return {_json_key(k): to_json_value(v) for k, v in value.items()}
    raise EvaluationError(
        f"the result is a {type(value).__name__}, which is not a JSON value; convert it "
        "(for example with string(...))"
    )


def _json_key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool | int | float):
        return str(key).lower() if isinstance(key, bool) else str(key)
    raise EvaluationError(f"a map key of type {type(key).__name__} is not a JSON key")


def _scan(source: str) -> tuple[frozenset[str], set[str], bool]:
    """Names bound by comprehension macros, step ids read, and whether ``steps`` is read whole."""
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(source)]
    bound: set[str] = set()
    steps: set[str] = set()
    all_steps = False
    for i, (kind, text) in enumerate(tokens):
        before = tokens[i - 1][1] if i else ""
        after = tokens[i + 1 : i + 4]
        if kind == "ident" and text in _MACROS and before == "." and _is_macro(after):
            bound.add(after[1][1])
        elif kind == "ident" and text == "steps" and before != ".":
            step = _step_name(after)
            if step is None:
                all_steps = True
            else:
                steps.add(step)
    return frozenset(bound), steps, all_steps


def _is_macro(after: list[tuple[str | None, str]]) -> bool:
    return len(after) == 3 and after[0][1] == "(" and after[1][0] == "ident" and after[2][1] == ","


def _step_name(after: list[tuple[str | None, str]]) -> str | None:
    if len(after) >= 2 and after[0][1] == "." and after[1][0] == "ident":
        return after[1][1]
    if len(after) >= 3 and after[0][1] == "[" and after[1][0] == "str" and after[2][1] == "]":
        literal = after[1][1]
        if literal[:1] in "'\"" and literal[-1:] == literal[:1] and "\\" not in literal:
            return literal[1:-1]
    return None


def _syntax_message(exc: Exception) -> str:
    text = str(exc)
    text = text.replace("Failed to parse expression", "does not compile:")
    return " ".join(text.split())


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"no such key: {exc.args[0] if exc.args else exc}"
    message = str(exc).split(". Check that")[0]
    return message or type(exc).__name__
