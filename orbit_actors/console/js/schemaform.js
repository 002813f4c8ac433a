// A form built from a JSON schema: one field per property of an object schema (a checkbox for a
// boolean, a list for an enum, a number box, a text box, JSON for anything nested), or one JSON
// box for any other schema. read() gives the value the person entered.

import { h } from "./dom.js";

let serial = 0;

/** {element, read()} for `schema`; ids are prefixed with `prefix`. */
export function schemaForm(schema, prefix) {
  const properties = schema && schema.type === "object" && schema.properties;
  if (!properties || !Object.keys(properties).length) return jsonField(schema, prefix);
  const required = new Set(schema.required || []);
  const fields = Object.entries(properties).map(([name, sub]) =>
    propertyField(name, sub || {}, required.has(name), prefix));
  return {
    element: h("div", { class: "schema-form" }, fields.map((field) => field.element)),
    read() {
      const value = {};
      for (const field of fields) {
        const [present, item] = field.read();
        if (present) value[field.name] = item;
      }
      return value;
    },
  };
}

function fieldId(prefix, name) {
  serial += 1;
  return `${prefix}-${name.replace(/[^A-Za-z0-9_-]/g, "_")}-${serial}`;
}

function labelFor(id, name, sub, required) {
  return h("label", { for: id }, name, required ? h("span", { class: "required" }, " (required)") : null,
    sub.description ? h("span", { class: "muted" }, ` — ${sub.description}`) : null);
}

function propertyField(name, sub, required, prefix) {
  const id = fieldId(prefix, name);
  const type = Array.isArray(sub.type) ? null : sub.type;
  if (sub.enum) return enumField(name, sub, required, id);
  if (type === "boolean") {
    const box = h("input", { id, type: "checkbox", name, checked: sub.default === true });
    return { name, element: h("div", { class: "check" }, box, labelFor(id, name, sub, required)),
      read: () => [true, box.checked] };
  }
  if (type === "string" || type === "number" || type === "integer") {
    const numeric = type !== "string";
    const input = h("input", { id, name, type: numeric ? "number" : "text",
      step: type === "number" ? "any" : null, value: sub.default ?? null, required, autocomplete: "off" });
    return { name, element: h("div", { class: "field" }, labelFor(id, name, sub, required), input),
      read: () => {
        if (input.value === "") return [false, null];
        return [true, numeric ? Number(input.value) : input.value];
      } };
  }
  const json = jsonField(sub, prefix, name, required);
  return { name, element: json.element, read: () => {
    const text = json.text();
    return text.trim() === "" ? [false, null] : [true, json.read()];
  } };
}

function enumField(name, sub, required, id) {
  const select = h("select", { id, name },
    required ? null : h("option", { value: "" }, "—"),
    sub.enum.map((option, index) => h("option", { value: String(index),
      selected: JSON.stringify(option) === JSON.stringify(sub.default) }, JSON.stringify(option))));
  return { name, element: h("div", { class: "field" }, labelFor(id, name, sub, required), select),
    read: () => (select.value === "" ? [false, null] : [true, sub.enum[Number(select.value)]]) };
}

function jsonField(schema, prefix, name = "payload", required = false) {
  const id = fieldId(prefix, name);
  const initial = schema && "default" in schema ? JSON.stringify(schema.default, null, 2)
    : (schema && schema.type === "object" ? "{}" : "");
  const area = h("textarea", { id, name, rows: 4, spellcheck: "false", class: "mono" });
  area.value = initial;
  return {
    element: h("div", { class: "field" }, labelFor(id, `${name} (JSON)`, schema || {}, required), area),
    text: () => area.value,
    read() {
      if (area.value.trim() === "") return null;
      try {
        return JSON.parse(area.value);
      } catch (error) {
        throw new SyntaxError(`${name}: not valid JSON (${error.message})`);
      }
    },
  };
}
