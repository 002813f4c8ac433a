// Steering one execution: a signal form per declared signal (built from its schema, checked as
// the server checks it), the declared queries, cancel with a reason, resume when quarantined.

import { api, segment } from "./api.js";
import { h, replace, errorBox, jsonBlock } from "./dom.js";
import { schemaForm } from "./schemaform.js";
import { validate, SchemaViolation } from "./schema.js";
import { operateCards } from "./operate.js";

function outcomeArea() {
  return h("div", { class: "outcome", "aria-live": "polite" });
}

// Successes are told in the section's own status line (`notice`), which outlives the forms: an
// accepted signal or cancel usually ends the execution, and its forms go away with it.
let notice = null;

async function attempt(area, action, success) {
  replace(area);
  if (notice) replace(notice);
  try {
    const answer = await action();
    if (notice) replace(notice, h("p", { class: "ok" }, success(answer)));
  } catch (error) {
    replace(area, errorBox(error));
  }
}

/** The status line the actions report their successes in. */
export function actionNotice() {
  notice = h("div", { role: "status", class: "notice" });
  return notice;
}

function signalForm(executionId, name, schema, changed) {
  const form = schemaForm(schema, `signal-${name}`);
  const area = outcomeArea();
  const submit = (event) => {
    event.preventDefault();
    attempt(area, async () => {
      let payload;
      try {
        payload = validate(schema, form.read());
      } catch (error) {
        if (error instanceof SchemaViolation || error instanceof SyntaxError) {
          throw { code: "SIGNAL_PAYLOAD_INVALID", message: error.message };
        }
        throw error;
      }
      const answer = await api("POST", `/v1/executions/${segment(executionId)}/signals/${segment(name)}`,
        { body: { payload } });
      changed();
      return answer;
    }, (answer) => `Signal ${name} accepted (#${answer.seq}).`);
  };
  return h("form", { class: "card", onsubmit: submit, "aria-label": `Signal ${name}`, novalidate: true },
    h("h3", {}, `Signal `, h("code", {}, name)), form.element,
    h("button", { type: "submit" }, `Send ${name}`), area);
}

function queryRow(executionId, name, expression) {
  const area = outcomeArea();
  const run = () => {
    replace(area);
    api("GET", `/v1/executions/${segment(executionId)}/queries/${segment(name)}`)
      .then((answer) => replace(area, jsonBlock(answer.value, `value of ${name}`)))
      .catch((error) => replace(area, errorBox(error)));
  };
  return h("li", { class: "query" },
    h("div", { class: "inline" }, h("code", {}, name),
      h("button", { type: "button", onclick: run }, `Run ${name}`)),
    h("p", { class: "muted mono small" }, expression), area);
}

function cancelForm(executionId, changed) {
  const reason = h("input", { id: "cancel-reason", type: "text", placeholder: "cancelled by request",
    autocomplete: "off" });
  const area = outcomeArea();
  const submit = (event) => {
    event.preventDefault();
    attempt(area, async () => {
      const answer = await api("POST", `/v1/executions/${segment(executionId)}/cancel`,
        { body: { reason: reason.value.trim() || null } });
      changed();
      return answer;
    }, () => "Cancel requested.");
  };
  return h("form", { class: "card", onsubmit: submit, "aria-label": "Cancel" },
    h("h3", {}, "Cancel"),
    h("div", { class: "field" }, h("label", { for: "cancel-reason" }, "Reason"), reason),
    h("button", { type: "submit", class: "danger" }, "Cancel execution"), area);
}

function resumeForm(executionId, changed) {
  const area = outcomeArea();
  const resume = () => attempt(area, async () => {
    const answer = await api("POST", `/v1/executions/${segment(executionId)}/resume`);
    changed();
    return answer;
  }, () => "Resumed from its history.");
  return h("div", { class: "card" }, h("h3", {}, "Quarantined"),
    h("p", {}, "The execution's actor failed repeatedly and was stopped. Resume respawns it from its history."),
    h("button", { type: "button", onclick: resume }, "Resume"), area);
}

/** The actions section for `detail` of a definition `ir`; `changed()` asks for a refresh. */
export function actions(detail, ir, changed) {
  const running = detail.status === "running";
  const signals = Object.entries((ir && ir.signals) || {});
  const queries = Object.entries((ir && ir.queries) || {});
  const parts = [];
  if (detail.quarantined) parts.push(resumeForm(detail.execution_id, changed));
  if (running) {
    for (const [name, schema] of signals) parts.push(signalForm(detail.execution_id, name, schema, changed));
    parts.push(cancelForm(detail.execution_id, changed));
  }
  parts.push(...operateCards(detail, ir, changed));
  if (queries.length) {
    parts.push(h("div", { class: "card" }, h("h3", {}, "Queries"),
      h("ul", { class: "plain" }, queries.map(([name, expression]) => queryRow(detail.execution_id, name, expression)))));
  }
  if (!parts.length) parts.push(h("p", { class: "muted" }, "Nothing to do."));
  return h("div", { class: "actions" }, parts);
}
