// Run detail: every lineage field, checkpoints, user fields, status, annotation, dataset graph.
import { api } from "./api.js";
import { expandable } from "./expand.js";
import { showFamily } from "./family.js";
import { initGraph, showGraph } from "./graph.js";
import { initLandscapes, showLandscapes } from "./landscape.js";
import { initMedia, showMedia } from "./media.js";
import { showRunModels } from "./model_register.js";
import { showRunScalars } from "./run_scalars.js";
import { sessionsCard } from "./run_sessions.js";
import { $, divergedText, exact, fmt, fmtBytes, fmtField, fmtTime, h, tagChip, toast, treeOption } from "./util.js";

const TITLES = {
  run: "Run", hyper_parameters: "Hyperparameters", algorithm: "Algorithm", model: "Model",
  metric: "Metrics", train_dataset: "Train dataset", valid_dataset: "Validation dataset",
  user_defined: "User defined", optimizer_settings: "Optimizer settings",
  scheduler_settings: "Scheduler settings",
};
const ORDER = ["run", "metric", "hyper_parameters", "optimizer_settings", "scheduler_settings",
  "algorithm", "model", "train_dataset", "valid_dataset", "user_defined"];
const TIME_KEYS = /(^|_)(time|start|end|wall_time|started|ended)$/;

let chart = null;
let currentId = null;
initMedia();
initLandscapes();
initGraph();
expandable($("#run-tree"));

const BYTE_KEYS = /(^|_)size$/;

// A lineage value as a person reads it: times as dates, durations and byte sizes with units,
// a model path ('{"ckpt": "..."}', MindSpore's form) as the path, and a model size of 0
// without a model path as "no checkpoint" (MindSpore records 0 then).
export function shown(section, key, value, all = {}) {
  if (TIME_KEYS.test(key) || key === "duration") return fmtField(key === "duration" ? key : "time", value);
  if (section === "model" && key === "path" && typeof value === "string") {
    try {
      const parsed = JSON.parse(value);
      if (parsed && typeof parsed === "object") return Object.values(parsed).join(", ");
    } catch { /* a plain path */ }
    return value;
  }
  if (section === "model" && key === "size" && !value && !all.path) return "— (no checkpoint)";
  if (typeof value === "number" && section === "model" && BYTE_KEYS.test(key)) return fmtBytes(value);
  return fmt(value);
}

function kv(entries, section = "") {
  const dl = h("dl", { class: "kv" });
  const all = Object.fromEntries(entries);
  for (const [key, value] of entries) {
    const text = shown(section, key, value, all);
    dl.append(h("dt", { text: key }), h("dd", { text, title: exact(value) }));
  }
  return dl;
}

function card(title, body) {
  return h("div", { class: "card" }, h("div", { class: "card-head" }, h("h2", { text: title })), body);
}

