"""Flow control in the language: a workflow's priority and concurrency key, each task's rate
limit, checked at registration and evaluated at start.

Every flow expression reads only ``input`` (the execution's input, defaults applied): a start is
admitted, queued or refused before anything else of the execution exists. Registration refuses
an expression that reads an input field the declared input schema does not declare, so a typo in
``${input.custmer}`` is a deploy error rather than every start failing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .expressions import EvaluationError, Expression, Scope, Template, TemplateError
from .expressions import compile_template as _compile_template
from .models import DEFAULT_PRIORITY, PRIORITY_RANGE, Definition, RateLimit
from .schema import Schema

FLOW_VARIABLES = frozenset({"input"})
_INPUT_READ = re.compile(
    r"(?<![\w.])input((?:\s*\.\s*[A-Za-z_]\w*|\s*\[\s*(?:'[^'\\]*'|\"[^\"\\]*\")\s*\])+)"
)
_READ_PART = re.compile(r"\.\s*([A-Za-z_]\w*)|\[\s*(?:'([^'\\]*)'|\"([^\"\\]*)\")\s*\]")

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class FlowProblem:
    """One thing wrong with a flow declaration: its path in the definition and why."""

    path: Path
    reason: str


@dataclass(frozen=True, eq=False)
class KeyPlan:
    """A compiled key (a template: ``${input.customer}``, or a fixed text)."""

    template: Template

    def evaluate(self, input: dict[str, Any]) -> str:
        """The key's text for ``input``; raises :class:`FlowKeyError`."""
        try:
            value = self.template.render(Scope({"input": input}))
        except EvaluationError as exc:
            raise FlowKeyError(f"cannot be evaluated: {exc}") from None
        return key_text(value)


@dataclass(frozen=True, eq=False)
class ConcurrencyPlan:
    """At most ``limit`` running executions per key; ``on_full`` beyond it."""

    key: KeyPlan
    limit: int
    on_full: str


@dataclass(frozen=True, eq=False)
class RateLimitPlan:
    """At most ``limit`` dispatches of ``task`` per ``per_ms`` per key."""

    task: str
    key: KeyPlan
    limit: int
    per_ms: int


@dataclass(frozen=True, eq=False)
class FlowPlan:
    """The compiled flow control of a definition (None fields: not declared)."""

    priority: Template | int
    concurrency: ConcurrencyPlan | None
    rate_limits: dict[str, RateLimitPlan]

    @property
    def declared(self) -> bool:
        """True when the definition says anything about flow."""
        fixed = isinstance(self.priority, int) and self.priority == DEFAULT_PRIORITY
        return not fixed or self.concurrency is not None or bool(self.rate_limits)


NO_FLOW = FlowPlan(priority=DEFAULT_PRIORITY, concurrency=None, rate_limits={})


class FlowKeyError(ValueError):
    """A key evaluated to something other than a string or a number, or failed."""


class FlowPriorityError(ValueError):
    """A priority evaluated to something other than an integer from 1 to 9, or failed."""


@dataclass(frozen=True)
class StartFlow:
    """What a start's flow control evaluated to: its priority and concurrency key (if any)."""

    priority: int
    key: str | None
    rate_keys: dict[str, str] | None = None  # task → the key of its rate limit


