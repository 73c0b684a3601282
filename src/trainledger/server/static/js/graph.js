// A run's computational graph: cytoscape.js with the dagre layered layout, one box per module
// scope (click a closed module to open it, an open one's title to close it; click an operator
// for its details in the side panel), tensor shapes on edges. The server already collapsed huge
// graphs to module level and marked bookkeeping nodes (graph_view.py: UpdateState, Depend, Load,
// MakeTuple, TupleGetItem, the optimizer's ops, summaries), which stay hidden until their toggle
// is on; edges through a hidden node that forwards a value are drawn past it. The view opens the
// network's scope first, then others level by level while about INITIAL_NODES elements show.
// Labels never draw under MIN_LABEL_PX on screen: a graph too large to fit at that size is
// shown at it, from its top, and panned (drag) or zoomed (wheel) instead of shrunk; "Fit" shows
// it whole, its small labels left out. cytoscape is fetched on first open.
import { api } from "./api.js";
import { shapeText, showDetails } from "./graph_details.js";
import { $, loadScript } from "./util.js";

const SCRIPTS = ["/static/vendor/cytoscape-3.34.4/cytoscape.min.js",
  "/static/vendor/cytoscape-dagre-4.0.1/cytoscape-dagre.min.js"];
const INITIAL_NODES = 30; // elements shown when the view opens (scopes opened level by level)
const SMALL_GRAPH = 60; // up to this many nodes, parameters and constants show from the start
const MAX_FIT_ZOOM = 1.3; // "fit" never enlarges past this
const MIN_LABEL_PX = 10; // no label is drawn smaller on screen
const FONT = { node: 12, param: 11, edge: 10 }; // label sizes at zoom 1
const READABLE_ZOOM = MIN_LABEL_PX / Math.min(...Object.values(FONT));
const OP_CLASSES = { Parameter: "param", Buffer: "param", Const: "param", "IO Node": "io", Module: "module" };
const PARAM_OPS = new Set(["Parameter", "Buffer", "Const"]);

let runId = null;
let model = null;
let expanded = new Set();
let cy = null;
let showParams = true;
let showBookkeeping = false;

const hiddenNode = (n) => (!showParams && PARAM_OPS.has(n.op)) || (!showBookkeeping && n.bookkeeping);

// The nodes drawn: all, less parameters/constants (MindSpore lists every weight, moment and
// constant at the top level, which buries the operators) and bookkeeping ops, each on a toggle.
function drawnNodes() {
  return model.nodes.filter((n) => !hiddenNode(n));
}

async function libraries() {
  await loadScript(SCRIPTS[0]);
  await loadScript(SCRIPTS[1]);
  if (!window.cytoscape.__dagre) {
    window.cytoscape.use(window.cytoscapeDagre);
    window.cytoscape.__dagre = true;
  }
}

function ancestors(scope) {
  const parts = scope ? scope.split("/") : [];
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}

// What stands for each node with the current open scopes: itself, or its outermost closed scope.
function representative(node) {
  const closed = ancestors(node.scope).find((s) => !expanded.has(s));
  return closed === undefined ? `n:${node.id}` : `s:${closed}`;
}

function scopeElement(id, open) {
  const scope = model.scopes.get(id);
  const parent = scope.parent ? `s:${scope.parent}` : undefined;
  const label = open ? `− ${scope.label}` : `+ ${scope.label} (${scope.count})`;
  return { group: "nodes", data: { id: `s:${id}`, scope: id, parent, label }, classes: open ? "open" : "closed" };
}

// The drawn nodes an edge from ``id`` really comes from: itself, or (a hidden bookkeeping node)
// the sources of the values it forwards; nothing for a hidden node that forwards nothing.
function sourcesOf(id, memo) {
  const node = model.byId.get(id);
  if (!node || !node.bookkeeping || showBookkeeping) return [id];
  if (!memo.has(id)) {
    memo.set(id, []); // a cycle forwards nothing
    memo.set(id, [...new Set(node.through.flatMap((s) => sourcesOf(s, memo)))]);
  }
  return memo.get(id);
}

function edgeElements(reps) {
  const edges = new Map();
  const memo = new Map();
  for (const edge of model.edges) {
    const target = reps.get(edge.target);
    for (const from of sourcesOf(edge.source, memo)) {
      const source = reps.get(from);
      const key = `${source}->${target}`;
      if (!source || !target || source === target || edges.has(key)) continue;
      edges.set(key, { group: "edges", classes: edge.control ? "control" : "",
        data: { id: `e:${key}`, source, target, label: shapeText(edge.shape) } });
    }
  }
  return [...edges.values()];
}

