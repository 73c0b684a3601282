// Compare scalars: one chart per tag, one line per run (or per group of runs); x = step,
// epoch, samples seen, relative or wall time; TensorBoard's debiased EMA smoothing, computed
// by the server over the full series; log scale; outliers kept off the axis; "Continue from
// parent" (off by default): a run started from another run's checkpoint drawn after its
// parent's curve, spliced by the server (the series API's continue_parent, as it smooths and
// picks a zoom's range: scalar_lines.js draws it), on the step axis without grouping only. The
// charts themselves: scalar_chart.js.
import { api } from "./api.js";
import { drawScalarChart } from "./scalar_chart.js";
import { groupKey, groupKeys } from "./scalar_groups.js";
import { xInfo } from "./scalar_lines.js";
import { $, colorFor, debounce, h } from "./util.js";

const MAX_LISTED = 300;
const state = {
  runs: [],               // every run id, newest first
  selected: [],           // chosen run ids, in choice order (their colour)
  tags: [],               // tags of the chosen runs
  chosenTags: null,       // Set, null until the first tags arrive (then: first few)
  x: "step",
  smoothing: 0.6,
  smoothingSet: false,    // chosen by the user (or a link): then short series are smoothed too
  log: false,
  ignoreOutliers: true,
  view: "merged",         // or "sessions": every point, each session its own segment
  continueParent: false,  // "Continue from parent" (effective on the step axis, ungrouped)
  seriesContinued: false, // whether `series` was asked with continue_parent
  series: [],
  charts: new Map(),      // tag -> echarts instance
  zoom: new Map(),        // tag -> {min, max, series}: a zoomed chart's steps, read at full fidelity
  search: "",
  group: "",              // a field to group the runs by ("" = each run its own line)
  groupValues: {},        // run id -> its value of that field
  xinfo: {},              // run id -> {stepsPerEpoch, batch}: the epoch and samples axes
  windows: new Map(),     // tag -> {min, max}: a zoomed chart's x window (any x axis)
  wired: false,
};

export const scalarState = state;

export function selectRuns(ids) {
  state.selected = [...new Set(ids)];
}

function renderRunList() {
  const box = $("#scalar-runs");
  const term = state.search.toLowerCase();
  const chosen = new Set(state.selected);
  const matches = state.runs.filter((id) => !chosen.has(id) && id.toLowerCase().includes(term));
  const shown = [...state.selected, ...matches.slice(0, MAX_LISTED)];
  const grouped = state.group ? groupOrder() : null;
  box.replaceChildren(...shown.map((id) => {
    const index = state.selected.indexOf(id);
    // grouped, a run's swatch is its group's colour (the charts draw groups, not runs)
    const key = grouped && index >= 0 ? groupKey(state.groupValues[id]) : null;
    const color = key !== null ? colorFor(grouped.indexOf(key)) : index >= 0 ? colorFor(index) : "";
    return h("label", { title: key !== null ? `${id}: ${state.group} = ${key}` : id },
      h("input", { type: "checkbox", checked: index >= 0, dataset: { run: id },
                   onchange: (event) => toggleRun(id, event.target.checked) }),
      h("span", { class: "swatch", style: color ? `background:${color}` : "",
                  dataset: key !== null ? { group: key } : {} }),
      id);
  }));
  if (!state.runs.length) box.append(h("div", { class: "muted", text: "No runs yet." }));
  if (matches.length > MAX_LISTED) {
    box.append(h("div", { class: "muted", text: `${matches.length - MAX_LISTED} more: refine the search` }));
  }
}

function renderTagList() {
  const box = $("#scalar-tags");
  box.replaceChildren(...state.tags.map((tag) => h("label", { title: tag },
    h("input", { type: "checkbox", checked: state.chosenTags.has(tag), dataset: { tag },
                 onchange: (event) => toggleTag(tag, event.target.checked) }),
    tag)));
  if (!state.tags.length) box.append(h("div", { class: "muted", text: "No scalars in the chosen runs." }));
}

async function toggleRun(id, on) {
  state.selected = on ? [...state.selected, id] : state.selected.filter((r) => r !== id);
  renderRunList();
  await loadTags();
  await loadGroupValues();
  await loadXInfo();
  renderRunList();  // (grouped: the new run's swatch takes its group's colour)
  await loadSeries();
}

async function toggleTag(tag, on) {
  if (on) state.chosenTags.add(tag); else state.chosenTags.delete(tag);
  await loadSeries();
}