export async function showRun(id, { onCompare } = {}) {
  currentId = id;
  $("#run-title").textContent = id;
  $("#run-error").hidden = true;
  $("#run-models").hidden = true;
  let detail;
  try {
    detail = await api.run(id);
  } catch (error) {
    $("#run-error").textContent = error.status === 404 ? `No run "${id}" under this base.` : error.message;
    $("#run-error").hidden = false;
    $("#run-cards").replaceChildren();
    return;
  }
  const status = detail.status || "unknown";
  $("#run-status").textContent = status;
  $("#run-status").className = `badge ${status}`;
  // a run that ran to its end with a loss gone NaN or inf did not train: say so next to it
  const diverged = divergedText(detail.nonfinite);
  $("#run-diverged").hidden = !diverged;
  $("#run-diverged").textContent = diverged ? "diverged" : "";
  $("#run-diverged").title = diverged;
  const info = detail.added_info || {};
  $("#run-tag").replaceChildren(tagChip(info.tag || 0, async (tag) => {
    await api.annotate(id, { tag });
    toast(`Tag of ${id} set to ${tag}`);
    showRun(id, { onCompare });
  }));
  const remark = $("#run-remark");
  remark.value = info.remark || "";
  remark.onchange = async () => {
    await api.annotate(id, { remark: remark.value });
    toast(`Remark of ${id} saved`);
  };
  $("#run-compare").onclick = () => onCompare && onCompare(id);
  const { role } = await api.status();
  for (const sel of ["#run-archive", "#run-delete"]) $(sel).hidden = role !== "write";
  $("#run-archive").onclick = () => act(id, "archive",
    `Archive ${id}? It leaves every list; \`trainledger restore\` brings it back.`);
  $("#run-delete").onclick = () => act(id, "remove",
    `Delete ${id} and its checkpoints? This cannot be undone.`);
  showMedia(id);
  showLandscapes(id);
  showGraph(id);
  showRunScalars(id, onCompare);
  showFamily(id);

  const lineage = detail.lineage || {};
  const keys = [...ORDER.filter((k) => k in lineage),
    ...Object.keys(lineage).filter((k) => !ORDER.includes(k) && k !== "dataset_graph" && k !== "summary_dir")];
  const cards = [];
  for (const key of keys) {
    const value = lineage[key];
    if (value === null || value === undefined) continue;
    const entries = typeof value === "object" && !Array.isArray(value)
      ? Object.entries(value).filter(([k]) => k !== "checkpoints" && k !== "sessions") : [[key, value]];
    if (!entries.length) continue;
    cards.push(card(TITLES[key] || key, kv(entries, key)));
    // a resumed run's sessions: a table of their own (run_sessions.js)
    const sessions = key === "run" ? sessionsCard(value.sessions) : null;
    if (sessions) cards.push(sessions);
  }
  if (!cards.length) cards.push(card("Lineage", h("div", { class: "empty", text: "No lineage recorded." })));
  $("#run-cards").replaceChildren(...cards);

  // checkpoints to resume from, and apart, the landscape's weight snapshots (its inputs)
  const all = detail.checkpoints || [];
  const checkpoints = all.filter((c) => c.kind !== "landscape");
  const snapshots = all.filter((c) => c.kind === "landscape");
  const tbody = $("#run-checkpoints tbody");
  // the global step, the one the curves use (the lineage records it; the file name holds the
  // step within the epoch, shown in the title)
  tbody.replaceChildren(...checkpoints.map((c) => h("tr", { dataset: { step: c.step ?? "", checkpoint: c.name } },
    h("td", { text: c.name }), h("td", { class: "num", text: fmt(c.epoch) }),
    h("td", {
      class: "num", text: fmt(c.step),
      title: c.step_in_epoch === null || c.step_in_epoch === undefined ? "" : `step ${c.step_in_epoch} of epoch ${fmt(c.epoch)}`,
    }), h("td", { class: "num", text: fmtBytes(c.size) }),
    h("td", { text: fmtTime(c.time) }), h("td", { class: "models" }))));
  if (!checkpoints.length) {
    tbody.append(h("tr", {}, h("td", { colspan: "6", class: "null", text: "No checkpoints." })));
  }
  // the named models it holds, and the Register action of each checkpoint (model_register.js)
  showRunModels(id, role === "write").catch((error) => toast(error.message));
  $("#run-snapshots").hidden = !snapshots.length;
  $("#run-snapshots tbody").replaceChildren(...snapshots.map((c) => h("tr", {},
    h("td", { text: c.name }), h("td", { class: "num", text: fmtBytes(c.size) }),
    h("td", { text: fmtTime(c.time) }))));
  const graph = lineage.dataset_graph;
  const noGraph = !graph || !Object.keys(graph).length;
  $("#run-tree").hidden = noGraph;
  $("#run-tree-empty").hidden = !noGraph;

  if (!chart) {
    chart = echarts.init($("#run-tree"), null, { renderer: "svg" });
    window.addEventListener("resize", () => chart.resize());
  }
  chart.clear();
  const option = treeOption(lineage.dataset_graph);
  if (option) chart.setOption(option, { notMerge: true });
  chart.resize();
}

async function act(id, action, question) {
  if (!window.confirm(question)) return;
  try {
    await api[action](id);
  } catch (error) {
    toast(error.message);
    return;
  }
  toast(action === "archive" ? `${id} archived` : `${id} deleted`);
  window.location.hash = "#/lineage";
}

export function refreshRun(options) {
  if (currentId) return showRun(currentId, options);
  return Promise.resolve();
}
