// Compare scalars: one chart per tag, one line per run; x = step, relative or wall time;
// TensorBoard-style debiased EMA smoothing; log scale.
import { api } from "./api.js";
import { groupKey, groupKeys, groupLines } from "./scalar_groups.js";
import { markSeries, withNonfinite } from "./scalar_marks.js";
import { $, colorFor, escapeHtml, fmt, fmtDuration, fmtTime, h } from "./util.js";

const MAX_LISTED = 300;
const state = {
  runs: [],               // every run id, newest first
  selected: [],           // chosen run ids, in choice order (their colour)
  tags: [],               // tags of the chosen runs
  chosenTags: null,       // Set, null until the first tags arrive (then: first few)
  x: "step",
  smoothing: 0.6,
  log: false,
  view: "merged",         // or "sessions": every point, each session its own segment
  series: [],
  charts: new Map(),      // tag -> echarts instance
  zoom: new Map(),        // tag -> {min, max, series}: a zoomed chart's steps, read at full fidelity
  search: "",
  group: "",              // a field to group the runs by ("" = each run its own line)
  groupValues: {},        // run id -> its value of that field
  wired: false,
};

export const scalarState = state;

export function selectRuns(ids) {
  state.selected = [...new Set(ids)];
}

function isConstant(values) {
  const finite = values.filter((v) => Number.isFinite(v));
  return finite.length > 0 && finite.every((v) => v === finite[0]);
}

function smooth(values, weight) {
  // a constant series is drawn as it is, as TensorBoard does: the debiased average's
  // rounding would otherwise make a zig-zag that the axis then zooms into
  if (!weight || isConstant(values)) return values;
  let last = 0;
  let n = 0;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return v;
    last = last * weight + (1 - weight) * v;
    n += 1;
    return last / (1 - weight ** n);
  });
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

async function loadSeries() {
  const tags = state.tags.filter((t) => state.chosenTags && state.chosenTags.has(t));
  if (!state.selected.length || !tags.length) {
    state.series = [];
  } else {
    state.series = (await api.series(state.selected, tags, state.view)).series;
  }
  state.zoom.clear();  // new runs, tags or view: every chart shows its whole range again
  drawCharts(tags);
  syncUrl();
}

// Zoom (x = step): the visible steps are fetched again, downsampled from the full data, so a
// spike or a plateau inside them shows at its real resolution; the whole range clears it.
let zoomTimer = null;
function onZoom(tag, chart) {
  clearTimeout(zoomTimer);
  zoomTimer = setTimeout(async () => {
    const [zoom] = chart.getOption().dataZoom || [];
    if (!zoom || state.x !== "step") return;
    if (zoom.start <= 0 && zoom.end >= 100) {
      if (state.zoom.delete(tag)) drawChart(tag);
      return;
    }
    const min = Math.floor(zoom.startValue);
    const max = Math.ceil(zoom.endValue);
    const runs = state.series.filter((s) => s.tag === tag).map((s) => s.run_id);
    if (!runs.length || !(max >= min)) return;
    const { series } = await api.series(runs, [tag], state.view, { step_min: min, step_max: max });
    state.zoom.set(tag, { min, max, series });
    drawChart(tag);
  }, 200);
}

// The steps of a tag's unzoomed lines: the x axis of its zoomed chart
function stepExtent(tag) {
  let min = Infinity;
  let max = -Infinity;
  for (const s of state.series) {
    if (s.tag !== tag || !s.points.length) continue;
    min = Math.min(min, s.points[0][0]);
    max = Math.max(max, s.points[s.points.length - 1][0]);
  }
  return min <= max ? { min, max } : {};
}

function drawChart(tag) {
  const chosen = state.tags.filter((t) => state.chosenTags && state.chosenTags.has(t));
  if (chosen.includes(tag)) drawCharts(chosen);
}

