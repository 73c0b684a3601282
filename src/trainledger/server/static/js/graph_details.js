// The side panel of the computational graph: one operator's details (op, scope, output shapes,
// attributes, what feeds it and what it feeds), shown when the operator is clicked.
import { h } from "./util.js";

export const shapeText = (shape) => (shape === null || shape === undefined ? "" : shape.length ? shape.join("×") : "scalar");

function rows(pairs) {
  return h("table", { class: "kv" }, h("tbody", {}, pairs.map(([k, v]) =>
    h("tr", {}, h("th", { text: k }), h("td", { text: v })))));
}

function neighbours(title, edges, end, model) {
  if (!edges.length) return null;
  return [h("h4", { text: title }), h("ul", { class: "graph-links" }, edges.map((e) => {
    const other = model.byId.get(e[end]);
    const name = other ? `${other.label} (${other.op})` : e[end];
    return h("li", { title: e[end], text: e.shape ? `${name}: ${shapeText(e.shape)}` : name });
  }))];
}

// Fill ``panel`` with the details of node ``id`` of ``model`` (the server's graph answer).
export function showDetails(panel, model, id, onClose) {
  const node = model.byId.get(id);
  const attrs = Object.entries(node.attrs || {});
  const shapes = (node.shapes || []).map(shapeText);
  const parts = [
    h("div", { class: "graph-details-head" },
      h("h3", { text: node.label }),
      h("button", { type: "button", class: "small ghost", "aria-label": "Close details", text: "×", onclick: onClose })),
    rows([["op", node.op], ["name", node.id], ["scope", node.scope || "(top level)"],
      ["output shapes", shapes.length ? shapes.join(", ") : "not recorded"],
      ...(node.bookkeeping ? [["bookkeeping", "yes"]] : [])]),
    attrs.length ? [h("h4", { text: "Attributes" }), rows(attrs)] : h("p", { class: "muted", text: "No attributes recorded." }),
    neighbours("Inputs", model.edges.filter((e) => e.target === id), "source", model),
    neighbours("Feeds", model.edges.filter((e) => e.source === id), "target", model),
  ];
  panel.replaceChildren(...parts.flat().filter(Boolean));
  panel.dataset.node = id;
  panel.hidden = false;
}
