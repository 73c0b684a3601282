// The run page's Family card (issue 53 item 6): the runs this run started from (left), the
// run (middle), the runs that started from it (right), the evaluations of its checkpoints
// (below); each node links to its run page, each edge says the checkpoint's step and the
// share of the weights it explains ("step 8 · 100%"). Plain DOM: a handful of nodes needs no
// graph layout, and text stays selectable. One request when the run page opens
// (GET /runs/{id}/family), none on the runs table.
import { api } from "./api.js";
import { $, fmt, h } from "./util.js";

let shownFor = null;

// "step 8 · 100%": where an edge forks (its checkpoint's step) and how much of the child's
// weights that checkpoint holds
export function edgeLabel(entry) {
  const step = entry.step === null || entry.step === undefined ? "step ?" : `step ${entry.step}`;
  const match = Math.round((entry.match || 0) * 1000) / 10;
  return `${step} · ${match}%`;
}

function metricText(metric) {
  const [name] = Object.keys(metric || {});
  return name === undefined ? "" : `${name} ${fmt(metric[name])}`;
}

function node(entry, role) {
  const id = entry.run_id;
  const name = id ?? (entry.checkpoint || "").split("/").pop();
  const title = `${id ? `run ${id}` : "a file outside the base"}\n${entry.checkpoint || ""}`.trim();
  const label = id
    ? h("a", { class: "family-run", href: `#/run/${id}`, text: name, title })
    : h("span", { class: "family-run family-file", text: name, title });
  const metric = metricText(entry.metric);
  return h("div", { class: `family-node ${role}`, dataset: { run: id ?? "", role } },
    label, metric ? h("span", { class: "family-metric", text: metric }) : null);
}

// one entry: its node and the edge to (an ancestor) or from (a descendant, an evaluation) the
// run it is linked to, labelled with the checkpoint's step and the match
function linked(entry, role) {
  const via = role === "ancestor" ? entry.child_id : entry.parent_id;
  const edge = h("span", {
    class: "family-edge",
    text: edgeLabel(entry),
    title: `${entry.checkpoint || ""}${via && via !== shownFor ? `\n(via ${via})` : ""}`,
  });
  const arrow = h("span", { class: "family-arrow", text: role === "evaluation" ? "↓" : "→" });
  const parts = role === "ancestor" ? [node(entry, role), edge, arrow] : [arrow, edge, node(entry, role)];
  return h("div", { class: `family-link ${role}`, dataset: { depth: entry.depth ?? 1 } }, ...parts);
}

function column(entries, role) {
  // the farthest generation outermost: an ancestor's ancestor left of it
  const depths = [...new Set(entries.map((e) => e.depth || 1))].sort((a, b) => a - b);
  if (role === "ancestor") depths.reverse();
  return depths.map((d) => h("div", { class: `family-col ${role}s`, dataset: { depth: d } },
    ...entries.filter((e) => (e.depth || 1) === d).map((e) => linked(e, role))));
}

export function familyView(found) {
  const self = h("div", { class: "family-col self" },
    node({ run_id: found.run_id, metric: found.metric, checkpoint: "" }, "self"));
  const row = h("div", { class: "family-row" },
    ...column(found.ancestors || [], "ancestor"), self, ...column(found.descendants || [], "descendant"));
  const evals = (found.evaluations || []).map((e) => linked({ ...e, depth: 1 }, "evaluation"));
  return [row, evals.length ? h("div", { class: "family-evals" },
    h("span", { class: "muted", text: "Evaluations of its checkpoints" }), ...evals) : null];
}

// Fetch and draw the family of run `id`; the card stays hidden for a run with none (and on
// an error: the rest of the page is what was asked for).
export async function showFamily(id) {
  const card = $("#run-family");
  shownFor = id;
  card.dataset.loaded = "";
  let found;
  try {
    found = await api.family(id);
  } catch {
    found = null;
  }
  if (shownFor !== id) return;  // another run's page opened meanwhile
  const empty = !found || !(found.ancestors.length + found.descendants.length + found.evaluations.length);
  card.hidden = empty;
  $("#run-family-graph").replaceChildren(...(empty ? [] : familyView(found)));
  card.dataset.loaded = id;
}
