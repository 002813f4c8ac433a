// The workflow language's schema subset, checked as the server checks a signal payload
// (orbit_actors/ir/schema.py, lenient: undeclared properties are accepted unless
// additionalProperties is false), with the server's wording: "$.by: expected string, got integer".

export class SchemaViolation extends Error {}

/** The JSON type name of a value, as the server's messages use it. */
export function jsonType(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value; // boolean, string, object
}

/** `value` with defaults filled in; throws SchemaViolation naming the path. */
export function validate(schema, value, path = "$") {
  if (!schema) return value;
  checkType(schema, value, path);
  checkConstants(schema, value, path);
  const type = jsonType(value);
  if (type === "object") return checkObject(schema, value, path);
  if (type === "array") return checkArray(schema, value, path);
  if (type === "string") checkString(schema, value, path);
  if (type === "integer" || type === "number") checkNumber(schema, value, path);
  return value;
}

function typesOf(schema) {
  if (schema.type === undefined || schema.type === null) return [];
  return Array.isArray(schema.type) ? schema.type : [schema.type];
}

function checkType(schema, value, path) {
  const types = typesOf(schema);
  if (!types.length) return;
  const actual = jsonType(value);
  if (types.includes(actual)) return;
  if (actual === "integer" && types.includes("number")) return;
  throw new SchemaViolation(`${path}: expected ${types.join(" or ")}, got ${actual}`);
}

function same(left, right) {
  return JSON.stringify(left) === JSON.stringify(right);
}

function checkConstants(schema, value, path) {
  if (schema.enum && !schema.enum.some((option) => same(value, option))) {
    const allowed = schema.enum.map((option) => JSON.stringify(option)).join(", ");
    throw new SchemaViolation(`${path}: ${JSON.stringify(value)} is not one of ${allowed}`);
  }
  if ("const" in schema && !same(value, schema.const)) {
    throw new SchemaViolation(`${path}: must be ${JSON.stringify(schema.const)}`);
  }
}

function join(path, key) {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${path}.${key}` : `${path}['${key}']`;
}

function checkObject(schema, value, path) {
  const properties = schema.properties || {};
  const result = { ...value };
  for (const [name, sub] of Object.entries(properties)) {
    if (!(name in result) && "default" in sub) result[name] = sub.default;
  }
  for (const name of schema.required || []) {
    if (!(name in result)) throw new SchemaViolation(`${join(path, name)}: is required`);
  }
  for (const [name, item] of Object.entries(result)) {
    if (name in properties) result[name] = validate(properties[name], item, join(path, name));
    else if (schema.additionalProperties === false) {
      throw new SchemaViolation(`${join(path, name)}: is not a declared property`);
    }
  }
  return result;
}

function checkArray(schema, value, path) {
  if (schema.minItems !== undefined && value.length < schema.minItems) {
    throw new SchemaViolation(`${path}: must have at least ${schema.minItems} items`);
  }
  if (schema.maxItems !== undefined && value.length > schema.maxItems) {
    throw new SchemaViolation(`${path}: must have at most ${schema.maxItems} items`);
  }
  return schema.items ? value.map((item, i) => validate(schema.items, item, `${path}[${i}]`)) : value;
}

function checkString(schema, value, path) {
  const length = [...value].length;
  if (schema.minLength !== undefined && length < schema.minLength) {
    throw new SchemaViolation(`${path}: must be at least ${schema.minLength} characters long`);
  }
  if (schema.maxLength !== undefined && length > schema.maxLength) {
    throw new SchemaViolation(`${path}: must be at most ${schema.maxLength} characters long`);
  }
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) {
    throw new SchemaViolation(`${path}: does not match the pattern '${schema.pattern}'`);
  }
}

function checkNumber(schema, value, path) {
  if (schema.minimum !== undefined && value < schema.minimum) {
    throw new SchemaViolation(`${path}: must be at least ${schema.minimum}`);
  }
  if (schema.maximum !== undefined && value > schema.maximum) {
    throw new SchemaViolation(`${path}: must be at most ${schema.maximum}`);
  }
}
