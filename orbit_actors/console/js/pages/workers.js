// Workers: every worker ever registered, online or not, its sessions, tasks in flight and contracts.

import { api } from "../api.js";
import { h, replace, errorBox } from "../dom.js";
import { ago, when } from "../format.js";
import { Poller } from "../live.js";

function workerRow(worker) {
  const cell = (label, ...content) => h("td", { "data-label": label }, ...content);
  return h("tr", { "data-worker": worker.worker_id },
    h("td", { class: "mono", "data-label": "Worker" }, worker.worker_id),
    cell("State", h("span", { class: `badge ${worker.online ? "status-online" : "status-offline"}` },
      worker.online ? "online" : "offline")),
    cell("Sessions", String(worker.sessions)),
    cell("In flight", String(worker.inflight)),
    cell("Runtime", `${worker.runtime} · ${worker.sdk}`),
    cell("Last seen", h("span", { title: when(worker.last_seen_ms) }, ago(worker.last_seen_ms))),
    cell("Contracts", h("details", {}, h("summary", {}, `${worker.contracts.length} contracts`),
      h("ul", { class: "plain mono small" }, worker.contracts.map((contract) =>
        h("li", {}, `${contract.task_name}@${contract.contract_version}`))))));
}

export function renderWorkers(main) {
  document.title = "Workers · Orbit";
  const body = h("tbody", {});
  const problem = h("div", { "aria-live": "polite" });
  replace(main, h("h1", {}, "Workers"), problem,
    h("div", { class: "table-wrap" }, h("table", { class: "stack" },
      h("thead", {}, h("tr", {}, ["Worker", "State", "Sessions", "In flight", "Runtime", "Last seen", "Contracts"]
        .map((name) => h("th", { scope: "col" }, name)))), body)));
  let shown = "";
  const poller = new Poller().start(async (signal) => {
    try {
      const answer = await api("GET", "/v1/workers", { signal });
      const text = JSON.stringify(answer.workers.map((w) => ({ ...w, last_seen_ms: Math.floor(w.last_seen_ms / 5000) })));
      if (text !== shown) {
        shown = text;
        replace(body, answer.workers.length ? answer.workers.map(workerRow)
          : h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No worker has registered yet.")));
      }
      replace(problem);
    } catch (error) {
      if (error.name === "AbortError") throw error;
      replace(problem, errorBox(error));
    }
  });
  return () => poller.stop();
}
