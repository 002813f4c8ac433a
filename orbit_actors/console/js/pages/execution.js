// One execution: what it is, how to steer it, its steps as a graph with their units, its run's
// history as a timeline and as events, its input, output, error, pending signals and children.
// Refreshed every second while it runs; only the sections whose data changed are redrawn, so a
// half-filled signal form keeps what was typed.

import { api, segment } from "../api.js";
import { h, replace, badge, errorBox, jsonBlock, facts, executionLink } from "../dom.js";
import { when, duration } from "../format.js";
import { href, replaceParams } from "../router.js";
import { Poller } from "../live.js";
import { stepStates } from "../steps.js";
import { stepGraph } from "../graph.js";
import { unitSections } from "../units.js";
import { timeline, FIRST_ROWS } from "../timeline.js";
import { actions, actionNotice } from "../actions.js";
import { errorView } from "../errorview.js";
import { eventTable } from "../events.js";

function section(title, id, ...content) {
  return h("section", { "aria-labelledby": id }, h("h2", { id }, title), ...content);
}

export function renderExecution(main, route) {
  const id = route.parts[1];
  document.title = `${id} · Orbit`;
  const parts = {
    header: h("div", {}), problem: h("div", { "aria-live": "polite" }), actions: h("div", {}),
    runs: h("div", {}), graph: h("div", { class: "graph-wrap" }), units: h("div", {}),
    timeline: h("div", {}), io: h("div", { class: "io" }), signals: h("div", {}),
    children: h("div", {}), events: h("div", {}),
  };
  replace(main,
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/executions" }, "Executions"), " / ",
      h("span", { class: "mono" }, id)),
    h("h1", { class: "mono break" }, id), parts.header, parts.problem,
    section("Actions", "h-actions", actionNotice(), parts.actions),
    section("Steps", "h-steps", h("div", { class: "steps-layout" }, parts.graph, parts.units)),
    section("Timeline", "h-timeline", parts.runs, parts.timeline),
    section("Input, output and error", "h-io", parts.io),
    section("Pending signals", "h-signals", parts.signals),
    section("Children", "h-children", parts.children),
    section("History", "h-history", parts.events));
  const view = { id, run: Number(route.params.get("run")) || null, ir: null, shown: {}, open: new Set(),
    timelineRows: FIRST_ROWS, eventsState: {} };
  const poller = new Poller();
  const refresh = () => tick(view, parts, poller.controller.signal);
  view.refresh = refresh;
  poller.start(async (signal) => {
    try {
      const running = await tick(view, parts, signal);
      replace(parts.problem);
      return running;
    } catch (error) {
      if (error.name === "AbortError") throw error;
      replace(parts.problem, errorBox(error));
      return error.status !== 404;
    }
  });
  return () => poller.stop();
}

/** Fetch and redraw what changed; true while the execution can still change. */
async function tick(view, parts, signal) {
  // the detail and the history at once; the definition (once) needs the detail's workflow
  const [detail, history] = await Promise.all([
    api("GET", `/v1/executions/${segment(view.id)}`, { signal }),
    api("GET", `/v1/executions/${segment(view.id)}/history`, { signal, query: { run: view.run } }),
  ]);
  if (!view.ir) {
    const definition = await api("GET",
      `/v1/definitions/${segment(detail.workflow)}/${segment(detail.version)}`, { signal });
    view.ir = definition.ir;
  }
  const now = Date.now();
  const ending = history.run === detail.run ? endingOf(history.events) : null;
  if (changed(view, "detail", [detail, ending])) {
    replace(parts.header, header(detail));
    replace(parts.io, inputOutput(detail, ending));
    replace(parts.signals, pendingSignals(detail));
    replace(parts.children, children(detail));
  }
  const actionsKey = `${detail.status}/${detail.quarantined}/${detail.paused}/${detail.run}`;
  if (changed(view, "actions", actionsKey)) replace(parts.actions, actions(detail, view.ir, view.refresh));
  if (changed(view, "steps", [detail.units, detail.children, history.run === detail.run ? history.events.length : 0])) {
    const events = history.run === detail.run ? history.events : [];
    const states = stepStates(view.ir, detail, events);
    const openStep = (step) => {
      view.open.add(step);
      const target = document.getElementById(`step-${step}`);
      if (target) { target.open = true; target.scrollIntoView({ block: "nearest" }); target.querySelector("summary").focus(); }
    };
    replace(parts.graph, stepGraph(view.ir, states, openStep));
    replace(parts.units, unitSections(view.ir, states, detail, view.open));
  }
  replace(parts.runs, runSelector(view, detail, history.run));
  if (changed(view, "history", [history.run, history.events.length, detail.status])) {
    drawTimeline(view, parts, history, detail.status === "running" ? now : null);
    replace(parts.events, eventTable(history.events, view.eventsState));
  } else if (detail.status === "running") {
    drawTimeline(view, parts, history, now); // open bars grow with the clock
  }
  return detail.status === "running" || detail.quarantined;
}