function seriesData(points, weight = state.smoothing, sessions = []) {
  // each session's segment is smoothed on its own (its average starts afresh)
  const ys = [];
  for (let start = 0; start < points.length;) {
    let end = start + 1;
    while (end < points.length && (!sessions.length || sessions[end] === sessions[start])) end += 1;
    ys.push(...smooth(points.slice(start, end).map((p) => p[2]), weight));
    start = end;
  }
  const t0 = points.length ? points[0][1] : 0;
  const out = [];
  points.forEach((p, i) => {
    const x = state.x === "step" ? p[0] : state.x === "relative" ? p[1] - t0 : p[1] * 1000;
    const y = ys[i];
    // a new session starts a new segment (null breaks the line): never a diagonal back
    // [x, y, step, wall time]: the hover names the step and the time whatever the x axis
    if (i && sessions.length && sessions[i] !== sessions[i - 1]) out.push([x, null, p[0], p[1]]);
    out.push([x, state.log && !(y > 0) ? null : y, p[0], p[1]]);
  });
  return out;
}

// The hover: the step and wall time, then each run's (smoothed) value; names are escaped
function hoverText(params) {
  // (a run's faint raw line and a group's band are not values of their own)
  const rows = params.filter((p) => !/ \((raw|low|band|non-finite|point)\)$/.test(p.seriesName) && p.value[1] !== null);
  if (!rows.length) return "";
  const [, , step, wall] = rows[0].value;
  const head = `step ${step} · ${escapeHtml(fmtTime(wall))}`;
  const lines = rows.map((p) => `${p.marker}${escapeHtml(p.seriesName)}: <b>${fmt(p.value[1])}</b>`);
  return [head, ...lines].join("<br>");
}

// A flat (or float-noise flat) chart gets an axis of +-10 % around its value, not one zoomed
// into rounding errors; other charts keep the automatic axis.
function flatAxis(datasets) {
  let low = Infinity;
  let high = -Infinity;
  for (const data of datasets) {
    for (const [, y] of data) {
      if (Number.isFinite(y)) { low = Math.min(low, y); high = Math.max(high, y); }
    }
  }
  if (low > high) return {};
  const mid = (low + high) / 2;
  if (high - low > Math.abs(mid) * 1e-6) return {};
  const half = mid ? Math.abs(mid) * 0.1 : 1;
  return { min: mid - half, max: mid + half };
}

