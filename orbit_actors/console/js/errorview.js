// An execution's or unit's error as a person reads it: code and message, then each detail — a
// worker's stack trace as preformatted text, never as a JSON string with \n in it.

import { h, jsonBlock } from "./dom.js";

export function errorView(error, label = "Error") {
  if (!error) return null;
  const details = error.details || {};
  return h("div", { class: "failure" },
    h("p", {}, h("strong", { class: "mono" }, error.code), " ", error.message || ""),
    error.retryable === false ? h("p", { class: "muted small" }, "not retryable") : null,
    Object.entries(details).map(([name, value]) =>
      typeof value === "string" && value.includes("\n")
        ? h("div", {}, h("h4", {}, name.replace(/_/g, " ")),
          h("pre", { class: "trace", tabindex: "0", "aria-label": `${label}: ${name}` }, value))
        : h("div", {}, h("h4", {}, name.replace(/_/g, " ")), jsonBlock(value, `${label}: ${name}`))));
}
