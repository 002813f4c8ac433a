// The sign-in page: the only page shown until the server accepts the admin token.

import { api } from "../api.js";
import { keepToken } from "../token.js";
import { h, replace, errorBox } from "../dom.js";

/** Ask for the admin token; `done()` once the server accepted it. */
export function renderSignIn(main, reason, done) {
  const input = h("input", { id: "token", name: "token", type: "password", required: true,
    autocomplete: "current-password", spellcheck: "false" });
  const remember = h("input", { id: "remember", type: "checkbox" });
  const problem = h("div", { "aria-live": "polite" });
  async function submit(event) {
    event.preventDefault();
    replace(problem);
    const value = input.value.trim();
    try {
      await api("GET", "/v1/definitions", { bearer: value });
      keepToken(value, remember.checked);
      done();
    } catch (error) {
      const message = error.status === 401 ? "the server refused this token" : error.message;
      replace(problem, errorBox({ code: error.code, message }));
      input.focus();
    }
  }
  replace(main,
    h("section", { class: "signin" },
      h("h1", {}, "Sign in"),
      h("p", {}, "This Orbit server needs its admin token (the server's ",
        h("code", {}, "--admin-token"), ")."),
      reason && reason.status === 401 && reason.message ? h("p", { class: "muted" }, reason.message) : null,
      h("form", { onsubmit: submit },
        h("label", { for: "token" }, "Admin token"), input,
        h("div", { class: "check" }, remember,
          h("label", { for: "remember" }, "Remember on this device")),
        h("button", { type: "submit" }, "Sign in")),
      problem));
  input.focus();
}
