// An execution's steps as a graph, drawn in SVG: one box per step, in layers by the `after`
// dependencies (the definition's order within a layer), edges from each dependency; handlers in
// a last row with dashed boxes. Each box says the step's status and fan-out progress, and is a
// button that opens the step's units.

import { s } from "./dom.js";
import { stepKind, handlersOf, statusClass } from "./steps.js";

const W = 220;
const H = 78;
const GAP_X = 24;
const GAP_Y = 40;
const PAD = 8;

/** Layers: step id → depth, the longest chain of `after` above it. */
function depths(steps) {
  const depth = new Map();
  for (const step of steps) {
    const parents = (step.after || []).filter((id) => depth.has(id));
    depth.set(step.id, parents.length ? 1 + Math.max(...parents.map((id) => depth.get(id))) : 0);
  }
  return depth;
}

/** Place boxes: id → {x, y}; returns the positions and the drawing's size. */
function layout(ir) {
  const depth = depths(ir.steps);
  const columns = [];
  const at = new Map();
  for (const step of ir.steps) {
    const row = depth.get(step.id);
    columns[row] = (columns[row] || 0) + 1;
    at.set(step.id, { x: PAD + (columns[row] - 1) * (W + GAP_X), y: PAD + row * (H + GAP_Y) });
  }
  let rows = columns.length;
  const handlers = handlersOf(ir);
  handlers.forEach(([, handler], index) => {
    at.set(handler.id, { x: PAD + index * (W + GAP_X), y: PAD + rows * (H + GAP_Y) });
  });
  if (handlers.length) rows += 1;
  const widest = Math.max(1, ...columns, handlers.length);
  return { at, width: 2 * PAD + GAP_X + widest * W + (widest - 1) * GAP_X, height: 2 * PAD + rows * H + (rows - 1) * GAP_Y };
}

function progress(state) {
  if (!state.fanOut) return "";
  if (state.total === null) return "fan-out not started";
  return `${state.succeeded}/${state.total} succeeded`;
}

function box(step, state, where, handlerOf, onOpen) {
  const lines = [stepKind(step), [state.status, progress(state)].filter(Boolean).join(" · ")];
  if (state.compensation) lines.push(`compensation ${state.compensation}`);
  if (handlerOf) lines.push(handlerOf.replace("_", " "));
  const label = `${step.id}: ${lines.join(", ")}`;
  const open = () => onOpen(step.id);
  const group = s("g", { class: `node ${statusClass(state.status)}${handlerOf ? " handler" : ""}`,
    transform: `translate(${where.x},${where.y})`, tabindex: "0", role: "button",
    "aria-label": label, "data-step": step.id,
    onclick: open, onkeydown: (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(); }
    } },
  s("title", {}, label),
  s("rect", { width: W, height: H, rx: 6 }),
  s("text", { x: 10, y: 20, class: "node-id" }, step.id),
  lines.map((line, index) => s("text", { x: 10, y: 38 + index * 15, class: "node-line" }, clip(line))));
  if (state.fanOut && state.total) {
    group.append(s("rect", { x: 0, y: H - 5, width: W, height: 5, class: "track" }),
      s("rect", { x: 0, y: H - 5, width: (W * state.succeeded) / state.total, height: 5, class: "done" }));
  }
  return group;
}

function clip(text) {
  return text.length > 32 ? `${text.slice(0, 31)}…` : text;
}

function edge(from, to, dashed) {
  const x1 = from.x + W / 2;
  const y1 = from.y + H;
  const x2 = to.x + W / 2;
  const y2 = to.y;
  const mid = (y1 + y2) / 2;
  if (x1 === x2 && y2 - y1 > GAP_Y + 1) {
    // it skips a layer: bend out to the right, past the boxes in between
    const side = x1 + W / 2 + GAP_X / 2;
    return s("path", { class: "edge", "marker-end": "url(#arrow)",
      d: `M${from.x + W},${from.y + H / 2} C${side},${from.y + H / 2} ${side},${to.y + H / 2} ${to.x + W + 2},${to.y + H / 2}` });
  }
  return s("path", { class: dashed ? "edge dashed" : "edge", "marker-end": "url(#arrow)",
    d: `M${x1},${y1} C${x1},${mid} ${x2},${mid} ${x2},${y2 - 2}` });
}

/** The graph of `ir` coloured by `states` (from stepStates); `onOpen(stepId)` on a click. */
export function stepGraph(ir, states, onOpen) {
  const { at, width, height } = layout(ir);
  const edges = [];
  for (const step of ir.steps) {
    for (const parent of step.after || []) {
      if (at.has(parent)) edges.push(edge(at.get(parent), at.get(step.id), false));
    }
  }
  const handlerOf = new Map(handlersOf(ir).map(([when, handler]) => [handler.id, when]));
  const boxes = [...ir.steps, ...handlersOf(ir).map(([, handler]) => handler)].map((step) =>
    box(step, states.get(step.id), at.get(step.id), handlerOf.get(step.id), onOpen));
  return s("svg", { class: "graph", width, height, viewBox: `0 0 ${width} ${height}`,
    role: "group", "aria-label": "Steps of this execution" },
  s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
  s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }))),
  edges, boxes);
}
