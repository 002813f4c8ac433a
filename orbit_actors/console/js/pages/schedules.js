// Schedules: each one's cron in its time zone, next occurrences shown in that zone, the
// executions it started last; pause, resume and trigger.

import { api, segment } from "../api.js";
import { h, replace, errorBox, executionLink } from "../dom.js";
import { when } from "../format.js";
import { Poller } from "../live.js";

function act(schedule, verb, done, area) {
  return h("button", { type: "button", onclick: async () => {
    replace(area);
    try {
      const answer = await api("POST", `/v1/schedules/${segment(schedule.schedule_id)}/${verb}`);
      replace(area, h("span", { role: "status", class: "ok" },
        verb === "trigger" ? ["Started ", executionLink(answer.execution_id)] : `${verb}d`));
      done();
    } catch (error) {
      replace(area, errorBox(error));
    }
  } }, verb[0].toUpperCase() + verb.slice(1));
}

function scheduleCard(schedule, done) {
  const area = h("div", { "aria-live": "polite" });
  return h("article", { class: "card", "data-schedule": schedule.schedule_id },
    h("h2", { class: "mono" }, schedule.schedule_id, " ",
      h("span", { class: `badge ${schedule.paused ? "status-paused" : "status-online"}` }, schedule.paused ? "paused" : "active")),
    h("dl", { class: "facts" },
      h("dt", {}, "Cron"), h("dd", { class: "mono" }, `${schedule.cron} (${schedule.timezone})`),
      h("dt", {}, "Workflow"), h("dd", {}, `${schedule.workflow}${schedule.version ? `@${schedule.version}` : " (latest)"}`),
      h("dt", {}, "Overlap"), h("dd", {}, schedule.overlap),
      schedule.last_error ? [h("dt", {}, "Last error"), h("dd", {}, schedule.last_error)] : null),
    h("h3", {}, `Next occurrences (${schedule.timezone})`),
    schedule.next_occurrences_ms.length
      ? h("ol", { class: "small" }, schedule.next_occurrences_ms.map((ms) => h("li", {}, when(ms, schedule.timezone))))
      : h("p", { class: "muted" }, schedule.paused ? "none while paused" : "none"),
    h("h3", {}, "Last executions"),
    schedule.last_execution_ids.length
      ? h("ul", { class: "small" }, schedule.last_execution_ids.map((id) => h("li", {}, executionLink(id))))
      : h("p", { class: "muted" }, "none yet"),
    h("div", { class: "inline" }, schedule.paused ? act(schedule, "resume", done, area) : act(schedule, "pause", done, area),
      act(schedule, "trigger", done, area)),
    area);
}

export function renderSchedules(main) {
  document.title = "Schedules · Orbit";
  const list = h("div", { class: "cards" });
  const problem = h("div", { "aria-live": "polite" });
  replace(main, h("h1", {}, "Schedules"), problem, list);
  let shown = "";
  const load = async (signal) => {
    try {
      const answer = await api("GET", "/v1/schedules", { signal });
      const text = JSON.stringify(answer);
      if (text !== shown) {
        shown = text;
        replace(list, answer.schedules.length ? answer.schedules.map((schedule) => scheduleCard(schedule, () => load()))
          : h("p", { class: "muted" }, "No schedules. Create one with ", h("code", {}, "orbit schedule create"), "."));
      }
      replace(problem);
    } catch (error) {
      if (error.name === "AbortError") throw error;
      replace(problem, errorBox(error));
    }
  };
  const poller = new Poller().start(load);
  return () => poller.stop();
}