function changed(view, name, value) {
  const text = JSON.stringify(value);
  if (view.shown[name] === text) return false;
  view.shown[name] = text;
  return true;
}

function drawTimeline(view, parts, history, now) {
  const last = history.events.length ? history.events[history.events.length - 1].timestamp_ms : Date.now();
  const drawn = timeline(history.events, now ?? last, view.timelineRows);
  replace(parts.timeline, drawn.element, drawn.total > view.timelineRows
    ? h("button", { type: "button", onclick: () => { view.timelineRows = Infinity; drawTimeline(view, parts, history, now); } },
      `Show all ${drawn.total} rows`) : null);
}

function header(detail) {
  const took = detail.closed_at_ms && detail.started_at_ms ? duration(detail.closed_at_ms - detail.started_at_ms) : null;
  return h("div", { class: "summary" },
    h("p", { class: "status-line" }, badge(detail.status),
      detail.quarantined ? h("span", { class: "badge status-quarantined" }, "quarantined") : null),
    facts([
      ["Workflow", h("a", { href: href(`/definitions/${encodeURIComponent(detail.workflow)}/${encodeURIComponent(detail.version)}`) },
        `${detail.workflow}@${detail.version}`)],
      ["Run", String(detail.run)],
      ["Started", when(detail.started_at_ms)],
      ["Closed", detail.closed_at_ms ? when(detail.closed_at_ms) : null],
      ["Took", took],
      ["Parent", detail.parent_id ? executionLink(detail.parent_id) : null],
      ["Schedule", detail.schedule_id ? h("a", { href: "#/schedules" }, detail.schedule_id) : null],
      ["Last error", detail.last_error || null],
    ]));
}

function runSelector(view, detail, shownRun) {
  if (detail.run <= 1) return null;
  const select = h("select", { id: "run-select" },
    Array.from({ length: detail.run }, (_, index) => index + 1).reverse().map((run) =>
      h("option", { value: String(run), selected: run === shownRun }, run === detail.run ? `run ${run} (current)` : `run ${run}`)));
  select.addEventListener("change", () => {
    view.run = Number(select.value) === detail.run ? null : Number(select.value);
    replaceParams(`/executions/${encodeURIComponent(view.id)}`, { run: view.run });
    view.refresh();
  });
  return h("div", { class: "field inline" }, h("label", { for: "run-select" }, "Run (continue-as-new)"), select);
}

/** How a run ended when the detail carries no error: a cancel's reason, a run timeout. */
function endingOf(events) {
  const last = events[events.length - 1];
  if (!last) return null;
  if (last.type === "WorkflowCancelled") return { code: "CANCELLED", message: last.reason };
  if (last.type === "WorkflowTimedOut") return { code: "TIMED_OUT", message: "the run's timeout passed" };
  return null;
}

function inputOutput(detail, ending) {
  const error = detail.error || ending;
  return [
    h("div", {}, h("h3", {}, "Input"), jsonBlock(detail.input, "input")),
    h("div", {}, h("h3", {}, "Output"), detail.output === null && detail.status !== "completed"
      ? h("p", { class: "muted" }, detail.status === "running" ? "none yet" : "none")
      : jsonBlock(detail.output, "output")),
    error ? h("div", { class: "wide" }, h("h3", {}, "Error"), errorView(error)) : null,
  ];
}

function pendingSignals(detail) {
  if (!detail.pending_signals.length) return h("p", { class: "muted" }, "None waiting.");
  return h("ul", {}, detail.pending_signals.map((signal) => h("li", {}, h("code", {}, signal.name), ` (#${signal.seq})`)));
}

function children(detail) {
  if (!detail.children.length) return h("p", { class: "muted" }, "No child executions.");
  const shown = detail.children.slice(0, 100);
  return h("div", {}, h("ul", { class: "children" }, shown.map((child) =>
    h("li", {}, h("span", { class: "mono" }, child.key), " → ", executionLink(child.execution_id)))),
  detail.children.length > shown.length ? h("p", { class: "muted" },
    `and ${detail.children.length - shown.length} more (listed under their step above)`) : null);
}

