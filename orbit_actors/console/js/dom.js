// Building the DOM without innerHTML: every value is inserted as text, so nothing from the API
// can become markup.

/** An element: h("a", {href: "#/x", class: "y"}, "text", child…). Attributes starting with
 * "on" are event listeners; null/false attributes and children are left out. */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  setAttributes(element, attributes);
  append(element, children);
  return element;
}

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element, as h() does for HTML. */
export function s(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  setAttributes(element, attributes);
  append(element, children);
  return element;
}

function setAttributes(element, attributes) {
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace the children of `element`. */
export function replace(element, ...children) {
  element.replaceChildren();
  append(element, children);
}

/** A status as a coloured badge. */
export function badge(status) {
  return h("span", { class: `badge status-${String(status).replace(/\s+/g, "-")}` }, status);
}

/** A table from column headers and rows of cells; a wide one scrolls sideways in its own box
 * (focusable, so the keyboard can scroll it too). */
export function table(caption, headers, rows) {
  return h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": caption },
    h("table", {},
      caption ? h("caption", {}, caption) : null,
      h("thead", {}, h("tr", {}, headers.map((name) => h("th", { scope: "col" }, name)))),
      h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cell)))))));
}

/** A JSON value, pretty-printed, in a <pre>. */
export function jsonBlock(value, label) {
  return h("pre", { class: "json", tabindex: "0", "aria-label": label },
    JSON.stringify(value, null, 2));
}

/** A message that the API (or the network) refused something. */
export function errorBox(error) {
  return h("div", { class: "error", role: "alert" },
    error.code ? h("strong", {}, `${error.code}: `) : null, error.message || String(error));
}

/** A definition list from [term, value] pairs. */
export function facts(pairs) {
  return h("dl", { class: "facts" },
    pairs.filter(([, value]) => value !== null && value !== undefined)
      .map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]));
}

/** A link to one execution. */
export function executionLink(id, text = id) {
  return h("a", { href: `#/executions/${encodeURIComponent(id)}`, class: "mono" }, text);
}
