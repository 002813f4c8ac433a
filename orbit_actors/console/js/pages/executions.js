// Executions: newest first, filtered by status and workflow on the server, paged by cursor,
// counted by status, refreshed every second; a form acts on many of them at once (batches).

import { api, segment } from "../api.js";
import { h, replace, badge, errorBox, executionLink } from "../dom.js";
import { when, iso, duration, count } from "../format.js";
import { href, navigate } from "../router.js";
import { Poller } from "../live.js";
import { batchForm } from "../batchform.js";

const STATUSES = ["queued", "running", "completed", "failed", "cancelled", "timed_out", "terminated"];
const PAGE_SIZE = 50;
const newerCursors = []; // the cursors of the pages before this one, to page back

export function renderExecutions(main, route) {
  const filters = {
    status: route.params.get("status") || "",
    workflow: route.params.get("workflow") || "",
    cursor: route.params.get("cursor") || "",
  };
  document.title = "Executions · Orbit";
  const tabs = h("ul", { class: "tabs", "aria-label": "Status" });
  const rows = h("tbody", {});
  const problem = h("div", { "aria-live": "polite" });
  const pager = h("nav", { class: "pager", "aria-label": "Pages" });
  const batches = batchForm(filters);
  replace(main,
    h("h1", {}, "Executions"),
    h("nav", { "aria-label": "Executions by status" }, tabs),
    filterForm(filters),
    batches.element,
    problem,
    h("div", { class: "table-wrap" },
      h("table", { class: "executions stack" },
        h("caption", { class: "visually-hidden" }, "Executions, newest first"),
        h("thead", {}, h("tr", {}, ["Execution", "Workflow", "Status", "Run", "Started", "Took",
          "Parent"].map((name) => h("th", { scope: "col" }, name)))),
        rows)),
    pager);
  let shown = "";
  const poller = new Poller().start(async (signal) => {
    try {
      const page = await api("GET", "/v1/executions", { signal, query: {
        status: filters.status, workflow: filters.workflow, cursor: filters.cursor,
        limit: PAGE_SIZE, counts: "true" } });
      const text = JSON.stringify(page);
      if (text !== shown) {
        shown = text;
        replace(tabs, statusTabs(page.counts || {}, filters));
        replace(rows, page.executions.length ? page.executions.map(row)
          : h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No executions match.")));
        replace(pager, pagerLinks(filters, page.next_cursor));
      }
      replace(problem);
    } catch (error) {
      if (error.name === "AbortError") throw error;
      replace(problem, errorBox(error));
    }
  });
  return () => { poller.stop(); batches.stop(); };
}

function statusTabs(counts, filters) {
  const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
  const tab = (status, label, n) => h("li", {},
    h("a", { href: href("/executions", { status, workflow: filters.workflow }),
      "aria-current": filters.status === status ? "page" : null, "data-status": status || "all" },
      label, " ", h("span", { class: "count" }, count(n))));
  return [tab("", "All", total),
    ...STATUSES.map((status) => tab(status, status.replace("_", " "), counts[status] || 0)),
    filters.workflow ? h("li", { class: "muted small" }, "(counts over every workflow)") : null];
}

function filterForm(filters) {
  const workflow = h("select", { id: "filter-workflow", name: "workflow" },
    h("option", { value: "" }, "every workflow"));
  api("GET", "/v1/definitions").then((answer) => {
    const names = [...new Set(answer.definitions.map((d) => d.name))].sort();
    if (filters.workflow && !names.includes(filters.workflow)) names.unshift(filters.workflow);
    for (const name of names) {
      workflow.append(h("option", { value: name, selected: name === filters.workflow }, name));
    }
  }).catch(() => {});
  workflow.addEventListener("change", () => {
    newerCursors.length = 0;
    navigate("/executions", { status: filters.status, workflow: workflow.value });
  });
  const id = h("input", { id: "filter-id", name: "id", type: "search", required: true,
    placeholder: "execution id", autocomplete: "off", spellcheck: "false" });
  const found = h("div", { "aria-live": "polite" });
  async function open(event) {
    event.preventDefault();
    const wanted = id.value.trim();
    try {
      await api("GET", `/v1/executions/${segment(wanted)}`);
      navigate(`/executions/${encodeURIComponent(wanted)}`);
    } catch (error) {
      replace(found, errorBox(error));
    }
  }
  return h("div", { class: "filters" },
    h("div", { class: "field" }, h("label", { for: "filter-workflow" }, "Workflow"), workflow),
    h("form", { class: "field", onsubmit: open, role: "search" },
      h("label", { for: "filter-id" }, "Open by id"),
      h("div", { class: "inline" }, id, h("button", { type: "submit" }, "Open"))),
    found);
}

function row(execution) {
  const took = execution.closed_at_ms && execution.started_at_ms
    ? duration(execution.closed_at_ms - execution.started_at_ms) : "—";
  const cell = (label, ...content) => h("td", { "data-label": label }, ...content);
  return h("tr", { "data-id": execution.execution_id },
    cell("Execution", executionLink(execution.execution_id)),
    cell("Workflow", `${execution.workflow}@${execution.version}`),
    cell("Status", badge(execution.status)),
    cell("Run", String(execution.run)),
    cell("Started", h("time", { datetime: iso(execution.started_at_ms) }, when(execution.started_at_ms))),
    cell("Took", took),
    cell("Parent", execution.parent_id ? executionLink(execution.parent_id) : "—"));
}

function pagerLinks(filters, nextCursor) {
  const base = { status: filters.status, workflow: filters.workflow };
  const links = [];
  if (filters.cursor) {
    links.push(h("a", { href: href("/executions", base), onclick: () => { newerCursors.length = 0; } },
      "Newest"));
    const previous = newerCursors[newerCursors.length - 1];
    if (previous !== undefined) {
      links.push(h("a", { href: href("/executions", { ...base, cursor: previous }),
        onclick: () => newerCursors.pop() }, "Newer"));
    }
  }
  if (nextCursor) {
    links.push(h("a", { href: href("/executions", { ...base, cursor: nextCursor }), rel: "next",
      onclick: () => newerCursors.push(filters.cursor) }, "Older"));
  }
  return links;
}
