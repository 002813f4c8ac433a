// The units of each step, one collapsible section per step; a section's rows are built only
// when it is opened (a 1,000-element fan-out costs nothing until someone looks).

import { h, badge, executionLink, replace } from "./dom.js";
import { when } from "./format.js";
import { stepKind, handlersOf } from "./steps.js";
import { errorView } from "./errorview.js";

const FIRST_UNITS = 200;

function unitRows(units, children, limit) {
  return units.slice(0, limit).map((unit) => h("tr", { "data-unit": unit.key },
    h("td", { class: "mono" }, unit.key),
    h("td", {}, badge(unit.status), unit.waiting
      ? h("div", { class: "small muted", "data-waiting": unit.waiting.reason }, unit.waiting.message) : null),
    h("td", {}, String(unit.attempt), unit.redelivery ? " (redelivered)" : ""),
    h("td", {}, unit.worker_id || "—"),
    h("td", {}, when(unit.dispatched_at_ms)),
    h("td", {}, children.has(unit.key) ? executionLink(children.get(unit.key), "child execution") : "—"),
    h("td", {}, unit.error ? errorView(unit.error, unit.key) : "—")));
}

function unitTable(units, children) {
  const body = h("tbody", {});
  const more = h("div", {});
  const show = (limit) => {
    replace(body, unitRows(units, children, limit));
    replace(more, units.length > limit ? h("button", { type: "button", onclick: () => show(units.length) },
      `Show all ${units.length} units`) : null);
  };
  show(FIRST_UNITS);
  // a long list scrolls in its own box (focusable, so the keyboard can scroll it too)
  return h("div", {}, h("div", { class: "table-wrap scroll", tabindex: "0", role: "region",
    "aria-label": `Units (${units.length})` }, h("table", {},
    h("thead", {}, h("tr", {}, ["Unit", "Status", "Attempt", "Worker", "Dispatched", "Child", "Error"]
      .map((name) => h("th", { scope: "col" }, name)))), body)), more);
}

function summaryOf(step, state) {
  const parts = [];
  if (state.fanOut && state.total !== null) parts.push(`${state.succeeded}/${state.total} succeeded`);
  if (state.compensation) parts.push(`compensation ${state.compensation}`);
  return parts.join(" · ");
}

/** One <details> per step and handler; `open` is the set of step ids kept open across refreshes. */
export function unitSections(ir, states, detail, open) {
  const children = new Map(detail.children.map((child) => [child.key, child.execution_id]));
  const steps = [...ir.steps.map((step) => [null, step]), ...handlersOf(ir)];
  return steps.map(([handlerOf, step]) => {
    const state = states.get(step.id);
    const body = h("div", { class: "units-body" });
    const section = h("details", { class: "step", id: `step-${step.id}`, "data-step": step.id, open: open.has(step.id) },
      h("summary", {}, h("span", { class: "mono strong" }, step.id), " ",
        h("span", { class: "muted" }, handlerOf ? `${handlerOf.replace("_", " ")} · ` : "", stepKind(step)), " — ",
        badge(state.status), " ", summaryOf(step, state)),
      body);
    const fill = () => replace(body, [...state.units, ...state.compensationUnits].length
      ? unitTable([...state.units, ...state.compensationUnits], children)
      : h("p", { class: "muted" }, state.status === "not run" ? "It never ran." : "No units yet."));
    if (section.open) fill();
    section.addEventListener("toggle", () => {
      if (section.open) { open.add(step.id); fill(); } else open.delete(step.id);
    });
    return section;
  });
}
