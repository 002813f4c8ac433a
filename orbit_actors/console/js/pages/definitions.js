// Definitions: every workflow with its versions; one version's hash, its IR as YAML, and the
// executions of it that are running.

import { api, segment } from "../api.js";
import { h, replace, errorBox, badge, executionLink, facts } from "../dom.js";
import { when } from "../format.js";
import { href } from "../router.js";
import { toYaml } from "../yaml.js";
import { upgradeCheck } from "../upgradecheck.js";

export function renderDefinitions(main, route) {
  if (route.parts.length >= 2) return renderDefinition(main, route.parts[1], route.parts[2]);
  document.title = "Definitions · Orbit";
  replace(main, h("h1", {}, "Definitions"), h("p", { class: "muted" }, "Loading…"));
  api("GET", "/v1/definitions").then((answer) => {
    const byName = new Map();
    for (const definition of answer.definitions) {
      if (!byName.has(definition.name)) byName.set(definition.name, []);
      byName.get(definition.name).push(definition);
    }
    const rows = [...byName.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, versions]) =>
      h("tr", {}, h("td", { "data-label": "Workflow" }, h("a", { href: href(`/definitions/${encodeURIComponent(name)}`) }, name)),
        h("td", { "data-label": "Versions" }, h("ul", { class: "plain versions" }, versions.map((d) => h("li", {},
          h("a", { href: href(`/definitions/${encodeURIComponent(name)}/${encodeURIComponent(d.version)}`) }, d.version),
          " ", h("span", { class: "mono small muted", title: d.definition_hash }, d.definition_hash.slice(0, 12)))))),
        h("td", { "data-label": "Registered" }, when(Math.max(...versions.map((d) => d.registered_at_ms)))),
        h("td", { "data-label": "Runs" }, h("a", { href: href("/executions", { workflow: name }) }, `executions of ${name}`))));
    replace(main, h("h1", {}, "Definitions"),
      rows.length ? h("div", { class: "table-wrap" }, h("table", { class: "stack" },
        h("thead", {}, h("tr", {}, ["Workflow", "Versions and hashes", "Last registered", "Runs"].map((n) => h("th", { scope: "col" }, n)))),
        h("tbody", {}, rows)))
        : h("p", { class: "muted" }, "Nothing registered yet. Deploy with ", h("code", {}, "orbit deploy FILE"), "."));
  }).catch((error) => replace(main, h("h1", {}, "Definitions"), errorBox(error)));
  return null;
}

function renderDefinition(main, name, version) {
  const title = version ? `${name}@${version}` : name;
  document.title = `${title} · Orbit`;
  const crumbs = h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
    h("a", { href: "#/definitions" }, "Definitions"), " / ", title);
  replace(main, crumbs, h("h1", {}, title), h("p", { class: "muted" }, "Loading…"));
  const path = version ? `/v1/definitions/${segment(name)}/${segment(version)}` : `/v1/definitions/${segment(name)}`;
  Promise.all([api("GET", path), api("GET", "/v1/definitions"),
    api("GET", "/v1/executions", { query: { workflow: name, status: "running", limit: 100 } })])
    .then(([definition, all, running]) => {
      const versions = all.definitions.filter((d) => d.name === name);
      const mine = running.executions.filter((e) => e.version === definition.version);
      replace(main, crumbs, h("h1", {}, `${definition.name}@${definition.version}`),
        facts([["Hash", h("code", { class: "break" }, definition.definition_hash)],
          ["Registered", when(definition.registered_at_ms)],
          ["Description", definition.ir.description || null],
          ["Versions", h("span", {}, versions.map((d, i) => [i ? ", " : "",
            d.version === definition.version ? h("strong", {}, d.version)
              : h("a", { href: href(`/definitions/${encodeURIComponent(name)}/${encodeURIComponent(d.version)}`) }, d.version)]))]]),
        h("section", { "aria-labelledby": "h-running" }, h("h2", { id: "h-running" }, "Running executions of this version"),
          mine.length ? h("ul", {}, mine.map((e) => h("li", {}, executionLink(e.execution_id), " ", badge(e.status))))
            : h("p", { class: "muted" }, "None running."),
          h("p", {}, h("a", { href: href("/executions", { workflow: name }) }, `Every execution of ${name}`))),
        upgradeCheck(definition.name, definition.version),
        h("section", { "aria-labelledby": "h-source" }, h("h2", { id: "h-source" }, "Definition (compiled IR, as YAML)"),
          h("pre", { class: "yaml", tabindex: "0", "aria-label": "definition source" }, toYaml(definition.ir))));
    }).catch((error) => replace(main, crumbs, h("h1", {}, title), errorBox(error)));
  return null;
}