async function loadTags() {
  if (!state.selected.length) { state.tags = []; renderTagList(); return; }
  const result = await api.scalarTags(state.selected);
  state.tags = result.tags;
  if (state.chosenTags === null) state.chosenTags = new Set(result.tags.slice(0, 6));
  renderTagList();
}

const chosenTags = () => state.tags.filter((t) => state.chosenTags && state.chosenTags.has(t));

// Whether the charts continue children from their parents: a child's steps follow its parent's,
// which no other axis (epochs and samples are per run, times are each run's own) can say, and
// a group would average curves shifted by different forks
const continues = () => state.continueParent && state.x === "step" && !state.group;
const continueAsk = () => (continues() ? { continue_parent: true } : {});

const CONTINUE_TITLE = "A run started from another run's checkpoint: its parent's points up to "
  + "the checkpoint's step (dashed), then its own, its step s at that step + s";

function syncContinueControl() {
  const input = $("#continue-parent");
  input.checked = state.continueParent;
  input.disabled = state.x !== "step" || Boolean(state.group);
  input.closest("label").title = input.disabled
    ? "Works on the Step axis, without grouping" : CONTINUE_TITLE;
}

// Redraws after a change of an option the charts draw from; the series again, with their
// parents, when the option now takes effect and they were asked without (never the other way:
// the parents' points are only left out of the drawing)
async function redraw() {
  if (continues() && !state.seriesContinued) { await loadSeries(); return; }
  drawCharts(chosenTags());
  syncUrl();
}

async function loadSeries() {
  const tags = chosenTags();
  if (!state.selected.length || !tags.length) {
    state.series = [];
  } else {
    state.series = (await api.series(state.selected, tags, state.view,
                                     { smoothing: state.smoothing, ...continueAsk() })).series;
  }
  state.seriesContinued = continues();
  state.zoom.clear();  // new runs, tags or view: every chart shows its whole range again
  state.windows.clear();
  drawCharts(tags);
  syncUrl();
}

// Zoom: the y axis fits the visible points. In steps, the visible steps are also fetched
// again, downsampled from the full data (and smoothed over it, so a step keeps its smoothed
// value), so a spike or a plateau inside them shows at its real resolution; the whole range
// clears it.
let zoomTimer = null;
function onZoom(tag, chart) {
  clearTimeout(zoomTimer);
  zoomTimer = setTimeout(async () => {
    const [zoom] = chart.getOption().dataZoom || [];
    if (!zoom) return;
    if (zoom.start <= 0 && zoom.end >= 100) {
      const had = state.zoom.delete(tag) | state.windows.delete(tag);
      if (had) drawChart(tag);
      return;
    }
    if (state.x !== "step") {
      state.windows.set(tag, { min: zoom.startValue, max: zoom.endValue });
      drawChart(tag);
      return;
    }
    const min = Math.floor(zoom.startValue);
    const max = Math.ceil(zoom.endValue);
    const runs = state.series.filter((s) => s.tag === tag).map((s) => s.run_id);
    if (!runs.length || !(max >= min)) return;
    const { series } = await api.series(runs, [tag], state.view,
                                        { step_min: min, step_max: max, smoothing: state.smoothing,
                                          ...continueAsk() });
    state.zoom.set(tag, { min, max, series });
    state.windows.set(tag, { min, max });
    drawChart(tag);
  }, 200);
}

// The x extent of a tag's unzoomed lines (in steps, a continued run's own after its fork):
// the x axis of its zoomed chart
function stepExtent(tag) {
  let min = Infinity;
  let max = -Infinity;
  const drawnAt = (s, i) => s.points[i][0] + (continues() && s.parent && i >= s.parent.count ? s.parent.step : 0);
  for (const s of state.series) {
    if (s.tag !== tag || !s.points.length) continue;
    min = Math.min(min, drawnAt(s, 0));
    max = Math.max(max, drawnAt(s, s.points.length - 1));
  }
  return min <= max ? { min, max } : {};
}

function drawChart(tag) {
  const chosen = chosenTags();
  if (chosen.includes(tag)) drawCharts(chosen);
}

function chartCard(grid, tag) {
  return grid.querySelector(`[data-chart-tag="${CSS.escape(tag)}"]`)
    || h("div", { class: "card chart-card", dataset: { chartTag: tag } },
      h("div", { class: "card-head" }, h("h2", { text: tag }), h("span", { class: "muted chart-note" })),
      h("div", { class: "chart chart-scalar" }));
}

