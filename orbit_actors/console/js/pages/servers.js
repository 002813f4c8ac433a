// Servers: those sharing this store (GET /v1/servers). A server without that endpoint answers
// 404; then this page shows the one server it knows, from what every server answers.

import { api } from "../api.js";
import { h, replace, errorBox, facts, table } from "../dom.js";
import { when, ago, count } from "../format.js";
import { Poller } from "../live.js";

async function thisServer(signal) {
  const ready = await fetch("/readyz", { signal }).then((r) => r.json()).catch(() => ({ status: "unreachable" }));
  const document_ = await api("GET", "/v1/openapi.json", { signal }).catch(() => null);
  return facts([["Address", location.origin], ["Readiness", ready.status],
    ["Version", document_ ? document_.info.version : null]]);
}

export function renderServers(main) {
  document.title = "Servers · Orbit";
  const body = h("div", {});
  replace(main, h("h1", {}, "Servers"), body);
  let shown = "";
  const poller = new Poller().start(async (signal) => {
    try {
      const answer = await api("GET", "/v1/servers", { signal });
      const text = JSON.stringify(answer);
      if (text === shown) return true;
      shown = text;
      replace(body, table("Servers sharing this store", ["Server", "Address", "State", "Started", "Last seen", "Executions"],
        answer.servers.map((server) => [h("span", { class: "mono" }, server.server_id), server.address,
          server.online ? "online" : "offline", when(server.started_at_ms), ago(server.last_seen_ms),
          count(server.executions)])));
      return true;
    } catch (error) {
      if (error.name === "AbortError") throw error;
      if (error.status !== 404) {
        replace(body, errorBox(error));
        return true;
      }
      replace(body, h("p", { class: "muted" }, "This server does not list the servers sharing its store (",
        h("code", {}, "GET /v1/servers"), " answered 404). The server this console talks to:"),
        await thisServer(signal));
      return false;
    }
  });
  return () => poller.stop();
}
