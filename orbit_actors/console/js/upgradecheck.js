// "Check a new version" on a definition's page: paste or upload the YAML of a candidate; every
// running execution of this version is replayed against it (page by page, on the server) and
// the ones it could not take over are listed with where they diverge. Nothing is deployed.

import { api, segment } from "./api.js";
import { h, replace, errorBox, executionLink } from "./dom.js";

const PAGE = 1000;
const MAX_PAGES = 100; // 100,000 executions: beyond that, the CLI (`orbit deploy --check`)

/** The section for `name@version`. */
export function upgradeCheck(name, version) {
  const source = h("textarea", { id: "candidate", rows: "12", spellcheck: "false",
    "aria-describedby": "candidate-help" });
  const file = h("input", { type: "file", id: "candidate-file", accept: ".yaml,.yml,.json,text/yaml" });
  file.addEventListener("change", async () => {
    if (file.files.length) source.value = await file.files[0].text();
  });
  const result = h("div", { "aria-live": "polite", id: "check-result" });
  const button = h("button", { type: "button" }, "Check");
  button.addEventListener("click", async () => {
    button.disabled = true;
    replace(result, h("p", { class: "muted" }, "Checking…"));
    try {
      replace(result, summary(await checkAll(name, version, source.value)));
    } catch (error) {
      replace(result, errorBox(error));
    } finally {
      button.disabled = false;
    }
  });
  return h("section", { "aria-labelledby": "h-check" }, h("h2", { id: "h-check" }, "Check a new version"),
    h("p", { class: "muted", id: "candidate-help" }, "Paste or upload the YAML of a new version of ", name,
      ": every running execution of ", version, " is replayed against it. Nothing is deployed or written."),
    h("div", { class: "field" }, h("label", { for: "candidate" }, "Candidate definition (YAML)"), source),
    h("div", { class: "field" }, h("label", { for: "candidate-file" }, "Or upload a file"), file),
    button, result);
}

async function checkAll(name, version, text) {
  const path = `/v1/definitions/${segment(name)}/${segment(version)}/check`;
  const total = { checked: 0, compatible: 0, incompatible: [], candidate: null, more: false };
  let cursor = null;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const answer = await api("POST", path, { yaml: text, query: { limit: PAGE, cursor } });
    total.candidate = answer.candidate;
    total.checked += answer.checked;
    total.compatible += answer.compatible;
    total.incompatible.push(...answer.incompatible);
    cursor = answer.next_cursor;
    if (!cursor) return total;
  }
  total.more = true;
  return total;
}

function summary(total) {
  const candidate = `${total.candidate.name}@${total.candidate.version}`;
  const line = h("p", { class: "check-summary" }, `${candidate}: ${total.checked} running checked, `,
    `${total.compatible} compatible, ${total.incompatible.length} incompatible`, total.more ? " (first pages only)" : "", ".");
  if (!total.incompatible.length) return line;
  return [line, h("div", { class: "table-wrap", tabindex: "0" }, h("table", { class: "stack incompatible" },
    h("thead", {}, h("tr", {}, ["Execution", "Run", "Diverges at", "Recorded", "The candidate"].map((n) => h("th", { scope: "col" }, n)))),
    h("tbody", {}, total.incompatible.map((item) => h("tr", { "data-execution": item.execution_id },
      h("td", { "data-label": "Execution" }, executionLink(item.execution_id)),
      h("td", { "data-label": "Run" }, String(item.run)),
      h("td", { "data-label": "Diverges at" }, `seq ${item.first_divergent_seq}`),
      h("td", { "data-label": "Recorded" }, item.recorded),
      h("td", { "data-label": "The candidate" }, item.candidate))))))];
}
