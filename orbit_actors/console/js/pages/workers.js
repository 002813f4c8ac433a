// Workers: every worker ever registered, online or not, its sessions, tasks in flight and contracts.

import { api } from "../api.js";
import { h, replace, errorBox } from "../dom.js";
import { ago, when } from "../format.js";
import { Poller } from "../live.js";

function workerRow(worker) {
  return h("tr", { "data-worker": worker.worker_id },
    h("td", { class: "mono" }, worker.worker_id),
    h("td", {}, h("span", { class: `badge ${worker.online ? "status-online" : "status-offline"}` },
      worker.online ? "online" : "offline")),
    h("td", {}, String(worker.sessions)),
    h("td", {}, String(worker.inflight)),
    h("td", {}, `${worker.runtime} · ${worker.sdk}`),
    h("td", {}, h("span", { title: when(worker.last_seen_ms) }, ago(worker.last_seen_ms))),
    h("td", {}, h("details", {}, h("summary", {}, `${worker.contracts.length} contracts`),
      h("ul", { class: "plain mono small" }, worker.contracts.map((contract) =>
        h("li", {}, `${contract.task_name}@${contract.contract_version}`))))));
}

export function renderWorkers(main) {
  document.title = "Workers · Orbit";
  const body = h("tbody", {});
  const problem = h("div", { "aria-live": "polite" });
  replace(main, h("h1", {}, "Workers"), problem,
    h("div", { class: "table-wrap" }, h("table", {},
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
