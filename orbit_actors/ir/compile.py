"""Compile a validated :class:`Definition` into its IR and :class:`CompiledDefinition`, running
every deploy-time check of the language. All problems are collected, each with its field path."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import ChildNotRegisteredError, DefinitionError, Problem
from .durations import format_duration
from .expressions import (
    Expression,
    ExpressionSyntaxError,
    Template,
    TemplateError,
    compile_expression,
    compile_template,
)
from .flow import NO_FLOW, FlowPlan, compile_flow
from .loader import Locator, Path, format_path
from .models import (
    DEFAULT_RETRY,
    NAME,
    RESERVED_PREFIXES,
    Compensation,
    Definition,
    HttpSpec,
    RetryPolicy,
    Step,
)
from .plan import CompensationPlan, CompiledDefinition, Role, StepPlan
from .schema import Schema, SchemaViolation, validate
from .suggest import did_you_mean

ChildResolver = Callable[[str, str], str | None]
"""``(name, version) -> definition_hash`` of a registered child, or None when unknown."""

HTTP_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
BASE_VARIABLES = frozenset({"input", "steps", "execution"})
MIN_RETENTION_MS = 60_000
"""A definition keeps its finished executions at least a minute (the server's ``--retention``
may be shorter, for tests)."""


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 text: the form that is hashed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def definition_hash(ir: dict[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of the IR without its ``definition_hash``."""
    body = {k: v for k, v in ir.items() if k != "definition_hash"}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def compile_definition(
    definition: Definition,
    *,
    resolve_child: ChildResolver | None = None,
    require_children: bool = False,
    locator: Locator | None = None,
) -> CompiledDefinition:
    """Check ``definition`` and compile it. Children are pinned by ``resolve_child``; with
    ``require_children`` an unknown child raises :class:`ChildNotRegisteredError`."""
    checker = _Checker(definition, locator or Locator(None))
    plans = checker.run()
    pinned = _pin_children(definition, resolve_child, require_children)
    ir = _normalise(definition, plans, pinned)
    ir_dict = ir.to_ir_dict()
    digest = definition_hash(ir_dict)
    ir = ir.model_copy(update={"definition_hash": digest})
    for plan in plans.values():
        plan.step = _normal_step(plan)
    return CompiledDefinition(
        ir=ir,
        definition_hash=digest,
        plans=plans,
        main=[s.id for s in definition.steps],
        handlers={name: [s.id for s in lst] for name, lst in definition.handler_lists().items()},
        queries=checker.queries,
        output=checker.output,
        awaits=_awaits(plans),
        flow=checker.flow,
    )


def _awaits(plans: dict[str, StepPlan]) -> dict[str, list[str]]:
    """Unit keys of the ``await`` steps, by signal name."""
    out: dict[str, list[str]] = {}
    for plan in plans.values():
        if plan.step.await_ is not None:
            out.setdefault(plan.step.await_, []).append(plan.key)
    return out


