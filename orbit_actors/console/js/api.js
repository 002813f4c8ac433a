// The public HTTP API, with the admin token as the bearer token. Every failure becomes an
// ApiError carrying the API's own {code, message}, so pages can show what the server said.

import { token, forgetToken } from "./token.js";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Listeners told when the API refuses the token (401): the app shows the sign-in page. */
const onUnauthenticated = new Set();
export function whenUnauthenticated(listener) {
  onUnauthenticated.add(listener);
}

/** Call the API: `api("GET", "/v1/executions", {query: {status: "running"}})`; `body` is sent
 * as JSON, `yaml` as YAML text. */
export async function api(method, path, { query, body, yaml, signal, bearer = token() } = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== null && value !== undefined && value !== "") url.searchParams.set(name, value);
  }
  const headers = { Accept: "application/json" };
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (yaml !== undefined) headers["Content-Type"] = "application/yaml";
  const sent = yaml !== undefined ? yaml : (body === undefined ? undefined : JSON.stringify(body));
  let response;
  try {
    response = await fetch(url, { method, headers, signal, body: sent });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "UNREACHABLE", `the server did not answer (${error.message})`);
  }
  return answerOf(response, bearer);
}

async function answerOf(response, bearer) {
  if (response.status === 204) return null;
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (response.ok) return parsed;
  const error = parsed && parsed.error ? parsed.error : {};
  const failure = new ApiError(response.status, error.code || `HTTP_${response.status}`,
    error.message || `the server answered ${response.status} ${response.statusText}`);
  if (response.status === 401 && bearer === token()) {
    forgetToken();
    for (const listener of onUnauthenticated) listener(failure);
  }
  throw failure;
}

/** A path segment, escaped. */
export function segment(value) {
  return encodeURIComponent(value);
}
