// Where the admin token is kept: this tab's sessionStorage, or localStorage when the person asked
// to be remembered on this device.

const KEY = "orbit.adminToken";

/** The token to send, or "" when none was given. */
export function token() {
  return sessionStorage.getItem(KEY) || localStorage.getItem(KEY) || "";
}

/** Keep `value` for this tab, or on this device with `remember`. */
export function keepToken(value, remember) {
  forgetToken();
  (remember ? localStorage : sessionStorage).setItem(KEY, value);
}

/** Forget the token everywhere. */
export function forgetToken() {
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
}