class _Checker:
    """Collects every problem of a definition, and builds step plans on the way."""

    def __init__(self, definition: Definition, locator: Locator) -> None:
        self.d = definition
        self.locator = locator
        self.problems: list[Problem] = []
        self.all_ids: set[str] = set()
        self.queries: dict[str, Expression] = {}
        self.output = compile_template({})
        self.flow: FlowPlan = NO_FLOW

    def fail(self, path: Path, reason: str, near: str | None = None) -> None:
        self.problems.append(self.locator.problem(path, reason, near))

    def run(self) -> dict[str, StepPlan]:
        self._check_names()
        self._check_schemas()
        groups: list[tuple[str, str | None, list[Step]]] = [("steps", None, self.d.steps)]
        groups += [(name, name, lst) for name, lst in self.d.handler_lists().items()]
        self._check_unique_ids(groups)
        plans: dict[str, StepPlan] = {}
        for field_name, handler_list, steps in groups:
            for index, step in enumerate(steps):
                plan = self._plan(step, (field_name, index), handler_list, steps, index)
                plans.setdefault(step.id, plan)
            self._check_cycles(field_name, steps, plans)
        for plan in plans.values():
            for dep in plan.after:
                if dep in plans:
                    plans[dep].dependents.append(plan.id)
        self._compile_queries_and_output()
        self.flow, found = compile_flow(self.d)
        for problem in found:
            self.fail(problem.path, problem.reason)
        if self.problems:
            raise DefinitionError(self.problems)
        return plans

    def _check_names(self) -> None:
        retention = self.d.retention
        if retention is not None and retention < MIN_RETENTION_MS:
            self.fail(
                ("retention",),
                f"{format_duration(retention)} is shorter than the minimum retention of 1m",
            )
        for name in self.d.tasks:
            if name.startswith(RESERVED_PREFIXES):
                self.fail(("tasks", name), f"task name `{name}` is reserved (orbit.*, workflow:*)")
            elif not name or any(c.isspace() for c in name):
                self.fail(("tasks", name), "a task name must be non-empty and without spaces")
        for name in self.d.workflows:
            if not NAME.fullmatch(name):
                self.fail(("workflows", name), "a workflow name must match [a-z0-9][a-z0-9._-]*")

    def _check_schemas(self) -> None:
        if self.d.input is not None:
            self._check_defaults(self.d.input, ("input",))
        for name, contract in self.d.tasks.items():
            if contract.output is not None:
                self._check_defaults(contract.output, ("tasks", name, "output"))
        for name, schema in self.d.signals.items():
            if schema is not None:
                self._check_defaults(schema, ("signals", name))

    def _check_defaults(self, schema: Schema, path: Path) -> None:
        if schema.has_field("default"):
            try:
                validate(schema, schema.default, strict=False)
            except SchemaViolation as exc:
                where = exc.path.replace("$", "default", 1)
                self.fail(
                    (*path, "default"),
                    f"the default does not match its schema: {where}: {exc.reason}",
                )
        for name, sub in (schema.properties or {}).items():
            self._check_defaults(sub, (*path, "properties", name))
        if schema.items is not None:
            self._check_defaults(schema.items, (*path, "items"))

    def _check_unique_ids(self, groups: Iterable[tuple[str, str | None, list[Step]]]) -> None:
        for field_name, _, steps in groups:
            for index, step in enumerate(steps):
                if step.id in self.all_ids:
                    self.fail((field_name, index, "id"), f"duplicate step id `{step.id}`")
                self.all_ids.add(step.id)

    def _plan(
        self, step: Step, path: Path, handler_list: str | None, siblings: list[Step], index: int
    ) -> StepPlan:
        role: Role = "handler" if handler_list else "main"
        variables = BASE_VARIABLES | ({"error"} if handler_list else set())
        sibling_ids = {s.id for s in siblings}
        plan = StepPlan(
            step=step, role=role, handler_list=handler_list, after=(), path=format_path(path)
        )
        refs: list[str] = []
        plan.when = self._expr(step.when, (*path, "when"), variables, refs)
        plan.for_each = self._expr(step.for_, (*path, "for"), variables, refs)
        plan.until = self._expr(step.until, (*path, "until"), variables, refs)
        item_vars = variables | ({step.item_name, "index"} if step.fans_out else set())
        if step.kind in ("task", "workflow"):
            plan.input = self._template(
                step.input if step.input is not None else {}, (*path, "input"), item_vars, refs
            )
        if step.kind in ("value", "continue_as_new"):
            raw = step.value if step.kind == "value" else step.continue_as_new
            plan.value = self._template(raw, (*path, step.kind), variables, refs)
        if step.http is not None:
            plan.http = self._http(step.http, (*path, "http"), item_vars, refs)
        self._check_kind(step, path, handler_list)
        if step.kind in ("task", "http"):
            plan.retry = _merge_retry(step.retry, self.d.retry)
        if step.compensate is not None:
            plan.compensate = self._compensation(step, path, item_vars)
        plan.after = self._after(step, path, siblings, index, refs, sibling_ids)
        return plan

    def _check_kind(self, step: Step, path: Path, handler_list: str | None) -> None:
        if step.task is not None:
            self._declared_task(step.task, (*path, "task"))
        if step.workflow is not None and step.workflow not in self.d.workflows:
            self.fail(
                (*path, "workflow"),
                f"child workflow `{step.workflow}` is not declared in `workflows`"
                + did_you_mean(step.workflow, self.d.workflows),
                step.workflow,
            )
        if step.await_ is not None and step.await_ not in self.d.signals:
            hint = did_you_mean(step.await_, self.d.signals)
            self.fail(
                (*path, "await"),
                f"signal `{step.await_}` is not declared in `signals`{hint}",
                step.await_,
            )
        if handler_list and step.kind == "continue_as_new":
            self.fail((*path, "continue_as_new"), "a handler step cannot continue as new")
        if handler_list and step.compensate is not None:
            self.fail((*path, "compensate"), "handler steps have no compensation")

    def _declared_task(self, name: str, path: Path) -> None:
        if name.startswith(RESERVED_PREFIXES):
            self.fail(path, f"task name `{name}` is reserved (orbit.*, workflow:*)")
        elif name not in self.d.tasks:
            self.fail(
                path,
                f"task `{name}` is not declared in `tasks`{did_you_mean(name, self.d.tasks)}",
                name,
            )

    def _compensation(
        self, step: Step, path: Path, variables: frozenset[str] | set[str]
    ) -> CompensationPlan:
        comp: Compensation = step.compensate  # type: ignore[assignment]
        cpath = (*path, "compensate")
        refs: list[str] = []
        if comp.task is not None:
            self._declared_task(comp.task, (*cpath, "task"))
        template = self._template(
            comp.input if comp.input is not None else {}, (*cpath, "input"), variables, refs
        )
        http = self._http(comp.http, (*cpath, "http"), variables, refs) if comp.http else None
        return CompensationPlan(
            kind="task" if comp.task is not None else "http",
            task=comp.task,
            input=template if comp.task is not None else None,
            http=http,
            retry=_merge_retry(comp.retry, self.d.retry),
            timeout_ms=comp.timeout if comp.http is None else comp.http.timeout,
            language=comp.language,
        )

    def _http(
        self, spec: HttpSpec, path: Path, variables: frozenset[str] | set[str], refs: list[str]
    ) -> Template | None:
        if spec.method.upper() not in HTTP_METHODS:
            self.fail((*path, "method"), f"method must be one of {', '.join(sorted(HTTP_METHODS))}")
        raw = {
            "method": spec.method.upper(),
            "url": spec.url,
            "headers": spec.headers or {},
            "body": spec.body,
        }
        return self._template(raw, path, variables, refs)

    def _expr(
        self, source: str | None, path: Path, variables: frozenset[str] | set[str], refs: list[str]
    ) -> Expression | None:
        if source is None:
            return None
        try:
            expression = compile_expression(source)
        except ExpressionSyntaxError as exc:
            self.fail(path, str(exc))
            return None
        self._check_refs(expression, path, variables, refs)
        return expression

    def _template(
        self, raw: Any, path: Path, variables: frozenset[str] | set[str], refs: list[str]
    ) -> Template | None:
        try:
            template = compile_template(raw)
        except TemplateError as exc:
            self.fail((*path, *_split(exc.path)), exc.reason)
            return None
        for sub_path, expression in template.expressions:
            self._check_refs(expression, (*path, *_split(sub_path)), variables, refs)
        return template

    def _check_refs(
        self,
        expression: Expression,
        path: Path,
        variables: frozenset[str] | set[str],
        refs: list[str],
    ) -> None:
        for name in sorted(expression.variables - set(variables)):
            hint = did_you_mean(name, variables)
            self.fail(
                path,
                f"unknown variable `{name}` (in scope: {', '.join(sorted(variables))}){hint}",
                name,
            )
        for step_id in sorted(expression.step_refs):
            if step_id not in self.all_ids:
                self.fail(
                    path, f"unknown step `{step_id}`{did_you_mean(step_id, self.all_ids)}", step_id
                )
            refs.append(step_id)

    def _after(
        self,
        step: Step,
        path: Path,
        siblings: list[Step],
        index: int,
        refs: list[str],
        sibling_ids: set[str],
    ) -> tuple[str, ...]:
        if step.after is None:
            deps = [siblings[index - 1].id] if index > 0 else []
        else:
            deps = []
            for position, dep in enumerate(step.after):
                if dep not in sibling_ids:
                    hint = did_you_mean(dep, sibling_ids)
                    self.fail(
                        (*path, "after", position), f"`after` names unknown step `{dep}`{hint}"
                    )
                else:
                    deps.append(dep)
        for ref in refs:
            if ref in sibling_ids and ref != step.id and ref not in deps:
                deps.append(ref)
        if step.id in refs:
            self.fail(path, f"step `{step.id}` refers to itself")
        return tuple(deps)

    def _check_cycles(self, field_name: str, steps: list[Step], plans: dict[str, StepPlan]) -> None:
        graph = {s.id: [d for d in plans[s.id].after if d in plans] for s in steps if s.id in plans}
        state: dict[str, int] = {}
        for start in graph:
            cycle = _find_cycle(start, graph, state, [])
            if cycle:
                index = next(i for i, s in enumerate(steps) if s.id == cycle[0])
                self.fail((field_name, index), "dependency cycle: " + " -> ".join(cycle))
                return

    def _compile_queries_and_output(self) -> None:
        for name, source in self.d.queries.items():
            expression = self._expr(source, ("queries", name), BASE_VARIABLES, [])
            if expression is not None:
                self.queries[name] = expression
        output = self._template(
            self.d.output if self.d.output is not None else {}, ("output",), BASE_VARIABLES, []
        )
        if output is not None:
            self.output = output