function drawCharts(tags) {
  const grid = $("#scalar-charts");
  for (const [tag, chart] of state.charts) {
    if (!tags.includes(tag)) { chart.dispose(); state.charts.delete(tag); }
  }
  const cards = tags.map((tag) => {
    let el = grid.querySelector(`[data-chart-tag="${CSS.escape(tag)}"]`);
    if (!el) {
      el = h("div", { class: "card chart-card", dataset: { chartTag: tag } },
        h("div", { class: "card-head" }, h("h2", { text: tag })),
        h("div", { class: "chart chart-scalar" }));
    }
    return el;
  });
  grid.replaceChildren(...cards);
  $("#scalar-empty").hidden = tags.length > 0 && state.selected.length > 0;
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
    if (state.group) {
      drawGroups(chart, tag, lines, zoomed);
      return;
    }
    const apart = (s) => (state.view === "sessions" ? s.sessions : []);
    const smoothed = lines.map((s) => seriesData(s.points, state.smoothing, apart(s)));
    const raw = state.smoothing ? lines.map((s) => seriesData(s.points, 0, apart(s))) : [];
    chart.setOption({
      animation: false,
      grid: { left: 58, right: 18, top: 34, bottom: 36 },
      // which line is which run: a legend of the runs (not their faint raw lines)
      legend: { type: "scroll", top: 0, left: 8, right: 8, data: lines.map((s) => s.run_id),
                textStyle: { color: "#3b4356", fontSize: 11 } },
      tooltip: { trigger: "axis", formatter: withNonfinite(hoverText, lines) },
      // wheel/drag zooms the x axis; in steps, the zoomed range is fetched at full fidelity
      dataZoom: [{ type: "inside", xAxisIndex: 0, filterMode: "none",
                   ...(zoomed ? { startValue: zoomed.min, endValue: zoomed.max } : {}) }],
      xAxis: {
        type: state.x === "wall" ? "time" : "value", scale: true,
        // zoomed: the axis keeps the whole run's steps, so zooming out is still possible
        ...(zoomed ? stepExtent(tag) : {}),
        name: state.x === "step" ? "step" : "", nameLocation: "end", nameGap: 4,
        axisLabel: { color: "#6b7489", hideOverlap: true,
                     formatter: state.x === "relative" ? fmtDuration : undefined },
        splitLine: { show: false },
      },
      yAxis: {
        type: state.log ? "log" : "value", scale: true,
        ...(state.log ? {} : flatAxis([...smoothed, ...raw])),
        axisLabel: { color: "#6b7489", formatter: (v) => fmt(v) },
        splitLine: { lineStyle: { color: "#eef1f6" } },
      },
      series: [
        // the raw points, faint, behind each smoothed line (as TensorBoard draws them)
        ...raw.map((data, i) => ({
          type: "line", name: `${lines[i].run_id} (raw)`, showSymbol: false,
          connectNulls: false, color: colorFor(state.selected.indexOf(lines[i].run_id)),
          lineStyle: { width: 1, opacity: 0.25 }, z: 1, data,
        })),
        ...lines.map((s, i) => ({
          type: "line", name: s.run_id, showSymbol: false, connectNulls: false,
          color: colorFor(state.selected.indexOf(s.run_id)),
          lineStyle: { width: 1.8 }, z: 2,
          data: smoothed[i],
        })),
        ...markSeries(lines, smoothed, lines.map((s) => colorFor(state.selected.indexOf(s.run_id)))),
      ],
    }, { notMerge: true });
    chart.off("datazoom");
    chart.on("datazoom", () => onZoom(tag, chart));
    chart.resize();
  });
}

// One mean line per group (smoothed as a run's line is) and its min-max band: the low edge
// an invisible line, the band the spread stacked on it.
function groupOrder() {
  return groupKeys(state.selected, (id) => state.groupValues[id]);
}

function drawGroups(chart, tag, lines, zoomed) {
  const groups = groupLines(lines, (id) => state.groupValues[id]);
  const order = groupOrder();
  const name = (g) => `${state.group} = ${g.key} (${g.runs.length} run${g.runs.length > 1 ? "s" : ""})`;
  const series = [];
  groups.forEach((g, i) => {
    const color = colorFor(order.indexOf(g.key));
    const mean = seriesData(g.points.map(([s, w, m]) => [s, w, m]), state.smoothing);
    const low = seriesData(g.points.map(([s, w, , lo]) => [s, w, lo]), 0);
    const spread = seriesData(g.points.map(([s, w, , lo, hi]) => [s, w, hi - lo]), 0);
    series.push(
      { type: "line", name: `${name(g)} (low)`, stack: `band-${i}`, showSymbol: false, silent: true,
        lineStyle: { opacity: 0 }, data: low, z: 1 },
      { type: "line", name: `${name(g)} (band)`, stack: `band-${i}`, showSymbol: false, silent: true,
        lineStyle: { opacity: 0 }, areaStyle: { color, opacity: 0.18 }, data: spread, z: 1 },
      { type: "line", name: name(g), showSymbol: false, color, lineStyle: { width: 1.8 }, z: 2,
        data: mean },
    );
  });
  chart.setOption({
    animation: false,
    grid: { left: 58, right: 18, top: 34, bottom: 36 },
    legend: { type: "scroll", top: 0, left: 8, right: 8, data: groups.map(name),
              textStyle: { color: "#3b4356", fontSize: 11 } },
    tooltip: { trigger: "axis", formatter: hoverText },
    xAxis: { type: state.x === "wall" ? "time" : "value", scale: true,
             ...(zoomed ? stepExtent(tag) : {}),
             axisLabel: { color: "#6b7489", hideOverlap: true,
                          formatter: state.x === "relative" ? fmtDuration : undefined },
             splitLine: { show: false } },
    yAxis: { type: "value", scale: true, axisLabel: { color: "#6b7489", formatter: (v) => fmt(v) },
             splitLine: { lineStyle: { color: "#eef1f6" } } },
    series,
  }, { notMerge: true });
  chart.getDom().dataset.groups = String(groups.length);
  chart.resize();
}

