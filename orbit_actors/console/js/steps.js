// What each step of a definition is doing, from an execution's units (its detail) and history:
// the step's status as the API words it, fan-out progress, its compensation, its children.

const RUNNING = new Set(["scheduled", "dispatched", "waiting", "retry_wait", "uncertain",
  "attempt_failed"]);
// Executions that will run nothing more: a step without a unit there never ran ("not run"),
// where "pending" would promise that it will.
const FINISHED = new Set(["completed", "failed", "cancelled", "timed_out", "terminated"]);

/** A status word as a CSS class name: "not run" → "status-not-run". */
export function statusClass(status) {
  return `status-${String(status).replace(/\s+/g, "-")}`;
}

/** The kind of a step and what it runs: "task mail.send", "await decision", … */
export function stepKind(step) {
  if (step.task) return `task ${step.task}`;
  if (step.workflow) return `workflow ${step.workflow}`;
  if (step.await) return `await ${step.await}`;
  if (step.sleep !== undefined) return "sleep";
  if (step.http) return `http ${step.http.method || "GET"}`;
  if (step.continue_as_new !== undefined) return "continue as new";
  if (step.value !== undefined) return "value";
  return "step";
}

/** The owner step of a unit key: "pick[3]" → "pick", "compensate:pick[3]" → "pick",
 * "handler:alert" → "alert". */
export function ownerOf(key) {
  return key.replace(/^(compensate|handler):/, "").replace(/\[\d+\]$/, "");
}

/** The status of a group of units, in the API's step words ("not run" for none once the
 * execution has finished). */
export function statusOf(units, finished = false) {
  if (!units.length) return finished ? "not run" : "pending";
  if (units.some((unit) => RUNNING.has(unit.status))) return "running";
  if (units.some((unit) => unit.status === "failed")) return "failed";
  if (units.some((unit) => unit.status === "cancelled")) return "cancelled";
  if (units.every((unit) => unit.status === "skipped")) return "skipped";
  return "succeeded";
}

/** Map step id → {status, units, succeeded, total, compensation, children} for every step and
 * handler of `ir`. */
export function stepStates(ir, detail, events) {
  const fanOut = new Map();
  const skipped = new Set(); // a step skipped by its `when` has no unit
  for (const event of events) {
    if (event.type === "StepFanOut") fanOut.set(event.step, event.items.length);
    else if (event.type === "StepSkipped") skipped.add(event.step);
  }
  const children = new Map(detail.children.map((child) => [child.key, child.execution_id]));
  const finished = FINISHED.has(detail.status);
  const byStep = new Map();
  for (const unit of detail.units) {
    const owner = ownerOf(unit.key);
    if (!byStep.has(owner)) byStep.set(owner, { own: [], compensation: [] });
    byStep.get(owner)[unit.key.startsWith("compensate:") ? "compensation" : "own"].push(unit);
  }
  const states = new Map();
  for (const step of [...ir.steps, ...handlersOf(ir).map(([, handler]) => handler)]) {
    const found = byStep.get(step.id) || { own: [], compensation: [] };
    const total = fanOut.has(step.id) ? fanOut.get(step.id) : (step.for ? null : found.own.length);
    states.set(step.id, {
      status: skipped.has(step.id) && !found.own.length ? "skipped"
        : (step.for && fanOut.get(step.id) === 0 ? "succeeded" : statusOf(found.own, finished)),
      units: found.own,
      fanOut: Boolean(step.for),
      succeeded: found.own.filter((unit) => unit.status === "succeeded").length,
      total,
      compensation: found.compensation.length ? statusOf(found.compensation) : null,
      compensationUnits: found.compensation,
      children: found.own.filter((unit) => children.has(unit.key))
        .map((unit) => ({ key: unit.key, execution_id: children.get(unit.key) })),
    });
  }
  return states;
}

/** [[event name, handler step], …] of on_failure, on_cancel and on_timeout. */
export function handlersOf(ir) {
  const out = [];
  for (const when of ["on_failure", "on_cancel", "on_timeout"]) {
    for (const handler of ir[when] || []) out.push([when, handler]);
  }
  return out;
}
