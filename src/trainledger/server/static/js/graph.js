// A run's computational graph: cytoscape.js with the dagre layered layout, one box per module
// scope (click a closed module to open it, an open one's title to close it), tensor shapes on
// edges. The server already collapsed huge graphs to module level; this view opens scopes
// level by level until about INITIAL_NODES elements show. cytoscape is fetched on first open.
import { api } from "./api.js";
import { $, loadScript } from "./util.js";

const SCRIPTS = ["/static/vendor/cytoscape-3.34.4/cytoscape.min.js",
  "/static/vendor/cytoscape-dagre-4.0.1/cytoscape-dagre.min.js"];
const INITIAL_NODES = 24; // elements shown when the view opens (scopes opened level by level)
const SMALL_GRAPH = 60; // up to this many nodes, parameters and constants show from the start
const MAX_FIT_ZOOM = 1.3; // "fit" never enlarges past this
const OP_CLASSES = { Parameter: "param", Buffer: "param", Const: "param", "IO Node": "io", Module: "module" };
const PARAM_OPS = new Set(["Parameter", "Buffer", "Const"]);

let runId = null;
let model = null;
let expanded = new Set();
let cy = null;
let showParams = true;

// The nodes drawn: all, or all but parameters, buffers and constants (MindSpore lists every
// weight, optimizer moment and constant at the top level, which buries the operators).
function drawnNodes() {
  return showParams ? model.nodes : model.nodes.filter((n) => !PARAM_OPS.has(n.op));
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

const shapeText = (shape) => (shape === null ? "" : shape.length ? shape.join("×") : "scalar");

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
        data: { id: rep, label, op: node.op, shape: shapeText(node.shape),
                parent: node.scope ? `s:${node.scope}` : undefined } });
    }
  }
  const edges = new Map();
  for (const edge of model.edges) {
    const source = reps.get(edge.source);
    const target = reps.get(edge.target);
    const key = `${source}->${target}`;
    if (!source || !target || source === target || edges.has(key)) continue;
    edges.set(key, { group: "edges", classes: edge.control ? "control" : "",
      data: { id: `e:${key}`, source, target, label: shapeText(edge.shape) } });
  }
  return [...out.values(), ...edges.values()];
}

function visibleCount() {
  return new Set(drawnNodes().map(representative)).size;
}

// Open scopes depth by depth while the view stays small enough to read.
function initialExpansion() {
  expanded = new Set();
  const depths = [...model.scopes.keys()].reduce((m, s) => Math.max(m, s.split("/").length), 0);
  for (let d = 1; d <= depths; d += 1) {
    const next = new Set([...expanded, ...[...model.scopes.keys()].filter((s) => s.split("/").length === d)]);
    const before = expanded;
    expanded = next;
    if (visibleCount() > INITIAL_NODES) {
      expanded = before;
      break;
    }
  }
}

const STYLE = [
  { selector: "node", style: {
    label: "data(label)", "font-size": 11, "text-valign": "center", "text-halign": "center",
    shape: "round-rectangle", width: (n) => Math.max(36, 6.8 * n.data("label").length + 14),
    height: 24, "background-color": "#e8eefc", "border-width": 1, "border-color": "#3563e9", color: "#1d2433" } },
  { selector: "node.param", style: { "background-color": "#f1f2f5", "border-color": "#9aa1b1", "font-size": 10, height: 20 } },
  { selector: "node.io", style: { shape: "ellipse", "background-color": "#fff4e5", "border-color": "#f76b15" } },
  { selector: "node.closed, node.module", style: {
    "background-color": "#3563e9", color: "#ffffff", "border-color": "#2447b3", "font-weight": "bold", height: 28 } },
  { selector: "node.open", style: {
    "background-color": "#f7f9ff", "background-opacity": 0.6, "border-color": "#b7c3e0", "border-style": "dashed",
    "text-valign": "top", "text-halign": "center", "font-weight": "bold", color: "#2447b3", padding: 12 } },
  { selector: "edge", style: {
    width: 1.3, "line-color": "#8b93a7", "target-arrow-color": "#8b93a7", "target-arrow-shape": "triangle",
    "curve-style": "bezier", label: "data(label)", "font-size": 9, color: "#4a5266",
    "text-background-color": "#ffffff", "text-background-opacity": 0.85, "text-background-padding": 1 } },
  { selector: "edge.control", style: { "line-style": "dashed" } },
];

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
    });
  }
  cy.batch(() => {
    cy.elements().remove();
    cy.add(elements());
  });
  const layout = cy.layout({ name: "dagre", rankDir: "TB", nodeSep: 18, rankSep: 34, padding: 16, animate: false });
  layout.run();
  fit();
  section.dataset.visible = String(cy.nodes().length);
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
  const parts = [`${graph.total_nodes} nodes, ${graph.edges.length} edges`];
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
    model = { ...graph, runId, scopes: new Map(graph.scopes.map((s) => [s.id, s])) };
    canvas.hidden = false;
    $(".graph-controls", section).hidden = false;
    empty.hidden = true;
    $(".graph-info", section).textContent = note(graph);
    if (again) {
      expanded = new Set([...expanded].filter((s) => model.scopes.has(s)));
    } else {
      showParams = graph.nodes.length <= SMALL_GRAPH;
      initialExpansion();
    }
    $(".graph-params", section).checked = showParams;
    render(section);
  } catch (error) {
    canvas.hidden = true;
    $(".graph-controls", section).hidden = true;
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
  $(".graph-fit", section).addEventListener("click", () => cy && fit());
}

export function showGraph(id) {
  runId = id;
  const section = document.getElementById("run-graph");
  delete section.dataset.loaded;
  if (section.open) load(section);
}

// The page's test and console handle on the drawn graph.
export const graphState = { get cy() { return cy; }, get expanded() { return expanded; } };
