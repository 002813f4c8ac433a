// Operating one execution (operations.md): pause or unpause it, terminate it, and rerun a
// finished one from a step. Each action that cannot be undone asks for a confirmation in the
// page first; a rerun shows its dry run (what it would reuse and run again) before it acts.

import { api, segment } from "./api.js";
import { h, replace, errorBox } from "./dom.js";

function post(executionId, action, body) {
  return api("POST", `/v1/executions/${segment(executionId)}/${action}`, { body: body || {} });
}

/** A button that turns into "are you sure?" with a confirm and a back button. */
function confirmed(label, question, confirmLabel, act) {
  const area = h("div", { class: "confirm", "aria-live": "polite" });
  const ask = () => replace(area, h("p", {}, question),
    h("div", { class: "inline" },
      h("button", { type: "button", class: "danger", onclick: () => act(area) }, confirmLabel),
      h("button", { type: "button", onclick: () => replace(area) }, "Back")));
  return h("div", {}, h("button", { type: "button", onclick: ask }, label), area);
}

async function run(area, action, changed) {
  replace(area);
  try {
    await action();
    changed();
  } catch (error) {
    replace(area, errorBox(error));
  }
}

function pauseCard(detail, changed) {
  const id = detail.execution_id;
  const area = h("div", { "aria-live": "polite" });
  if (detail.paused) {
    return h("div", { class: "card" }, h("h3", {}, "Paused"),
      h("p", {}, "Nothing new is dispatched; results, signals and timers are still recorded."),
      h("button", { type: "button", onclick: () => run(area, () => post(id, "unpause"), changed) }, "Unpause"),
      area);
  }
  const reason = h("input", { id: "pause-reason", type: "text", autocomplete: "off" });
  const pause = (event) => {
    event.preventDefault();
    run(area, () => post(id, "pause", { reason: reason.value.trim() || null }), changed);
  };
  return h("form", { class: "card", onsubmit: pause, "aria-label": "Pause" }, h("h3", {}, "Pause"),
    h("div", { class: "field" }, h("label", { for: "pause-reason" }, "Why pause"), reason),
    h("button", { type: "submit" }, "Pause execution"), area);
}

function terminateCard(detail, changed) {
  const id = detail.execution_id;
  const reason = h("input", { id: "terminate-reason", type: "text", placeholder: "terminated by request",
    autocomplete: "off" });
  const act = (area) => run(area, () => post(id, "terminate", { reason: reason.value.trim() || null }), changed);
  return h("div", { class: "card" }, h("h3", {}, "Terminate"),
    h("p", {}, "Ends the execution at once: no compensation, no handlers."),
    h("div", { class: "field" }, h("label", { for: "terminate-reason" }, "Why terminate"), reason),
    confirmed("Terminate…", `Terminate ${id} now? Its running attempts are stopped.`,
      "Yes, terminate", act));
}

function rerunCard(detail, ir, changed) {
  const id = detail.execution_id;
  const steps = ((ir && ir.steps) || []).map((step) => step.id);
  const from = h("select", { id: "rerun-from" },
    h("option", { value: "" }, "the first step that failed"),
    steps.map((step) => h("option", { value: step }, step)));
  const plan = h("div", { "aria-live": "polite" });
  const body = () => (from.value ? { from_step: from.value } : {});
  const preview = async () => {
    replace(plan);
    try {
      const answer = await post(id, "rerun", { ...body(), dry_run: true });
      replace(plan,
        h("dl", { class: "facts rerun-plan" },
          h("dt", {}, "Reuse"), h("dd", {}, answer.reused.join(", ") || "nothing"),
          h("dt", {}, "Run again"), h("dd", {}, answer.rerun.join(", ") || "nothing"),
          answer.children.length ? [h("dt", {}, "Start children"), h("dd", {}, answer.children.join(", "))] : []),
        confirmed(`Rerun from ${answer.from_step}`, `Start run ${detail.run + 1} of ${id} from ${answer.from_step}?`,
          "Yes, rerun", (area) => run(area, async () => {
            await post(id, "rerun", { from_step: answer.from_step });
            window.location.reload(); // the page follows the new run from the start
          }, changed)));
    } catch (error) {
      replace(plan, errorBox(error));
    }
  };
  return h("div", { class: "card" }, h("h3", {}, "Rerun"),
    h("p", {}, "Runs it again under the same id: steps before the chosen one keep their outputs."),
    h("div", { class: "field" }, h("label", { for: "rerun-from" }, "Rerun from"), from),
    h("button", { type: "button", onclick: preview }, "Preview rerun"), plan);
}

/** The operator's cards for `detail` of a definition `ir`; `changed()` asks for a refresh. */
export function operateCards(detail, ir, changed) {
  if (detail.quarantined) return [];
  if (detail.status === "running") return [pauseCard(detail, changed), terminateCard(detail, changed)];
  return [rerunCard(detail, ir, changed)];
}
