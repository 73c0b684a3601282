// Model lineage: parallel coordinates over the chosen columns, brushing filters the table;
// the table is sorted and paged by the server; tags, remarks, selection, CSV, --where filter.
import { api } from "./api.js";
import { diffHash } from "./diff.js";
import { PARENT_COLUMN, parentCell } from "./family_column.js";
import { modelChip, modelsByRun } from "./model_map.js";
import { buildAxis, place } from "./parcoords_axes.js";
import { LineLayer, lineColors } from "./parcoords_lines.js";
import { colorAxisOf, lineOpacity, parcoordsOption } from "./parcoords_option.js";
import { selectRuns } from "./scalars.js";
import { $, colorFor, debounce, divergedText, escapeHtml, exact, fmt, fmtField, h, loadCharts, nonFiniteText, tagChip, toast } from "./util.js";

const STORE_KEY = "trainledger.columns";
const GROUP_ORDER = ["Metrics", "Series", "User defined", "Optimizer and scheduler", "Hyperparameters",
  "Family", "Other"];
// a series statistic of a scalar tag, e.g. max(eval/acc) (query/series_fields.py)
const SERIES_FIELD = /^(last|min|max|count|last_step|min_step|max_step|nonfinite_step)\(.+\)$/;

const state = {
  groups: null,          // {group: [column]}
  sortable: new Set(),
  columns: null,         // chosen columns, in display order
  where: [],             // compiled by the server from the filter box
  brush: {},             // column -> condition ops from axis brushes
  hidden: new Set(),     // run ids hidden by the user
  only: null,            // Set of run ids when "show only selected" is on
  selected: new Set(),
  sort: { name: null, type: null },
  page: 0,
  size: 20,
  count: 0,
  chart: null,
  axes: [],              // [{column, type, categories}]
  loaded: false,
  models: new Map(),      // run id -> its named-model versions (model_map.js: one request, cached)
};

export const lineageState = state; // read by the browser tests and the scalar view

function splitWhere(text) {
  // ";" and new lines separate expressions (ANDed); and/or/not are the grammar's own
  return text.split(/;|\n/).map((s) => s.trim()).filter(Boolean);
}

function selectionCondition() {
  if (state.only) return { summary_dir: { in: [...state.only].map((id) => `./${id}`) } };
  if (state.hidden.size) return { summary_dir: { not_in: [...state.hidden].map((id) => `./${id}`) } };
  return {};
}

function mergeInto(target, extra) {
  for (const [field, ops] of Object.entries(extra)) {
    const current = target[field] ? { ...target[field] } : {};
    for (const [op, value] of Object.entries(ops)) {
      if (op === "in" && current.in) current.in = current.in.filter((v) => value.includes(v));
      else if (op === "not_in" && current.not_in) current.not_in = [...new Set([...current.not_in, ...value])];
      else current[op] = value;
    }
    target[field] = current;
  }
  return target;
}

// a sortable run/<field> column (run/status) sorts by the query field of its name; the
// others of the run/ group (run/train_dataset_fingerprint) are query fields as they are named
const RUN_SORTS = new Set(["run/status", "run/duration", "run/sessions"]);
function sortField(column) {
  return RUN_SORTS.has(column) ? column.slice(4) : column;
}

function tableCondition(columns = state.columns) {
  const cond = mergeInto(mergeInto({}, selectionCondition()), state.brush);
  if (state.sort.name) {
    cond.sorted_name = sortField(state.sort.name);
    cond.sorted_type = state.sort.type;
  }
  const series = columns.filter((c) => SERIES_FIELD.test(c));
  if (series.length) cond.series = series; // their values come with each run
  cond.offset = state.page;
  cond.limit = state.size;
  return cond;
}

function showError(error) {
  const box = $("#filter-error");
  if (!error) { box.hidden = true; return; }
  box.textContent = error.message || String(error);
  box.hidden = false;
}

function defaultColumns(groups) {
  // few enough to fit 1400 px with Tag and Remark; the chooser adds the rest
  const metrics = groups.Metrics.filter((c) => c !== "loss").slice(0, 3);
  const picks = [
    "run/status",
    ...groups.Hyperparameters.filter((c) => c !== "device_num").slice(0, 3),
    "optimizer",
    ...groups["User defined"].slice(0, 2),
    "loss", ...metrics,
  ];
  const all = new Set(Object.values(groups).flat());
  return picks.filter((c) => all.has(c));
}

