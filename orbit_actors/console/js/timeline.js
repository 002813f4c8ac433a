// A run's history as a timeline: one row per unit, each attempt a bar from its dispatch to its
// result (coloured by outcome, labelled with the worker that ran it), timers as thin bars, retries
// and signals as marks. Positions are percentages of the run's span, so it fits any width.

import { h } from "./dom.js";
import { duration, when } from "./format.js";

const ENDS = { StepSucceeded: "succeeded", StepAttemptFailed: "failed",
  StepAttemptUncertain: "uncertain", StepCancelled: "cancelled", StepFailed: "failed" };
const WORKFLOW_MARKS = { SignalReceived: (e) => `signal ${e.name}`, CancelRequested: () => "cancel requested",
  WorkflowCompleted: () => "completed", WorkflowFailed: () => "failed",
  WorkflowCancelled: () => "cancelled", WorkflowTimedOut: () => "timed out",
  WorkflowContinuedAsNew: () => "continued as new", LimitExceeded: (e) => `limit ${e.limit}`,
  DefinitionMigrated: (e) => `migrated to ${e.to_version}` };
export const FIRST_ROWS = 100;

/** Rows of {key, bars: [{start, end, kind, label}], marks: [{at, kind, label}]} and the span. */
export function timelineOf(events, now) {
  const rows = new Map();
  const row = (key) => {
    if (!rows.has(key)) rows.set(key, { key, bars: [], marks: [] });
    return rows.get(key);
  };
  const workflow = row("workflow");
  const open = new Map(); // unit key → its open bar (attempt or timer)
  for (const event of events) {
    const at = event.timestamp_ms;
    if (event.type === "StepDispatched") {
      const bar = { start: at, end: null, kind: "running", attempt: event.attempt,
        label: `attempt ${event.attempt} on ${event.worker_id || "?"}` };
      row(event.step).bars.push(bar);
      open.set(event.step, bar);
    } else if (event.type in ENDS && open.has(event.step)) {
      const bar = open.get(event.step);
      bar.end = at;
      bar.kind = ENDS[event.type];
      if (event.error) bar.label += ` — ${event.error.code}`;
      open.delete(event.step);
    } else if (event.type === "TimerStarted") {
      const bar = { start: at, end: null, kind: "timer", label: `timer until ${when(event.fire_at_ms)}` };
      row(event.step).bars.push(bar);
      open.set(`timer:${event.step}`, bar);
    } else if (event.type === "TimerFired" && open.has(`timer:${event.step}`)) {
      open.get(`timer:${event.step}`).end = at;
      open.delete(`timer:${event.step}`);
    } else if (event.type === "RetryScheduled") {
      row(event.step).marks.push({ at, kind: "retry",
        label: `retry: attempt ${event.next_attempt} in ${duration(event.delay_ms)}` });
    } else if (event.type === "SignalDelivered") {
      row(event.step).marks.push({ at, kind: "signal", label: `signal #${event.signal_seq} delivered` });
    } else if (event.type === "StepScheduled" || event.type === "StepSkipped") {
      row(event.step);
    } else if (event.type in WORKFLOW_MARKS) {
      workflow.marks.push({ at, kind: event.type === "SignalReceived" ? "signal" : "end",
        label: WORKFLOW_MARKS[event.type](event) });
    }
  }
  const start = events.length ? events[0].timestamp_ms : now;
  // a loop, not Math.max(...events): a long history would overflow the argument list
  let end = Math.max(start + 1, open.size ? now : 0);
  for (const event of events) end = Math.max(end, event.timestamp_ms);
  return { rows: [...rows.values()], start, end };
}

function place(element, left, width) {
  element.style.left = `${left}%`;
  if (width !== undefined) element.style.width = `${Math.max(width, 0.4)}%`;
  return element;
}

function barOf(bar, span, now) {
  const end = bar.end ?? now;
  const text = `${bar.label}: ${duration(end - bar.start)}${bar.end === null ? " so far" : ""}`;
  const left = ((bar.start - span.start) / (span.end - span.start)) * 100;
  const width = ((Math.min(end, span.end) - bar.start) / (span.end - span.start)) * 100;
  return place(h("span", { class: `bar bar-${bar.kind}`, title: text, role: "img", "aria-label": text }), left, width);
}

function markOf(mark, span) {
  const left = ((mark.at - span.start) / (span.end - span.start)) * 100;
  return place(h("span", { class: `mark mark-${mark.kind}`, title: mark.label, role: "img",
    "aria-label": mark.label }), left);
}

/** The timeline element of `events` (rows beyond `limit` are left out). */
export function timeline(events, now, limit = FIRST_ROWS) {
  const span = timelineOf(events, now);
  const rows = span.rows.slice(0, limit).map((row) => h("li", { class: "lane" },
    h("span", { class: "lane-key mono", title: row.key }, row.key),
    h("span", { class: "track" }, row.bars.map((bar) => barOf(bar, span, now)),
      row.marks.map((mark) => markOf(mark, span))),
    h("span", { class: "lane-note" }, row.bars.length ? `${row.bars.length} × · ${row.bars[row.bars.length - 1].label}` : "")));
  return {
    total: span.rows.length,
    element: h("div", { class: "timeline" },
      h("div", { class: "axis", "aria-hidden": "true" },
        h("span", {}, when(span.start)), h("span", {}, `+${duration(span.end - span.start)}`)),
      h("ol", { class: "lanes", tabindex: "0", "aria-label": "Timeline of this run" }, rows)),
  };
}