// The view's state in the URL (#/scalars?run=a&tag=loss&smooth=0.6&group=optimizer...), so a
// link shows the same chart; replaced in place, never a new history entry per click.
function syncUrl() {
  const q = new URLSearchParams();
  for (const id of state.selected) q.append("run", id);
  for (const tag of state.tags.filter((t) => state.chosenTags && state.chosenTags.has(t))) q.append("tag", tag);
  q.set("x", state.x);
  q.set("smooth", String(state.smoothing));
  if (state.log) q.set("log", "1");
  if (state.view !== "merged") q.set("view", state.view);
  if (state.group) q.set("group", state.group);
  history.replaceState(null, "", `#/scalars?${q}`);
}

function applyUrl(query) {
  const q = new URLSearchParams(query);
  if (q.has("run")) state.selected = [...new Set(q.getAll("run"))];
  if (q.has("tag")) state.chosenTags = new Set(q.getAll("tag"));
  if (["step", "relative", "wall"].includes(q.get("x"))) state.x = q.get("x");
  const smooth = Number(q.get("smooth"));
  if (q.has("smooth") && smooth >= 0 && smooth < 1) state.smoothing = smooth;
  state.log = q.get("log") === "1";
  state.view = q.get("view") === "sessions" ? "sessions" : "merged";
  state.group = q.get("group") || "";
  // the controls show the state
  $("#smoothing").value = String(state.smoothing);
  $("#smoothing-value").textContent = state.smoothing.toFixed(2);
  $("#log-scale").checked = state.log;
  $("#sessions-apart").checked = state.view === "sessions";
  document.querySelectorAll("#x-axis button").forEach((b) => b.classList.toggle("on", b.dataset.x === state.x));
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
    button.addEventListener("click", () => {
      state.x = button.dataset.x;
      document.querySelectorAll("#x-axis button").forEach((b) => b.classList.toggle("on", b === button));
      drawCharts(state.tags.filter((t) => state.chosenTags.has(t)));
      syncUrl();
    });
  }
  $("#smoothing").addEventListener("input", (event) => {
    state.smoothing = Number(event.target.value);
    $("#smoothing-value").textContent = state.smoothing.toFixed(2);
    drawCharts(state.tags.filter((t) => state.chosenTags && state.chosenTags.has(t)));
    syncUrl();
  });
  $("#sessions-apart").addEventListener("change", (event) => {
    state.view = event.target.checked ? "sessions" : "merged";
    loadSeries();
  });
  $("#group-by").addEventListener("change", async (event) => {
    state.group = event.target.value;
    await loadGroupValues();
    renderRunList();
    drawCharts(state.tags.filter((t) => state.chosenTags && state.chosenTags.has(t)));
    syncUrl();
  });
  $("#log-scale").addEventListener("change", (event) => {
    state.log = event.target.checked;
    drawCharts(state.tags.filter((t) => state.chosenTags && state.chosenTags.has(t)));
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
  await loadRuns();
  if (!state.selected.length) state.selected = state.runs.slice(0, 3);
  renderRunList();
  await renderGroupChoices();
  await loadTags();
  await loadGroupValues();
  renderRunList();
  await loadSeries();
}

export async function refreshScalars() {
  await loadRuns();
  renderRunList();
  await loadTags();
  await loadSeries();
}