// "loss" is the training loss lineage records; "metric/loss" an evaluation metric: say so
function label(column) {
  if (column === "loss") return "train loss";
  if (column.startsWith("metric/")) return `${column.slice(7)} (eval)`;
  return column.startsWith("run/") ? column.slice(4) : column;
}

// ---- column chooser ----------------------------------------------------------------------

function savedColumns() {
  const saved = JSON.parse(localStorage.getItem(STORE_KEY) || "null");
  return Array.isArray(saved) && saved.length ? saved : null;
}

async function loadColumns() {
  const result = await api.columns({}, []);
  state.groups = result.groups;
  state.sortable = new Set(result.sortable);
  state.columns ??= savedColumns() || await variedDefaults(result.groups);
  renderColumnPanel();
}

// The first page of the table, asked at once beside the columns: its condition holds a
// column only if it is a series statistic, and the default columns hold none. loadTable
// takes it if its own condition turns out the same.
function askFirstPage() {
  const cond = tableCondition(savedColumns() || []);
  const result = api.search(cond, state.where);
  result.catch(() => {}); // loadTable reports its error, or asks again
  return { key: JSON.stringify([cond, state.where]), result };
}

// A column whose value is the same in every run tells runs apart no better than none (the
// CLI leaves such columns out too): the defaults keep only those that vary; "run/status" and
// the metrics stay (a result is worth seeing even when equal).
async function variedDefaults(groups) {
  const picks = defaultColumns(groups);
  const asked = api.points({}, [], picks, MAX_LINES);
  loadCharts(); // runs while the server answers
  const data = await asked;
  // the first chart draws these same runs' values: kept for it (loadChart), not asked again
  state.firstPoints = { columns: picks, data };
  if (data.run_ids.length < 2) return picks;
  const kept = picks.filter((c) => c === "run/status" || c === "loss" || c.startsWith("metric/")
    || !isConstant(data.columns[c] || []));
  // said next to the chart: which fields were left out, and their one value
  state.leftOut = picks.filter((c) => !kept.includes(c)).map((c) => [c, data.columns[c][0]]);
  return kept;
}

function isConstant(values) {
  if (values.length < 2 || values.some((v) => v === null || v === undefined)) return false;
  return values.every((v) => v === values[0]);
}

function renderColumnPanel() {
  const panel = $("#columns-panel");
  panel.replaceChildren();
  const chosen = new Set(state.columns);
  for (const group of GROUP_ORDER) {
    const names = (state.groups[group] || []).filter((c) => c !== "summary_dir");
    const box = h("div", {}, h("h3", { text: group }));
    if (!names.length) box.append(h("div", { class: "muted", text: "none" }));
    for (const name of names) {
      box.append(h("label", { title: name },
        h("input", {
          type: "checkbox", checked: chosen.has(name), dataset: { column: name },
          onchange: (event) => toggleColumn(name, event.target.checked),
        }),
        name));
    }
    panel.append(box);
  }
}

function toggleColumn(name, on) {
  state.columns = on ? [...state.columns, name] : state.columns.filter((c) => c !== name);
  if (!on) delete state.brush[name];
  localStorage.setItem(STORE_KEY, JSON.stringify(state.columns));
  reload();
}

// ---- parallel coordinates ----------------------------------------------------------------

function axisOrder(columns) {
  const rank = (c) => (c.startsWith("metric/") || c === "loss" ? 1 : 0);
  return [...columns].sort((a, b) => rank(a) - rank(b));
}

// SVG keeps every line inspectable (and testable); past a few thousand lines the DOM gets
// heavy, and ECharts' own canvas takes about a second for 5,000 lines, so large results are
// drawn by a canvas layer of our own under ECharts' axes (parcoords_lines.js).
const SVG_MAX_LINES = 1500;
const MAX_LINES = 5000;
let resizeWired = false;
let layer = null;

function lineLayer() {
  layer ??= new LineLayer($("#parcoords"), {
    tip: (i) => lineTip({ seriesType: "parallel", name: layer.rows[i].runId, value: layer.rows[i] }),
    open: (i) => { location.hash = `#/run/${encodeURIComponent(layer.rows[i].runId)}`; },
  });
  return layer;
}

function resizeChart() {
  if (!state.chart) return;
  state.chart.resize();
  if (layer) layer.redraw();
}