def _find_cycle(
    node: str, graph: dict[str, list[str]], state: dict[str, int], stack: list[str]
) -> list[str] | None:
    if state.get(node) == 2:
        return None
    if state.get(node) == 1:
        return [*stack[stack.index(node) :], node]
    state[node] = 1
    stack.append(node)
    for dep in graph.get(node, []):
        cycle = _find_cycle(dep, graph, state, stack)
        if cycle:
            return cycle
    stack.pop()
    state[node] = 2
    return None


def _split(sub_path: str) -> Path:
    parts: list[str | int] = []
    for chunk in sub_path.replace("[", ".[").split("."):
        if not chunk:
            continue
        parts.append(int(chunk[1:-1]) if chunk.startswith("[") else chunk)
    return tuple(parts)


def _merge_retry(step: RetryPolicy | None, workflow: RetryPolicy | None) -> RetryPolicy:
    base = workflow.over(DEFAULT_RETRY) if workflow else DEFAULT_RETRY
    return step.over(base) if step else base


def _pin_children(
    definition: Definition, resolve: ChildResolver | None, required: bool
) -> dict[str, str | None]:
    pinned: dict[str, str | None] = {}
    for name, contract in definition.workflows.items():
        found = resolve(name, contract.version) if resolve else None
        if found is None and required:
            shown = f" ({contract.definition_hash})" if contract.definition_hash else ""
            raise ChildNotRegisteredError(
                f"{definition.workflow}@{definition.version} starts child workflow "
                f"{name}@{contract.version}{shown}, which is not registered; register the child "
                "first (`orbit deploy` does this automatically)"
            )
        if found is not None and contract.definition_hash not in (None, found) and required:
            raise ChildNotRegisteredError(
                f"{definition.workflow}@{definition.version} starts child workflow "
                f"{name}@{contract.version} ({contract.definition_hash}), which is not registered; "
                "register the child first (`orbit deploy` does this automatically)"
            )
        pinned[name] = found or contract.definition_hash
    return pinned


