// Small helpers shared by the views. Every value from the server goes into the page through
// textContent or attributes, never through innerHTML, so a run named "<img onerror=...>" is text.
import { fmt } from "./format.js";

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const $ = (sel, root = document) => root.querySelector(sel);

// the one formatting of values (format.js), re-exported for the views that import it from here
export { exact, fmt, fmtBytes, fmtDuration, fmtField, fmtTime, nonFiniteText } from "./format.js";

// ECharts (1 MB, about 150 ms of the main thread to run on two cores) is preloaded by
// index.html and run when a view first needs it: the runs page starts it once its first
// long request is out, so it runs while the server answers. Resolves to the library.
const ECHARTS = "/static/vendor/echarts-6.1.0/echarts.min.js";
let charts = null;

export function loadCharts() {
  charts ??= new Promise((done, fail) => {
    const script = document.createElement("script");
    script.src = ECHARTS;
    script.onload = () => done(window.echarts);
    script.onerror = () => fail(new Error("the chart library did not load"));
    document.head.append(script);
  });
  return charts;
}

// The round step (1, 2, 2.5 or 5 times a power of ten) that cuts `span` into about `count`
// parts, and the multiples of it within [lo, hi]: contour levels and ticks a person reads as
// "0.25, 0.5" rather than "0.24373, 0.49433". Values are rounded so 0.1 * 3 prints as 0.3.
export function niceStep(span, count) {
  const raw = span / count;
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const mag = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw * (1 - 1e-9));
}

export function niceTicks(lo, hi, count) {
  const step = niceStep(hi - lo, count);
  const first = Math.ceil(lo / step - 1e-9);
  const out = [];
  for (let k = first; k * step <= hi + step * 1e-9; k += 1) out.push(Number((k * step).toPrecision(12)));
  return out;
}

export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

let toastTimer = null;
export function toast(message) {
  const el = $("#toast");
  el.textContent = message;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, 2500);
}

// Colours for runs: distinct, readable on white, stable per position.
export const PALETTE = [
  "#3563e9", "#e5484d", "#30a46c", "#f76b15", "#8e4ec6", "#12a594", "#d6409f", "#d4a106",
  "#0090ff", "#6f6e77", "#7c5e10", "#2f7d95",
];

export function colorFor(index) {
  return PALETTE[index % PALETTE.length];
}

// A MindInsight dataset graph ({op_type, children: [...], params...}) -> an ECharts tree node.
export function treeOf(graph) {
  if (!graph || typeof graph !== "object" || !Object.keys(graph).length) return null;
  const params = Object.entries(graph).filter(([k]) => k !== "children" && k !== "op_type");
  const children = Array.isArray(graph.children) ? graph.children.map(treeOf).filter(Boolean) : [];
  const shown = params.slice(0, 3).map(([k, v]) => `${k}=${fmt(v)}`).join("\n");
  return {
    name: graph.op_type || "dataset",
    params,
    label: { formatter: shown ? `{op|${graph.op_type || "dataset"}}\n{p|${shown}}` : undefined },
    children,
  };
}

export function treeOption(graph) {
  const root = treeOf(graph);
  if (!root) return null;
  return {
    tooltip: {
      trigger: "item",
      formatter: (p) => {
        const lines = (p.data.params || []).map(([k, v]) => `${escapeHtml(k)}: ${escapeHtml(fmt(v))}`);
        return `<b>${escapeHtml(p.name)}</b>${lines.length ? "<br>" + lines.join("<br>") : ""}`;
      },
    },
    series: [{
      type: "tree",
      data: [root],
      orient: "RL",
      top: 30, bottom: 30, left: 140, right: 140,
      symbol: "roundRect",
      symbolSize: [14, 14],
      initialTreeDepth: -1,
      expandAndCollapse: false,
      itemStyle: { color: "#3563e9", borderColor: "#3563e9" },
      lineStyle: { color: "#b7c3e0", width: 1.5, curveness: 0.4 },
      label: {
        position: "top", distance: 8, color: "#1d2433", fontSize: 12,
        rich: { op: { fontWeight: "bold", fontSize: 12.5, lineHeight: 18 },
                p: { color: "#6b7489", fontSize: 11, lineHeight: 15 } },
      },
    }],
  };
}

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
  }[c]));
}

// The tag chip: 0 shows as an empty dashed box; clicking opens a menu of 0..10.
export function tagChip(value, onPick) {
  const chip = h("span", { class: "tag", dataset: { tag: String(value || 0) },
                           title: "Tag (click to change)", text: value ? String(value) : "+" });
  chip.addEventListener("click", (event) => {
    event.stopPropagation();
    openTagMenu(chip, onPick);
  });
  return chip;
}

function openTagMenu(anchor, onPick) {
  document.querySelectorAll(".tag-menu").forEach((m) => m.remove());
  const menu = h("div", { class: "tag-menu", role: "menu" });
  for (let t = 0; t <= 10; t += 1) {
    menu.append(h("span", {
      class: "tag", role: "menuitem", dataset: { tag: String(t), pick: String(t) },
      title: t ? `Tag ${t}` : "No tag", text: t ? String(t) : "×",
      onclick: (event) => { event.stopPropagation(); menu.remove(); onPick(t); },
    }));
  }
  const box = anchor.getBoundingClientRect();
  menu.style.left = `${box.left + window.scrollX}px`;
  menu.style.top = `${box.bottom + window.scrollY + 4}px`;
  document.body.append(menu);
  const close = () => { menu.remove(); document.removeEventListener("click", close); };
  setTimeout(() => document.addEventListener("click", close), 0);
}

// A classic script (a vendored library) loaded on first use; the same promise after that.
const scripts = new Map();
export function loadScript(src) {
  if (!scripts.has(src)) {
    scripts.set(src, new Promise((resolve, reject) => {
      const el = h("script", { src });
      el.addEventListener("load", () => resolve());
      el.addEventListener("error", () => {
        scripts.delete(src);
        reject(new Error(`could not load ${src}`));
      });
      document.head.append(el);
    }));
  }
  return scripts.get(src);
}

// A run's loss and metric series that went NaN or infinite (the API's ``nonfinite``), as the
// badge's title says them: "loss: inf at step 72; eval/loss: nan at step 80".
export function divergedText(entries) {
  return (entries || [])
    .map((e) => `${e.tag}: ${e.value || "non-finite"} at step ${e.step}`).join("; ");
}