function chartFor(lines) {
  const renderer = lines > SVG_MAX_LINES ? "canvas" : "svg";
  if (state.chart && state.chartRenderer === renderer) return state.chart;
  if (state.chart) state.chart.dispose();
  state.chart = echarts.init($("#parcoords"), null, { renderer });
  state.chartRenderer = renderer;
  const filterTable = debounce(onBrush, 120);
  state.chart.on("axisareaselected", () => {
    if (layer) layer.redraw(); // the lines outside the brush dim at once; the table follows
    filterTable();
  });
  // a line is a run: clicking it opens the run
  state.chart.on("click", (params) => {
    if (params.seriesType === "parallel" && params.name) location.hash = `#/run/${encodeURIComponent(params.name)}`;
  });
  if (!resizeWired) {
    window.addEventListener("resize", resizeChart);
    resizeWired = true;
  }
  return state.chart;
}

function painted() {
  const frame = new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  return Promise.race([frame, new Promise((done) => setTimeout(done, 50))]);
}

// the constant check's values (variedDefaults), once, if they are what the chart would ask
function firstPoints(columns) {
  const first = state.firstPoints;
  state.firstPoints = null;
  const unfiltered = !state.where.length && !state.only && !state.hidden.size;
  return first && unfiltered && columns.every((c) => first.columns.includes(c)) ? first.data : null;
}

async function pointsAndCharts(columns) {
  const asked = api.points(selectionCondition(), state.where, columns, MAX_LINES);
  loadCharts();
  return asked;
}

// after: what to wait for before drawing (the table: its rows are painted first, since the
// drawing is one long task; a frame at most, and no wait in a hidden tab)
async function loadChart(after = null) {
  const el = $("#parcoords");
  const columns = axisOrder(state.columns.filter((c) => !c.startsWith("run/")));
  const data = firstPoints(columns) || await pointsAndCharts(columns);
  await Promise.all([loadCharts(), after]);
  if (after) await painted();
  chartFor(data.run_ids.length);
  $("#chart-note").hidden = data.count <= data.run_ids.length;
  $("#chart-note").textContent = `drawing the newest ${data.run_ids.length} of ${data.count} runs`;
  state.brush = {};
  updateBrushInfo();
  const axes = [];
  const constant = [];
  for (const column of columns) {
    const values = data.columns[column] || [];
    const present = values.filter((v) => v !== null && v !== undefined);
    if (!present.length) continue;
    if (data.run_ids.length > 1 && isConstant(values)) {  // an axis that separates nothing
      constant.push(`${label(column)} = ${fmt(values[0])}`);
      continue;
    }
    axes.push(buildAxis(column, values));
  }
  state.axes = axes;
  for (const [column, value] of state.leftOut || []) {
    if (!state.columns.includes(column)) constant.push(`${label(column)} = ${fmt(value)}`);
  }
  $("#chart-constant").hidden = !constant.length;
  $("#chart-constant").textContent = `same in every run, not shown: ${constant.join(", ")}`;
  // every run has a place on every axis: a missing or non-finite value too (parcoords_axes.js)
  const rows = data.run_ids.map((id, i) => {
    const row = axes.map((a) => place(a, a.values[i]));
    row.runId = id;
    return row;
  });
  state.runIndex = new Map(data.run_ids.map((id, i) => [id, i]));
  const big = rows.length > SVG_MAX_LINES && axes.length > 0;
  const colorAxis = colorAxisOf(axes);
  const colors = colorAxis
    ? lineColors(colorAxis.values, { min: colorAxis.lo, max: colorAxis.hi }, colorFor(0)) : [];
  const { option } = parcoordsOption(axes, rows, {
    label, tip: lineTip, big, colors, empty: data.count ? "Choose numeric or text columns to draw" : "No runs to draw",
  });
  const drawn = { axes: option.parallelAxis.map((a, i) => ({ numeric: axes[i].numeric, log: a.type === "log", data: a.data })),
    rows, colors: colorAxis ? colors : rows.map(() => colorFor(0)), opacity: lineOpacity(rows.length) };
  state.chart.setOption(option, { notMerge: true });
  if (big) {
    lineLayer().show(state.chart, drawn);
  } else if (layer) {
    layer.hide();
  }
  el.dataset.lines = String(rows.length);
}