function elements() {
  const out = new Map();
  const addChain = (scope) => {
    for (const s of ancestors(scope)) if (!out.has(`s:${s}`)) out.set(`s:${s}`, scopeElement(s, true));
  };
  const reps = new Map();
  for (const node of drawnNodes()) {
    const rep = representative(node);
    reps.set(node.id, rep);
    if (out.has(rep)) continue;
    if (rep.startsWith("s:")) {
      const scope = rep.slice(2);
      addChain(model.scopes.get(scope).parent);
      out.set(rep, scopeElement(scope, false));
    } else {
      addChain(node.scope);
      const label = node.op === "Module" ? `${node.label} (${node.count})` : node.label;
      out.set(rep, { group: "nodes", classes: OP_CLASSES[node.op] || "op",
        data: { id: rep, node: node.id, label, op: node.op, shape: shapeText(node.shape),
                parent: node.scope ? `s:${node.scope}` : undefined } });
    }
  }
  return [...out.values(), ...edgeElements(reps)];
}

function visibleCount() {
  return new Set(drawnNodes().map(representative)).size;
}

// The network's scope: MindSpore's ``network-<Class>`` (TrainOneStepCell.network), outside the
// gradients; else the top-level scope holding the most drawn operators (torch's ``Net``).
function networkScope() {
  const scopes = [...model.scopes.keys()].filter((s) => !s.startsWith("Gradients"));
  const named = scopes.filter((s) => /^network(-|$)/.test(s.split("/").pop()));
  if (named.length) return named.sort((a, b) => a.split("/").length - b.split("/").length)[0];
  const counts = new Map();
  for (const node of drawnNodes()) {
    const top = node.scope.split("/")[0];
    if (top && !PARAM_OPS.has(node.op)) counts.set(top, (counts.get(top) || 0) + 1);
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
}

// The network's scope opened, then scopes level by level (the network's first) while the view
// stays small enough to read.
function initialExpansion() {
  const net = networkScope();
  model.network = net;
  expanded = new Set(net === null ? [] : ancestors(net));
  const outside = (s) => (net !== null && (s === net || s.startsWith(`${net}/`)) ? 0 : 1);
  const depth = (s) => s.split("/").length;
  const order = [...model.scopes.keys()].sort((a, b) => outside(a) - outside(b) || depth(a) - depth(b));
  for (const scope of order) {
    const parent = model.scopes.get(scope).parent;
    if (expanded.has(scope) || (parent && !expanded.has(parent))) continue;
    expanded.add(scope);
    if (visibleCount() > INITIAL_NODES) expanded.delete(scope);
  }
}

const STYLE = [
  { selector: "node", style: {
    label: "data(label)", "font-size": FONT.node, "min-zoomed-font-size": MIN_LABEL_PX,
    "text-valign": "center", "text-halign": "center",
    shape: "round-rectangle", width: (n) => Math.max(40, 7.4 * n.data("label").length + 16),
    height: 26, "background-color": "#e8eefc", "border-width": 1, "border-color": "#3563e9", color: "#1d2433" } },
  { selector: "node.param", style: { "background-color": "#f1f2f5", "border-color": "#9aa1b1", "font-size": FONT.param, height: 22 } },
  { selector: "node.io", style: { shape: "ellipse", "background-color": "#fff4e5", "border-color": "#f76b15" } },
  { selector: "node.closed, node.module", style: {
    "background-color": "#3563e9", color: "#ffffff", "border-color": "#2447b3", "font-weight": "bold", height: 30 } },
  { selector: "node.open", style: {
    "background-color": "#f7f9ff", "background-opacity": 0.6, "border-color": "#b7c3e0", "border-style": "dashed",
    "text-valign": "top", "text-halign": "center", "font-weight": "bold", color: "#2447b3", padding: 12 } },
  { selector: "node.picked", style: { "border-width": 3, "border-color": "#f76b15" } },
  { selector: "edge", style: {
    width: 1.3, "line-color": "#8b93a7", "target-arrow-color": "#8b93a7", "target-arrow-shape": "triangle",
    "curve-style": "bezier", label: "data(label)", "font-size": FONT.edge, "min-zoomed-font-size": MIN_LABEL_PX,
    color: "#4a5266", "text-background-color": "#ffffff", "text-background-opacity": 0.85, "text-background-padding": 1 } },
  { selector: "edge.control", style: { "line-style": "dashed" } },
];

function closeDetails(section) {
  const panel = $(".graph-details", section);
  if (panel.hidden) return;
  panel.hidden = true;
  delete panel.dataset.node;
  cy.nodes(".picked").removeClass("picked");
  cy.resize();
}

function pick(section, element) {
  const panel = $(".graph-details", section);
  const wasHidden = panel.hidden;
  showDetails(panel, model, element.data("node"), () => closeDetails(section));
  cy.nodes(".picked").removeClass("picked");
  element.addClass("picked");
  if (wasHidden) cy.resize();
}

function render(section) {
  const box = $(".graph-canvas", section);
  if (!cy) {
    cy = window.cytoscape({ container: box, style: STYLE, wheelSensitivity: 0.3, minZoom: 0.05 });
    // On the core, not on nodes: a tap bubbles from a node to the modules around it, which
    // would close the module holding whatever was clicked.
    cy.on("tap", (event) => {
      const node = event.target;
      if (node === cy || !node.isNode()) return;
      if (node.hasClass("closed")) toggle(section, node.data("scope"), true);
      else if (node.hasClass("open")) toggle(section, node.data("scope"), false);
      else if (node.data("node") && model.byId.get(node.data("node")).op !== "Module") pick(section, node);
    });
  }
  const picked = $(".graph-details", section).dataset.node;
  cy.batch(() => {
    cy.elements().remove();
    cy.add(elements());
  });
  const layout = cy.layout({ name: "dagre", rankDir: "TB", nodeSep: 20, rankSep: 38, padding: 16, animate: false });
  layout.run();
  if (picked && cy.$id(`n:${picked}`).length) cy.$id(`n:${picked}`).addClass("picked");
  else closeDetails(section);
  readableView();
  section.dataset.visible = String(cy.nodes().length);
}

// The whole graph in view when its labels stay readable there; else at the readable zoom with
// the graph's top in view and the network's box (or the graph) centred when it fits across,
// else from its left edge.
function readableView() {
  fit();
  if (cy.zoom() >= READABLE_ZOOM) return;
  const net = model.network === null ? cy.collection() : cy.$id(`s:${model.network}`);
  const bb = (net.length ? net : cy.elements()).boundingBox();
  const z = READABLE_ZOOM;
  const x = bb.w * z + 32 <= cy.width() ? cy.width() / 2 - ((bb.x1 + bb.x2) / 2) * z : 16 - bb.x1 * z;
  cy.zoom(z);
  cy.pan({ x, y: 16 - cy.elements().boundingBox().y1 * z });
}

// The whole graph in view, but a few boxes not blown up past reading size.
function fit() {
  cy.fit(undefined, 16);
  if (cy.zoom() > MAX_FIT_ZOOM) {
    cy.zoom(MAX_FIT_ZOOM);
    cy.center();
  }
}

function toggle(section, scope, open) {
  if (open) expanded.add(scope);
  else for (const s of [...expanded]) if (s === scope || s.startsWith(`${scope}/`)) expanded.delete(s);
  render(section);
}

function note(graph) {
  const hidden = graph.nodes.filter((n) => n.bookkeeping).length;
  const parts = [`${graph.total_nodes} nodes, ${graph.edges.length} edges`];
  if (hidden && !showBookkeeping) parts.push(`${hidden} bookkeeping ops hidden`);
  if (graph.collapsed_depth !== null) {
    parts.push(`too large to show node by node: modules deeper than level ${graph.collapsed_depth} are single boxes`);
  }
  if (graph.truncated) parts.push(`only the first ${graph.nodes.length} top-level nodes`);
  return parts.join("; ");
}

async function load(section) {
  const canvas = $(".graph-canvas", section);
  const empty = $(".graph-empty", section);
  try {
    const graph = await api.graph(runId);
    await libraries();
    const again = model !== null && model.runId === runId; // a refresh: keep what is open
    model = { ...graph, runId, scopes: new Map(graph.scopes.map((s) => [s.id, s])),
              byId: new Map(graph.nodes.map((n) => [n.id, n])) };
    canvas.hidden = false;
    $(".graph-controls", section).hidden = false;
    empty.hidden = true;
    if (again) {
      expanded = new Set([...expanded].filter((s) => model.scopes.has(s)));
      model.network = networkScope();
    } else {
      showParams = graph.nodes.length <= SMALL_GRAPH;
      showBookkeeping = false;
      initialExpansion();
    }
    $(".graph-params", section).checked = showParams;
    $(".graph-bookkeeping", section).checked = showBookkeeping;
    $(".graph-info", section).textContent = note(graph);
    render(section);
  } catch (error) {
    canvas.hidden = true;
    $(".graph-controls", section).hidden = true;
    $(".graph-details", section).hidden = true;
    empty.hidden = false;
    empty.textContent = error.status === 404 ? "No computational graph in this run's summaries." : error.message;
  }
  section.dataset.loaded = runId;
  section.dataset.loads = String(Number(section.dataset.loads || 0) + 1);
}

export function initGraph() {
  const section = document.getElementById("run-graph");
  section.addEventListener("toggle", () => { if (section.open && runId) load(section); });
  $(".graph-expand", section).addEventListener("click", () => {
    expanded = new Set(model.scopes.keys());
    render(section);
  });
  $(".graph-collapse", section).addEventListener("click", () => {
    expanded = new Set();
    render(section);
  });
  $(".graph-params", section).addEventListener("change", (event) => {
    showParams = event.target.checked;
    render(section);
  });
  $(".graph-bookkeeping", section).addEventListener("change", (event) => {
    showBookkeeping = event.target.checked;
    $(".graph-info", section).textContent = note(model);
    render(section);
  });
  $(".graph-fit", section).addEventListener("click", () => cy && fit());
}

export function showGraph(id) {
  runId = id;
  const section = document.getElementById("run-graph");
  delete section.dataset.loaded;
  if (section.open) load(section);
}

// The page's test and console handle on the drawn graph.
export const graphState = {
  get cy() { return cy; },
  get expanded() { return expanded; },
  minLabelPx: MIN_LABEL_PX,
};
