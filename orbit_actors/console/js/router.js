// Client-side routes in the URL hash (#/executions/abc?run=2), so every page has a URL that can
// be shared and reloaded without the server knowing about pages.

/** The current route: its path segments and query parameters. */
export function currentRoute() {
  const hash = location.hash.replace(/^#/, "") || "/executions";
  const [path, search = ""] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(search) };
}

/** The hash URL of a path and parameters (empty values are left out). */
export function href(path, params = {}) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") query.set(name, value);
  }
  const text = query.toString();
  return `#${path}${text ? `?${text}` : ""}`;
}

/** Go to a route (adds a history entry, like following a link). */
export function navigate(path, params) {
  location.hash = href(path, params);
}

/** Change the current URL's parameters without a history entry or a new page. */
export function replaceParams(path, params) {
  history.replaceState(null, "", href(path, params));
}