// a line's hover: its run, and its value on every axis as the table shows it (NaN as "NaN",
// not the place it is drawn at)
function lineTip(params) {
  if (params.seriesType !== "parallel") return "";
  const i = state.runIndex.get(params.name);
  const lines = state.axes.map((a) =>
    `${escapeHtml(label(a.column))}: <b>${escapeHtml(fmtField(a.column, a.values[i]))}</b>`);
  return [`<b>${escapeHtml(params.name)}</b> · click to open`, ...lines].join("<br>");
}

function onBrush() {
  const model = state.chart.getModel();
  const brush = {};
  state.axes.forEach((axis, i) => {
    const axisModel = model.getComponent("parallelAxis", i);
    const intervals = (axisModel && axisModel.activeIntervals) || [];
    if (!intervals.length) return;
    if (axis.numeric) {
      const lo = Math.min(...intervals.map((iv) => iv[0]));
      const hi = Math.max(...intervals.map((iv) => iv[1]));
      brush[axis.column] = { ge: lo, le: hi };
    } else {
      const names = axisModel.option.data || [];
      const picked = names.filter((_, k) => intervals.some(([lo, hi]) => k >= lo - 1e-9 && k <= hi + 1e-9));
      brush[axis.column] = { in: picked.filter((n) => n !== "—") };
    }
  });
  state.brush = brush;
  state.page = 0;
  updateBrushInfo();
  loadTable().catch(showError);
}

function updateBrushInfo() {
  const n = Object.keys(state.brush).length;
  $("#brush-info").hidden = !n;
  $("#brush-info").textContent = `${n} axis filter${n === 1 ? "" : "s"}`;
  $("#brush-clear").hidden = !n;
}

// ---- table -------------------------------------------------------------------------------

async function loadTable() {
  const cond = tableCondition();
  const early = state.firstPage;
  state.firstPage = null;
  const same = early && early.key === JSON.stringify([cond, state.where]);
  const [result, models] = await Promise.all([same ? early.result : api.search(cond, state.where),
    modelsByRun()]);
  state.models = models;
  state.count = result.count;
  const pages = Math.max(1, Math.ceil(result.count / state.size));
  if (state.page >= pages && result.count) {
    state.page = pages - 1;
    return loadTable();
  }
  renderTable(result.object);
  showNotes(result.warnings || []);
  return result;
}

// a field no run has (a typo, usually): the answer's warnings name the nearest the runs have
function showNotes(notes) {
  $("#filter-note").textContent = notes.join("\n");
  $("#filter-note").hidden = !notes.length;
}

// grouped fields by prefix -> the model_lineage key holding them (query/fields.py GROUPS)
const GROUPS = {
  "metric/": "metric", "user_defined/": "user_defined",
  "optimizer/": "optimizer_settings", "scheduler/": "scheduler_settings",
};

function cellValue(obj, column) {
  if (SERIES_FIELD.test(column)) return (obj.series || {})[column];
  const lineage = obj.model_lineage || {};
  for (const [prefix, group] of Object.entries(GROUPS)) {
    if (column.startsWith(prefix)) return (lineage[group] || {})[column.slice(prefix.length)];
  }
  if (column.includes("/")) {  // parent/run, run/train_dataset_fingerprint; run/status from the run record
    const [group, key] = column.split("/", 2);
    const value = (lineage[group] || {})[key];
    return value === undefined ? (obj[group] || {})[key] : value;
  }
  return lineage[column];
}

