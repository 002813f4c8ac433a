// A run's events as a table, built when opened: seq, time, type, unit and the other fields.

import { h, replace } from "./dom.js";
import { when } from "./format.js";

const SHOWN = new Set(["seq", "timestamp_ms", "type", "step"]);
const FIRST = 500;

function rows(events, limit) {
  return events.slice(0, limit).map((event) => {
    const rest = Object.fromEntries(Object.entries(event).filter(([name]) => !SHOWN.has(name)));
    return h("tr", {}, h("td", {}, String(event.seq)), h("td", {}, when(event.timestamp_ms)),
      h("td", { class: "mono" }, event.type), h("td", { class: "mono" }, event.step || ""),
      h("td", { class: "mono small cell-json" }, Object.keys(rest).length ? JSON.stringify(rest) : ""));
  });
}

/** A <details> holding the events of a run. */
export function eventTable(events, state = {}) {
  const body = h("div", {});
  const details = h("details", { open: Boolean(state.open) }, h("summary", {}, `${events.length} events`), body);
  const fill = (limit) => replace(body,
    h("div", { class: "table-wrap" }, h("table", { class: "events" },
      h("thead", {}, h("tr", {}, ["Seq", "Time", "Type", "Unit", "Fields"].map((name) => h("th", { scope: "col" }, name)))),
      h("tbody", {}, rows(events, limit)))),
    events.length > limit ? h("button", { type: "button", onclick: () => fill(events.length) }, `Show all ${events.length} events`) : null);
  if (details.open) fill(FIRST);
  details.addEventListener("toggle", () => {
    state.open = details.open;
    if (details.open && !body.childElementCount) fill(FIRST);
  });
  return details;
}
