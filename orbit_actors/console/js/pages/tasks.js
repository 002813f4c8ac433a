// Tasks: every task version a workflow uses or a worker serves, the online workers serving it,
// their capacity and tasks in flight, and what waits for it (the oldest, how long).

import { api } from "../api.js";
import { h, replace, errorBox } from "../dom.js";
import { count, duration } from "../format.js";
import { Poller } from "../live.js";

function state(task) {
  if (task.workers_online === 0) return ["no worker", "status-offline"];
  if (task.waiting > 0 && task.in_flight >= task.capacity) return ["busy", "status-running"];
  return ["served", "status-online"];
}

function taskRow(task) {
  const cell = (label, ...content) => h("td", { "data-label": label }, ...content);
  const [text, style] = state(task);
  return h("tr", { "data-task": `${task.task}@${task.version}` },
    h("td", { class: "mono", "data-label": "Task" }, `${task.task}@${task.version}`),
    cell("State", h("span", { class: `badge ${style}` }, text)),
    cell("Workers online", String(task.workers_online)),
    cell("In flight", `${count(task.in_flight)} of ${count(task.capacity)}`),
    cell("Waiting", count(task.waiting)),
    cell("Oldest waiting", task.oldest_waiting_ms === null ? "—" : duration(task.oldest_waiting_ms)));
}

export function renderTasks(main) {
  document.title = "Tasks · Orbit";
  const body = h("tbody", {});
  const problem = h("div", { "aria-live": "polite" });
  replace(main, h("h1", {}, "Tasks"), problem,
    h("div", { class: "table-wrap" }, h("table", { class: "stack" },
      h("thead", {}, h("tr", {}, ["Task", "State", "Workers online", "In flight", "Waiting", "Oldest waiting"]
        .map((name) => h("th", { scope: "col" }, name)))), body)));
  let shown = "";
  const poller = new Poller().start(async (signal) => {
    try {
      const answer = await api("GET", "/v1/tasks", { signal });
      const text = JSON.stringify(answer.tasks.map((t) => ({ ...t, oldest_waiting_ms: Math.floor((t.oldest_waiting_ms || 0) / 1000) })));
      if (text !== shown) {
        shown = text;
        replace(body, answer.tasks.length ? answer.tasks.map(taskRow)
          : h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No workflow uses a task yet.")));
      }
      replace(problem);
    } catch (error) {
      if (error.name === "AbortError") throw error;
      replace(problem, errorBox(error));
    }
  });
  return () => poller.stop();
}