function renderTable(objects) {
  const thead = $("#runs-table thead");
  const tbody = $("#runs-table tbody");
  const head = h("tr", {},
    h("th", {}, h("input", {
      type: "checkbox", title: "Select all on this page",
      checked: objects.length > 0 && objects.every((o) => state.selected.has(o.run_id)),
      onchange: (event) => {
        for (const o of objects) {
          if (event.target.checked) state.selected.add(o.run_id); else state.selected.delete(o.run_id);
        }
        renderTable(objects);
      },
    })),
    sortHeader("summary_dir", "Run"),
    // right-aligned over numbers, as their cells (the page's own values: the table may be
    // drawn before the chart knows its axes)
    ...state.columns.map((c) => sortHeader(c, label(c), objects.some((o) => typeof cellValue(o, c) === "number"))),
    h("th", { text: "Tag" }),
    h("th", { text: "Remark" }));
  thead.replaceChildren(head);
  tbody.replaceChildren(...objects.map((obj) => {
    const id = obj.run_id;
    const info = obj.added_info || {};
    const row = h("tr", { class: state.selected.has(id) ? "selected" : "", dataset: { run: id } },
      h("td", {}, h("input", {
        type: "checkbox", checked: state.selected.has(id), "aria-label": `select ${id}`,
        onchange: (event) => {
          if (event.target.checked) state.selected.add(id); else state.selected.delete(id);
          row.classList.toggle("selected", event.target.checked);
          updateSelectionInfo();
        },
      })),
      h("td", {}, h("a", { class: "run-link", href: `#/run/${id}`, text: id, title: id }),
        modelChip(state.models.get(id)),
        ...(obj.nonfinite && obj.nonfinite.length
          ? [h("span", { class: "badge diverged", text: "diverged", title: divergedText(obj.nonfinite) })]
          : [])),
      ...state.columns.map((c) => {
        const v = cellValue(obj, c);
        if (c === PARENT_COLUMN) {
          const parent = (obj.model_lineage || {}).parent;
          return h("td", { dataset: { column: c }, class: parent ? "" : "null" }, ...parentCell(parent));
        }
        if (c === "run/status") {
          return h("td", { dataset: { column: c }, title: v || "" },
            v ? h("span", { class: `badge ${v}`, text: v }) : "—");
        }
        // one formatting everywhere (format.js): times as dates, durations with a unit, NaN as
        // "NaN" and a missing value as "—"; the title holds the exact value
        const numeric = typeof v === "number" || nonFiniteText(v) !== null;
        return h("td", {
          class: `${numeric ? "num" : ""} ${v === null || v === undefined ? "null" : ""}`,
          title: exact(v), dataset: { column: c },
        }, fmtField(c, v));
      }),
      h("td", {}, tagChip(info.tag || 0, (tag) => saveAnnotation(id, { tag }))),
      h("td", {}, remarkInput(id, info.remark || "")));
    return row;
  }));
  $("#table-empty").hidden = objects.length > 0;
  sayEmpty();
  const start = state.count ? state.page * state.size + 1 : 0;
  const end = Math.min(state.count, (state.page + 1) * state.size);
  $("#page-info").textContent = `${start}–${end} of ${state.count}`;
  $("#table-count").textContent = `${state.count} run${state.count === 1 ? "" : "s"}`;
  $("#page-prev").disabled = state.page === 0;
  $("#page-next").disabled = end >= state.count;
  $("#show-all").hidden = !(state.only || state.hidden.size);
  updateSelectionInfo();
}

// no run at all is not "nothing matched": say where the page looked (again when the status,
// which may answer after the table, says how many runs the base holds)
export function sayEmpty() {
  $("#table-empty").textContent = $("#run-count").textContent === "0"
    ? `No runs under ${$("#base-name").textContent}.` : "No runs match.";
}

function updateSelectionInfo() {
  const n = state.selected.size;
  $("#selection-info").textContent = n ? `${n} selected` : "";
  $("#hide-selected").disabled = !n;
  $("#compare-selected").disabled = !n;
  $("#diff-selected").disabled = n < 2;
  $("#only-selected").disabled = !n;
}

function sortHeader(column, text, numeric = false) {
  const sortable = column === "summary_dir" || state.sortable.has(column);
  const on = state.sort.name === column;
  const arrow = on ? (state.sort.type === "descending" ? "▼" : "▲") : "";
  return h("th", {
    class: `${sortable ? "sortable" : ""} ${numeric ? "num" : ""} ${on ? "sorted" : ""}`,
    dataset: { column }, title: sortable ? `Sort by ${column}` : column,
    onclick: sortable ? () => cycleSort(column) : undefined,
  }, text, arrow ? h("span", { class: "arrow", text: arrow }) : null);
}

function cycleSort(column) {
  if (state.sort.name !== column) state.sort = { name: column, type: "ascending" };
  else if (state.sort.type === "ascending") state.sort = { name: column, type: "descending" };
  else state.sort = { name: null, type: null };
  state.page = 0;
  loadTable().catch(showError);
}

function remarkInput(id, remark) {
  const input = h("input", { class: "remark", value: remark, maxlength: "1000",
                             placeholder: "add a remark", "aria-label": `remark for ${id}` });
  const save = async () => {
    if (input.value === remark) return;
    await saveAnnotation(id, { remark: input.value });
    remark = input.value;
    input.classList.add("saved");
    setTimeout(() => input.classList.remove("saved"), 1200);
  };
  input.addEventListener("change", save);
  input.addEventListener("keydown", (event) => { if (event.key === "Enter") input.blur(); });
  return input;
}

