// The console's entry point: checks whether the server wants a token, then shows the page the
// URL names and swaps pages as the hash changes.

import { api, whenUnauthenticated } from "./api.js";
import { forgetToken, token } from "./token.js";
import { currentRoute } from "./router.js";
import { h, replace, errorBox } from "./dom.js";
import { renderSignIn } from "./pages/signin.js";
import { renderExecutions } from "./pages/executions.js";
import { renderExecution } from "./pages/execution.js";
import { renderWorkers } from "./pages/workers.js";
import { renderTasks } from "./pages/tasks.js";
import { renderSchedules } from "./pages/schedules.js";
import { renderDefinitions } from "./pages/definitions.js";
import { renderServers } from "./pages/servers.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const signOut = document.getElementById("sign-out");
let leave = null; // what stops the current page (its poller)
let signedIn = false;

const PAGES = {
  executions: (route) => (route.parts.length > 1 ? renderExecution : renderExecutions),
  workers: () => renderWorkers,
  tasks: () => renderTasks,
  schedules: () => renderSchedules,
  definitions: () => renderDefinitions,
  servers: () => renderServers,
};

function show() {
  if (leave) leave();
  leave = null;
  if (!signedIn) return;
  const route = currentRoute();
  const section = route.parts[0] || "executions";
  for (const link of nav.querySelectorAll("a")) {
    if (link.dataset.section === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const page = PAGES[section];
  if (!page) {
    document.title = "Not found · Orbit";
    replace(main, h("h1", {}, "Not found"),
      errorBox({ code: "NOT_FOUND", message: `there is no page ${location.hash}` }));
    return;
  }
  leave = page(route)(main, route) || null;
}

function enter() {
  signedIn = true;
  nav.hidden = false;
  signOut.hidden = !token();
  show();
}

function askForToken(reason) {
  signedIn = false;
  if (leave) leave();
  leave = null;
  nav.hidden = true;
  signOut.hidden = true;
  document.title = "Sign in · Orbit";
  renderSignIn(main, reason, enter);
}

async function boot() {
  whenUnauthenticated((error) => askForToken(error));
  window.addEventListener("hashchange", () => {
    show();
    main.focus({ preventScroll: true });
  });
  document.getElementById("skip").addEventListener("click", (event) => {
    event.preventDefault(); // "#main" is not a route: move the focus instead of the hash
    main.focus();
  });
  signOut.addEventListener("click", () => {
    forgetToken();
    askForToken(null);
  });
  try {
    await api("GET", "/v1/definitions");
    enter();
  } catch (error) {
    if (error.status === 401) return; // the sign-in page is already shown
    signedIn = true;
    nav.hidden = false;
    replace(main, h("h1", {}, "Orbit"), errorBox(error));
  }
}

boot();