def _normal_step(plan: StepPlan) -> Step:
    step = plan.step
    update: dict[str, Any] = {"after": list(plan.after)}
    if step.kind in ("task", "http"):
        update["retry"] = plan.retry
    if step.kind in ("task", "workflow") and step.input is None:
        update["input"] = {}
    if step.fans_out and step.as_ is None:
        update["as_"] = "item"
    if step.compensate is not None and plan.compensate is not None:
        update["compensate"] = step.compensate.model_copy(update={"retry": plan.compensate.retry})
    return step.model_copy(update=update)


def _normalise(
    definition: Definition, plans: dict[str, StepPlan], pinned: dict[str, str | None]
) -> Definition:
    workflows = {
        name: contract.model_copy(update={"definition_hash": pinned.get(name)})
        for name, contract in definition.workflows.items()
    }
    return definition.model_copy(
        update={
            "steps": [_normal_step(plans[s.id]) for s in definition.steps],
            "on_failure": [_normal_step(plans[s.id]) for s in definition.on_failure],
            "on_cancel": [_normal_step(plans[s.id]) for s in definition.on_cancel],
            "on_timeout": [_normal_step(plans[s.id]) for s in definition.on_timeout],
            "workflows": workflows,
            "retry": definition.retry.over(DEFAULT_RETRY) if definition.retry else DEFAULT_RETRY,
            "output": definition.output if definition.output is not None else {},
            "definition_hash": None,
        }
    )
