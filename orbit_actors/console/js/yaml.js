// JSON values written as YAML, for reading a definition's IR: block style, keys in order,
// strings quoted only when YAML would read them as something else.

const PLAIN = /^[A-Za-z_./][A-Za-z0-9_ ./@-]*$/;
const RESERVED = /^(true|false|null|yes|no|on|off|~|-?\d[\d_.eE+-]*)$/i;

function scalar(value) {
  if (value === null) return "null";
  if (typeof value !== "string") return String(value);
  if (PLAIN.test(value) && !RESERVED.test(value) && !value.endsWith(" ")) return value;
  return JSON.stringify(value);
}

function isEmpty(value) {
  return (Array.isArray(value) && !value.length) || (value && typeof value === "object" && !Object.keys(value).length);
}

/** The YAML text of `value`. */
export function toYaml(value, indent = "") {
  if (Array.isArray(value)) {
    if (!value.length) return "[]";
    return value.map((item) => {
      const inner = toYaml(item, `${indent}  `);
      return `${indent}- ${typeof item === "object" && item !== null && !isEmpty(item) ? inner.trimStart() : inner}`;
    }).join("\n");
  }
  if (value && typeof value === "object") {
    if (!Object.keys(value).length) return "{}";
    return Object.entries(value).map(([key, item]) => {
      const name = `${indent}${scalar(key)}:`;
      if (item && typeof item === "object" && !isEmpty(item)) return `${name}\n${toYaml(item, `${indent}  `)}`;
      return `${name} ${toYaml(item, `${indent}  `)}`;
    }).join("\n");
  }
  return scalar(value);
}
