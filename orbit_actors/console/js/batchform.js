// Batches from the executions page (operations.md, "Batches"): choose an action and a filter,
// count what it matches (the dry run, with the first ids) before anything is done, confirm,
// then follow the batch's progress; the latest batches are listed with theirs.

import { api, segment } from "./api.js";
import { h, replace, badge, errorBox, executionLink } from "./dom.js";
import { when, count } from "./format.js";
import { Poller } from "./live.js";

const ACTIONS = ["cancel", "terminate", "pause", "unpause", "rerun"];
const STATUSES = ["queued", "running", "completed", "failed", "cancelled", "timed_out", "terminated"];

function progressOf(batch) {
  const settled = batch.done + batch.failed_count;
  return h("div", { class: "batch-progress", "data-batch": batch.batch_id },
    h("p", {}, h("strong", {}, batch.batch_id), " ", batch.action, " ", badge(batch.state), " ",
      `${count(batch.done)} done, ${count(batch.failed_count)} failed of ${count(batch.matched)}`),
    h("progress", { max: String(Math.max(batch.matched, 1)), value: String(settled),
      "aria-label": `${batch.batch_id} progress` }),
    batch.failed.length ? h("ul", { class: "small" }, batch.failed.slice(0, 20).map((f) =>
      h("li", {}, executionLink(f.execution_id), ` ${f.code}: ${f.message}`))) : null);
}

/** Follows one batch in `area` until it is no longer running, with a button to stop it. */
function follow(area, batchId) {
  const poller = new Poller().start(async (signal) => {
    const batch = await api("GET", `/v1/batches/${segment(batchId)}`, { signal });
    const stop = async () => {
      try { await api("POST", `/v1/batches/${segment(batchId)}/cancel`); } catch (error) {
        area.append(errorBox(error));
      }
    };
    replace(area, progressOf(batch), batch.state === "running"
      ? h("button", { type: "button", onclick: stop }, "Stop batch") : null);
    return batch.state === "running";
  });
  return poller;
}

/** The "act on many" form; `filters` are the page's (status, workflow) to start from. */
export function batchForm(filters) {
  const pollers = [];
  const field = (id, label, control) => h("div", { class: "field" }, h("label", { for: id }, label), control);
  const action = h("select", { id: "batch-action" }, ACTIONS.map((a) => h("option", { value: a }, a)));
  const status = h("select", { id: "batch-status" }, h("option", { value: "" }, "any status"),
    STATUSES.map((s) => h("option", { value: s, selected: s === filters.status }, s.replace("_", " "))));
  const workflow = h("input", { id: "batch-workflow", type: "text", value: filters.workflow || "",
    placeholder: "any workflow", autocomplete: "off" });
  const reason = h("input", { id: "batch-reason", type: "text", autocomplete: "off" });
  const result = h("div", { "aria-live": "polite" });
  const recent = h("div", { class: "batches" });
  const filter = () => {
    const chosen = {};
    if (status.value) chosen.status = status.value;
    if (workflow.value.trim()) chosen.workflow = workflow.value.trim();
    return chosen;
  };
  const start = async (chosen, chosenAction) => {
    try {
      const made = await api("POST", "/v1/batches", { body: { action: chosenAction, filter: chosen,
        reason: reason.value.trim() || null } });
      pollers.push(follow(result, made.batch_id));
    } catch (error) {
      replace(result, errorBox(error));
    }
  };
  const preview = async (event) => {
    event.preventDefault();
    const chosen = filter();
    const chosenAction = action.value;
    replace(result);
    try {
      const answer = await api("POST", "/v1/batches", { body: { action: chosenAction, filter: chosen,
        dry_run: true } });
      const question = `${chosenAction} ${count(answer.matched)} executions?`;
      replace(result,
        h("p", { class: "batch-count" }, `Matches ${count(answer.matched)} executions now.`),
        answer.sample.length ? h("p", { class: "small" }, "First: ",
          answer.sample.map((id, i) => [i ? ", " : "", executionLink(id)])) : null,
        answer.matched ? h("div", { class: "confirm" }, h("p", {}, question),
          h("div", { class: "inline" },
            h("button", { type: "button", class: "danger", onclick: () => start(chosen, chosenAction) },
              `Yes, ${chosenAction} ${count(answer.matched)}`),
            h("button", { type: "button", onclick: () => replace(result) }, "Back"))) : null);
    } catch (error) {
      replace(result, errorBox(error));
    }
  };
  api("GET", "/v1/batches", { query: { limit: 5 } }).then((answer) => {
    if (answer.batches.length) {
      replace(recent, h("h3", {}, "Latest batches"), answer.batches.map(progressOf));
    }
  }).catch(() => {});
  const body = h("div", {});
  // the fields exist only while the form is open: their labels never shadow the page's own
  const toggled = () => replace(body, form.open ? [
    h("form", { onsubmit: preview, "aria-label": "Batch" },
      h("div", { class: "inline" },
        field("batch-action", "Action", action), field("batch-status", "Status", status),
        field("batch-workflow", "Workflow", workflow), field("batch-reason", "Why", reason)),
      h("button", { type: "submit" }, "Count matching executions")),
    result, recent] : []);
  const form = h("details", { class: "card batch-form", ontoggle: toggled },
    h("summary", {}, "Act on many executions"), body);
  return { element: form, stop: () => pollers.forEach((p) => p.stop()) };
}