function drawCharts(tags) {
  const grid = $("#scalar-charts");
  for (const [tag, chart] of state.charts) {
    if (!tags.includes(tag)) { chart.dispose(); state.charts.delete(tag); }
  }
  const cards = tags.map((tag) => chartCard(grid, tag));
  grid.replaceChildren(...cards);
  $("#scalar-empty").hidden = tags.length > 0 && state.selected.length > 0;
  const order = state.group ? groupOrder() : [];
  tags.forEach((tag, i) => {
    const host = cards[i].querySelector(".chart-scalar");
    let chart = state.charts.get(tag);
    if (!chart || chart.getDom() !== host) {
      if (chart) chart.dispose();
      chart = echarts.init(host, null, { renderer: "svg" });
      state.charts.set(tag, chart);
    }
    const zoomed = state.x === "step" ? state.zoom.get(tag) : undefined;
    const lines = (zoomed ? zoomed.series : state.series).filter((s) => s.tag === tag);
    host.dataset.lines = String(lines.length);
    host.dataset.zoom = zoomed ? `${zoomed.min}-${zoomed.max}` : "";
    host.dataset.points = String(lines.reduce((n, s) => n + s.points.length, 0));
    const drawn = drawScalarChart(chart, lines, {
      x: state.x, weight: state.smoothing, explicit: state.smoothingSet,
      apart: state.view === "sessions", log: state.log, ignoreOutliers: state.ignoreOutliers,
      group: state.group, window: state.windows.get(tag), extent: zoomed ? stepExtent(tag) : null,
      continued: continues(),
      colorOf: (id) => colorFor(state.selected.indexOf(id)),
      infoOf: (id) => state.xinfo[id] || {},
      groupOf: (id) => state.groupValues[id],
      groupColor: (key) => colorFor(order.indexOf(key)),
    });
    // a run the x axis cannot place (no epochs or batch size recorded) is named, not hidden
    const missing = lines.filter((s) => !drawn.models.some((m) => m.run_id === s.run_id)).map((s) => s.run_id);
    cards[i].querySelector(".chart-note").textContent = missing.length
      ? `not drawn (no ${state.x === "epoch" ? "epochs" : "batch size"} recorded): ${missing.join(", ")}` : "";
    chart.off("datazoom");
    chart.on("datazoom", () => onZoom(tag, chart));
  });
}

function groupOrder() {
  return groupKeys(state.selected, (id) => state.groupValues[id]);
}

// What the epoch and samples axes need of each chosen run (one request, on choosing them)
async function loadXInfo() {
  if (!["epoch", "samples"].includes(state.x) || !state.selected.length) return;
  const cond = { summary_dir: { in: state.selected.map((id) => `./${id}`) } };
  const data = await api.points(cond, [], ["run/total_steps", "epoch", "batch_size", "train_dataset_count"]);
  state.xinfo = {};
  data.run_ids.forEach((id, i) => { state.xinfo[id] = xInfo(data.columns, i); });
}

// The view's state in the URL (#/scalars?run=a&tag=loss&smooth=0.6&group=optimizer...), so a
// link shows the same chart; replaced in place, never a new history entry per click. The
// smoothing is written only once chosen (a link with it smooths short series too).
const X_AXES = ["step", "epoch", "samples", "relative", "wall"];

function syncUrl() {
  const q = new URLSearchParams();
  for (const id of state.selected) q.append("run", id);
  for (const tag of chosenTags()) q.append("tag", tag);
  q.set("x", state.x);
  if (state.smoothingSet) q.set("smooth", String(state.smoothing));
  if (state.log) q.set("log", "1");
  if (!state.ignoreOutliers) q.set("outliers", "1");
  if (state.view !== "merged") q.set("view", state.view);
  if (state.group) q.set("group", state.group);
  if (state.continueParent) q.set("parent", "1");
  history.replaceState(null, "", `#/scalars?${q}`);
}

