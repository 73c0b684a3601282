// The page: hash routes (#/lineage, #/datasets, #/scalars[?run=a&tag=loss&group=...],
// #/diff?run=a&run=b, #/run/<id>, #/models[/<name>]) and
// the poll that brings new runs in without a reload.
import { api } from "./js/api.js";
import { showDatasets } from "./js/datasets.js";
import { initDiff, refreshDiff, showDiff } from "./js/diff.js";
import { graphState } from "./js/graph.js";
import { initImportance } from "./js/importance.js";
import { lineageState, refreshLineage, sayEmpty, showLineage } from "./js/lineage.js";
import { showModels } from "./js/models.js";
import { refreshRun, showRun } from "./js/run.js";
import { refreshScalars, scalarState, selectRuns, showScalars } from "./js/scalars.js";
import { $, loadCharts, toast } from "./js/util.js";

const POLL_MS = 3000;
initImportance();
initDiff();
let current = null;
let stamp = null;

function route() {
  const raw = window.location.hash.replace(/^#\/?/, "");
  // the diff's query is read as it is: decoding it first would split a run id holding "&"
  if (raw === "diff" || raw.startsWith("diff?")) return { view: "diff", query: raw.slice(5) };
  if (raw.startsWith("scalars?")) return { view: "scalars", query: raw.slice(8) };
  const hash = decodeURIComponent(raw);
  if (hash.startsWith("run/")) return { view: "run", id: hash.slice(4) };
  if (hash === "models" || hash.startsWith("models/")) return { view: "models", name: hash.slice(7) || null };
  if (["datasets", "scalars"].includes(hash)) return { view: hash };
  return { view: "lineage" };
}

const compare = (id) => {
  selectRuns([id]);
  window.location.hash = "#/scalars";
};

async function render() {
  const r = route();
  current = r;
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== `view-${r.view}`;
  for (const tab of document.querySelectorAll(".tabs a")) tab.classList.toggle("on", tab.dataset.view === r.view);
  if (r.view === "run") {
    $("#tab-run").hidden = false;
    $("#tab-run").href = `#/run/${r.id}`;
  }
  try {
    if (!["lineage", "models"].includes(r.view)) await loadCharts(); // the runs page starts it itself
    if (r.view === "lineage") await showLineage();
    else if (r.view === "datasets") await showDatasets();
    else if (r.view === "scalars") await showScalars(r.query || "");
    else if (r.view === "diff") await showDiff(r.query);
    else if (r.view === "models") await showModels(r.name);
    else await showRun(r.id, { onCompare: compare });
  } catch (error) {
    toast(error.message);
  }
  await firstPoll; // "ready": the view and the header's run count
  document.body.dataset.ready = r.view;
}

async function poll(scan = true) {
  try {
    const status = await api.status(scan);
    $("#base-name").textContent = status.base;
    $("#run-count").textContent = String(status.count);
    sayEmpty();
    $("#live").classList.remove("off");
    const unsynced = status.unsynced || [];
    const chip = $("#unsynced");
    chip.hidden = unsynced.length === 0;
    chip.textContent = `${unsynced.length} not uploaded`;
    chip.title = `Written on this machine and not in the store yet; run \`trainledger sync\`:\n${unsynced.join("\n")}`;
    if (stamp !== null && status.stamp !== stamp) {
      stamp = status.stamp;
      if (current.view === "lineage") await refreshLineage();
      else if (current.view === "datasets") await showDatasets();
      else if (current.view === "scalars") await refreshScalars();
      else if (current.view === "diff") await refreshDiff();
      else if (current.view === "run") await refreshRun({ onCompare: compare });
      // (the models page: a new run changes no model; it is drawn again when opened)
    }
    stamp = status.stamp;
  } catch (error) {
    $("#live").classList.add("off");
  }
}

window.trainledger = { lineage: lineageState, scalars: scalarState, graph: graphState };
window.addEventListener("hashchange", render);
// The first view does not wait for the first poll, and that poll does not re-scan the base
// (at 10,000 runs 0.3-1 s of the server's interpreter, which the view's own requests would
// share): it takes the runs as last scanned, and the next poll scans.
const firstPoll = poll(false);
render();
setInterval(poll, POLL_MS);
