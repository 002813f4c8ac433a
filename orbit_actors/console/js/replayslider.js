// The timeline slider of an execution's page: drag it to any event of the run and the step
// graph is redrawn as it stood right after that event (from the replay endpoint's state), with
// a line saying which event it is and what the decider decided next. At the last event the
// graph follows the execution live again.

import { api, segment } from "./api.js";
import { h, replace } from "./dom.js";
import { stepStates } from "./steps.js";
import { stepGraph } from "./graph.js";

/** The slider for the shown run; `view.at` is the event shown (null: live). */
export function replaySlider(view, parts, history, detail) {
  const last = history.events.length;
  if (last < 2) return null;
  const shown = view.at ?? last;
  const input = h("input", { type: "range", id: "at-slider", min: "1", max: String(last), step: "1",
    value: String(shown), "aria-describedby": "at-said" });
  const said = h("p", { id: "at-said", class: "muted small", "aria-live": "polite" },
    view.at === null ? `event ${last} of ${last} (now)` : `event ${shown} of ${last}`);
  let asked = 0;
  input.addEventListener("input", async () => {
    const at = Number(input.value);
    view.at = at === last ? null : at;
    if (view.at === null) {
      view.shown.steps = null; // redraw the live graph on the next refresh
      replace(said, `event ${last} of ${last} (now)`);
      view.refresh();
      return;
    }
    const mine = ++asked;
    const answer = await api("GET", `/v1/executions/${segment(view.id)}/replay`, { query: { at, run: view.run } });
    if (mine !== asked) return; // a later move answered first
    const units = Object.entries(answer.state.units).map(([key, unit]) => ({ key, ...unit }));
    const states = stepStates(view.ir, { units, children: detail.children }, history.events.slice(0, at));
    replace(parts.graph, stepGraph(view.ir, states, () => {}));
    replace(said, describe(answer));
  });
  return h("div", { class: "field replay" }, h("label", { for: "at-slider" }, "Show the steps after event"), input, said);
}

function describe(answer) {
  const decided = answer.decided.map((event) => event.step ? `${event.type} ${event.step}` : event.type);
  return `event ${answer.at} of ${answer.last_seq}: ${answer.event.type}${answer.event.step ? ` ${answer.event.step}` : ""}` +
    (decided.length ? ` — then decided: ${decided.join(", ")}` : "");
}