function applyUrl(query) {
  const q = new URLSearchParams(query);
  if (q.has("run")) state.selected = [...new Set(q.getAll("run"))];
  if (q.has("tag")) state.chosenTags = new Set(q.getAll("tag"));
  if (X_AXES.includes(q.get("x"))) state.x = q.get("x");
  const smooth = Number(q.get("smooth"));
  if (q.has("smooth") && smooth >= 0 && smooth < 1) {
    state.smoothing = smooth;
    state.smoothingSet = true;
  }
  state.log = q.get("log") === "1";
  state.ignoreOutliers = q.get("outliers") !== "1";
  state.view = q.get("view") === "sessions" ? "sessions" : "merged";
  state.group = q.get("group") || "";
  state.continueParent = q.get("parent") === "1";
  // the controls show the state
  $("#smoothing").value = String(state.smoothing);
  $("#smoothing-value").textContent = state.smoothing.toFixed(2);
  $("#log-scale").checked = state.log;
  $("#ignore-outliers").checked = state.ignoreOutliers;
  $("#sessions-apart").checked = state.view === "sessions";
  document.querySelectorAll("#x-axis button").forEach((b) => b.classList.toggle("on", b.dataset.x === state.x));
  syncContinueControl();
}

async function loadGroupValues() {
  state.groupValues = {};
  if (!state.group || !state.selected.length) return;
  const cond = { summary_dir: { in: state.selected.map((id) => `./${id}`) } };
  const data = await api.points(cond, [], [state.group]);
  data.run_ids.forEach((id, i) => { state.groupValues[id] = (data.columns[state.group] || [])[i]; });
}

async function renderGroupChoices() {
  const select = $("#group-by");
  const { groups } = await api.columns({}, []);
  const fields = ["Hyperparameters", "Optimizer and scheduler", "User defined", "Other"]
    .flatMap((g) => groups[g] || []).filter((c) => c !== "summary_dir");
  select.replaceChildren(h("option", { value: "", text: "No grouping" }),
    ...fields.map((f) => h("option", { value: f, text: f, selected: f === state.group })));
  select.value = state.group;
}

function wire() {
  $("#scalar-run-search").addEventListener("input", (event) => {
    state.search = event.target.value;
    renderRunList();
  });
  for (const button of document.querySelectorAll("#x-axis button")) {
    button.addEventListener("click", async () => {
      state.x = button.dataset.x;
      document.querySelectorAll("#x-axis button").forEach((b) => b.classList.toggle("on", b === button));
      state.windows.clear();
      state.zoom.clear();
      syncContinueControl();
      await loadXInfo();
      await redraw();
    });
  }
  // the server smooths (over the full series): a new weight is a new request, once it settles
  const resmooth = debounce(() => loadSeries(), 250);
  $("#smoothing").addEventListener("input", (event) => {
    state.smoothing = Number(event.target.value);
    state.smoothingSet = true;
    $("#smoothing-value").textContent = state.smoothing.toFixed(2);
    resmooth();
  });
  $("#ignore-outliers").addEventListener("change", (event) => {
    state.ignoreOutliers = event.target.checked;
    drawCharts(chosenTags());
    syncUrl();
  });
  $("#sessions-apart").addEventListener("change", (event) => {
    state.view = event.target.checked ? "sessions" : "merged";
    loadSeries();
  });
  $("#group-by").addEventListener("change", async (event) => {
    const before = continues();
    state.group = event.target.value;
    await loadGroupValues();
    renderRunList();
    syncContinueControl();
    if (continues() !== before) {  // (a continued run's drawn steps move: unzoomed)
      state.zoom.clear();
      state.windows.clear();
    }
    await redraw();
  });
  $("#continue-parent").addEventListener("change", async (event) => {
    state.continueParent = event.target.checked;
    state.zoom.clear();  // (the drawn steps of a continued run move)
    state.windows.clear();
    await redraw();
  });
  $("#log-scale").addEventListener("change", (event) => {
    state.log = event.target.checked;
    drawCharts(chosenTags());
    syncUrl();
  });
  window.addEventListener("resize", () => { for (const c of state.charts.values()) c.resize(); });
}

async function loadRuns() {
  const result = await api.points({}, [], []);
  state.runs = result.run_ids;
  const known = new Set(state.runs);
  state.selected = state.selected.filter((id) => known.has(id));
}

export async function showScalars(query = "") {
  if (!state.wired) { wire(); state.wired = true; }
  if (query) applyUrl(query);
  syncContinueControl();
  await loadRuns();
  if (!state.selected.length) state.selected = state.runs.slice(0, 3);
  renderRunList();
  await renderGroupChoices();
  await loadTags();
  await loadGroupValues();
  await loadXInfo();
  renderRunList();
  await loadSeries();
}

export async function refreshScalars() {
  await loadRuns();
  renderRunList();
  await loadTags();
  await loadSeries();
}