def key_text(value: Any) -> str:
    """A key's text: a string as it is, a number in its JSON form (``7``, ``2.5``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return json.dumps(value)
    kind = _KINDS.get(type(value), "a value of another kind")
    raise FlowKeyError(f"evaluated to {kind}; a key must be a string or a number")


_KINDS = {type(None): "null", bool: "a boolean", dict: "an object", list: "an array"}


def evaluate_start(plan: FlowPlan, input: dict[str, Any]) -> StartFlow:
    """The priority and key of a start with ``input``; raises :class:`FlowPriorityError` or
    :class:`FlowKeyError` (with the field's path) and does nothing else."""
    priority = plan.priority
    if not isinstance(priority, int):
        priority = _evaluate_priority(priority, input)
    key = None
    if plan.concurrency is not None:
        try:
            key = plan.concurrency.key.evaluate(input)
        except FlowKeyError as exc:
            raise FlowKeyError(f"flow.concurrency.key {exc}") from None
    rate_keys = {}
    for task, rate in plan.rate_limits.items():
        try:
            rate_keys[task] = rate.key.evaluate(input)
        except FlowKeyError as exc:
            raise FlowKeyError(f"tasks.{task}.rate_limit.key {exc}") from None
    return StartFlow(priority=priority, key=key, rate_keys=rate_keys or None)


def _evaluate_priority(template: Template, input: dict[str, Any]) -> int:
    try:
        value = template.render(Scope({"input": input}))
    except EvaluationError as exc:
        raise FlowPriorityError(f"flow.priority cannot be evaluated: {exc}") from None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value not in PRIORITY_RANGE:
        raise FlowPriorityError(
            f"flow.priority evaluated to {json.dumps(value)}; a priority is an integer from "
            "1 (first) to 9"
        )
    return value


def compile_flow(definition: Definition) -> tuple[FlowPlan, list[FlowProblem]]:
    """The flow plan of ``definition`` and every problem found on the way."""
    problems: list[FlowProblem] = []
    schema = definition.input
    flow = definition.flow
    priority: Template | int = DEFAULT_PRIORITY
    concurrency = None
    if flow is not None and flow.priority is not None:
        path: Path = ("flow", "priority")
        if isinstance(flow.priority, int):
            priority = flow.priority
        else:
            compiled = _template(flow.priority, path, schema, problems)
            priority = _fixed_priority(compiled, path, problems)
    if flow is not None and flow.concurrency is not None:
        declared = flow.concurrency
        path = ("flow", "concurrency", "key")
        key = _key(declared.key, path, schema, problems)
        if key is not None:
            concurrency = ConcurrencyPlan(key, declared.limit, declared.on_full)
    rates = {}
    for name, contract in definition.tasks.items():
        if contract.rate_limit is not None:
            plan = _rate_limit(name, contract.rate_limit, schema, problems)
            if plan is not None:
                rates[name] = plan
    return FlowPlan(priority, concurrency, rates), problems


def _rate_limit(
    task: str, declared: RateLimit, schema: Schema | None, problems: list[FlowProblem]
) -> RateLimitPlan | None:
    key = _key(declared.key, ("tasks", task, "rate_limit", "key"), schema, problems)
    return None if key is None else RateLimitPlan(task, key, declared.limit, declared.per)


def _key(
    source: str, path: Path, schema: Schema | None, problems: list[FlowProblem]
) -> KeyPlan | None:
    template = _template(source, path, schema, problems)
    if template is None:
        return None
    if not template.expressions and not source:
        problems.append(FlowProblem(path, "a key must not be empty"))
        return None
    return KeyPlan(template)


def _fixed_priority(
    template: Template | None, path: Path, problems: list[FlowProblem]
) -> Template | int:
    """A priority written as a text without ``${…}`` must be a number from 1 to 9."""
    if template is None:
        return DEFAULT_PRIORITY
    if template.expressions:
        return template
    text = str(template.raw).strip()
    if text.isdigit() and int(text) in PRIORITY_RANGE:
        return int(text)
    problems.append(
        FlowProblem(path, f"priority must be from 1 (first) to 9 or a ${{…}} (got {text!r})")
    )
    return DEFAULT_PRIORITY


def _template(
    source: str, path: Path, schema: Schema | None, problems: list[FlowProblem]
) -> Template | None:
    try:
        template = _compile_template(source)
    except TemplateError as exc:
        problems.append(FlowProblem(path, exc.reason))
        return None
    found = len(problems)
    for _, expression in template.expressions:
        _check_reads(expression, path, schema, problems)
    return template if len(problems) == found else None


def _check_reads(
    expression: Expression, path: Path, schema: Schema | None, problems: list[FlowProblem]
) -> None:
    for name in sorted(expression.variables - FLOW_VARIABLES):
        problems.append(
            FlowProblem(path, f"unknown variable `{name}` (a flow expression reads only `input`)")
        )
    for fields in input_reads(expression.source):
        missing = undeclared(schema, fields)
        if missing is not None:
            problems.append(FlowProblem(path, missing))


def input_reads(source: str) -> list[tuple[str, ...]]:
    """The field paths an expression reads from ``input`` (``input.a.b`` → ``("a", "b")``)."""
    out = []
    for match in _INPUT_READ.finditer(_without_strings(source)):
        parts = tuple(a or b or c for a, b, c in _READ_PART.findall(match.group(1)))
        out.append(parts)
    return out


def _without_strings(source: str) -> str:
    """``source`` with the text of string literals blanked, so ``"input.x"`` is not a read;
    quotes stay, so ``input["a"]`` still reads ``a``."""
    return re.sub(
        r"(?<!\[)('(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\")(?!\s*\])",
        lambda m: m.group(0)[0] * 2,
        source,
    )


def undeclared(schema: Schema | None, fields: tuple[str, ...]) -> str | None:
    """Why reading ``input.<fields>`` is refused (None when the schema declares it, or says
    nothing of that level: no schema, or an object without ``properties``)."""
    node = schema
    walked: list[str] = []
    for name in fields:
        if node is None or node.properties is None:
            return None
        if name not in node.properties:
            where = ".".join(["input", *walked])
            known = ", ".join(sorted(node.properties)) or "none"
            return (
                f"reads `input.{'.'.join([*walked, name])}`, which the input schema does not "
                f"declare ({where} declares: {known})"
            )
        walked.append(name)
        node = node.properties[name]
    return None