async function saveAnnotation(id, patch) {
  try {
    await api.annotate(id, patch);
    toast(patch.tag !== undefined ? `Tag of ${id} set to ${patch.tag}` : `Remark of ${id} saved`);
    if (patch.tag !== undefined) await loadTable();
  } catch (error) {
    toast(`Not saved: ${error.message}`);
  }
}

// ---- wiring ------------------------------------------------------------------------------

async function reload() {
  showError(null);
  // the table does not wait for the chart: both requests go out at once (a redrawn chart
  // has no brush, so the table's condition drops it before either starts), and the chart's
  // drawing, a long task, waits for the table's rows to be on screen
  state.brush = {};
  updateBrushInfo();
  const table = loadTable();
  await Promise.all([loadChart(table.catch(() => null)), table]);
}

async function downloadCsv() {
  const cond = tableCondition();
  delete cond.offset;
  delete cond.limit;
  const blob = await api.exportCsv(cond, state.where, ["run_id", ...state.columns, "tag", "remark"]);
  const url = URL.createObjectURL(blob);
  const a = h("a", { href: url, download: "trainledger-runs.csv" });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function wire() {
  $("#filter-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const where = splitWhere($("#filter-input").value);
    try {
      await api.search({ limit: 1, offset: 0 }, where); // validate before changing the view
      state.where = where;
      state.page = 0;
      await reload();
    } catch (error) {
      showError(error);
    }
  });
  $("#filter-clear").addEventListener("click", () => {
    $("#filter-input").value = "";
    state.where = [];
    state.page = 0;
    reload().catch(showError);
  });
  $("#columns-btn").addEventListener("click", (event) => {
    event.stopPropagation();
    const panel = $("#columns-panel");
    panel.hidden = !panel.hidden;
    $("#columns-btn").setAttribute("aria-expanded", String(!panel.hidden));
  });
  document.addEventListener("click", (event) => {
    if (!event.target.closest(".dropdown")) $("#columns-panel").hidden = true;
  });
  $("#csv-btn").addEventListener("click", () => downloadCsv().catch(showError));
  $("#brush-clear").addEventListener("click", () => reload().catch(showError));
  $("#page-size").addEventListener("change", (event) => {
    state.size = Number(event.target.value);
    state.page = 0;
    loadTable().catch(showError);
  });
  $("#page-prev").addEventListener("click", () => { state.page -= 1; loadTable().catch(showError); });
  $("#page-next").addEventListener("click", () => { state.page += 1; loadTable().catch(showError); });
  $("#hide-selected").addEventListener("click", () => {
    for (const id of state.selected) state.hidden.add(id);
    if (state.only) state.only = new Set([...state.only].filter((id) => !state.selected.has(id)));
    state.selected.clear();
    state.page = 0;
    reload().catch(showError);
  });
  $("#compare-selected").addEventListener("click", () => {
    selectRuns([...state.selected]);
    window.location.hash = "#/scalars";
  });
  $("#diff-selected").addEventListener("click", () => {
    window.location.hash = diffHash([...state.selected]);
  });
  $("#only-selected").addEventListener("click", () => {
    state.only = new Set(state.selected);
    state.hidden.clear();
    state.selected.clear();
    state.page = 0;
    reload().catch(showError);
  });
  $("#show-all").addEventListener("click", () => {
    state.only = null;
    state.hidden.clear();
    state.page = 0;
    reload().catch(showError);
  });
}

let wired = false;

export async function showLineage() {
  if (!wired) { wire(); wired = true; }
  if (!state.loaded) {
    state.firstPage = askFirstPage();
    modelsByRun();  // (asked now: it answers while the columns load)
    await loadColumns();
    await reload();
    state.loaded = true;
  } else {
    resizeChart();
    // a model registered or an alias moved since (the run page, the models page): new chips
    if ((await modelsByRun()) !== state.models) await loadTable();
  }
}

// New runs appeared: refresh columns and the table; redraw the chart unless the user is brushing.
export async function refreshLineage() {
  if (!state.loaded) return;
  await loadColumns();
  if (!Object.keys(state.brush).length) await loadChart();
  await loadTable();
}
