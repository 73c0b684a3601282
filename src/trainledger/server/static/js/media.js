// A run's images, histograms and tensors (TensorBoard and MindSpore summaries alike).
// Each view is a closed <details>: nothing is read until it is opened, then on each re-open.
// Tags and values reach the page through textContent / attributes only (see util.h), and the
// chart's tooltips go through escapeHtml.
import { api } from "./api.js";
import { expandable } from "./expand.js";
import { $, escapeHtml, fmt, h } from "./util.js";

let runId = null;
let histChart = null;

function done(section) {
  section.dataset.loaded = runId;
}

function failed(body, error) {
  body.replaceChildren(h("div", { class: "error", text: error.message }));
}

function slider(count, onInput) {
  const input = h("input", { type: "range", min: "0", max: String(Math.max(0, count - 1)),
    value: String(Math.max(0, count - 1)), class: "step-slider" });
  input.addEventListener("input", () => onInput(Number(input.value)));
  return input;
}

// --- images ---------------------------------------------------------------------------------

function imageFigure(id, item) {
  const img = h("img", { class: "summary-image", alt: item.tag });
  const label = h("span", { class: "muted" });
  const show = (index) => {
    img.src = api.imageUrl(id, item.tag, index);
    label.textContent = `step ${item.steps[index]} (${index + 1} of ${item.steps.length})`;
  };
  const figure = h("figure", { class: "image-card" },
    h("figcaption", { text: item.tag }), img,
    h("div", { class: "slider-row" }, slider(item.steps.length, show), label));
  show(item.steps.length - 1);
  return figure;
}

async function loadImages(section) {
  const body = $(".media-body", section);
  try {
    const { tags } = await api.imageTags(runId);
    body.replaceChildren(...(tags.length ? tags.map((t) => imageFigure(runId, t))
      : [h("div", { class: "empty", text: "No images in this run's summaries." })]));
  } catch (error) { failed(body, error); }
  done(section);
}

// --- histograms -----------------------------------------------------------------------------

function blend(a, b, t) {
  const mix = (i) => Math.round(a[i] + (b[i] - a[i]) * t);
  return `rgb(${mix(0)},${mix(1)},${mix(2)})`;
}

const OLDEST = [255, 152, 0]; // a step's colour: from the first step's orange ...
const NEWEST = [33, 82, 160]; // ... to the last step's blue, in proportion to the step
const PEAK_ROWS = 3; // offset mode: the tallest bar rises this many rows above its baseline
const STEP_LABEL_PX = 18; // offset mode: the least height between two step labels

// Offset mode draws row i (the newest at the bottom) on baseline n - 1 - i, counts scaled so
// the peak is PEAK_ROWS rows: the y axis is then in rows, and its labels name the steps of
// every k-th baseline, k chosen so labels never overlap. Overlay mode's y axis is the count.
// Overlay mode has a key for the steps' colours: a colour bar from the first step to the last
// (an ECharts visualMap on an empty series: it colours nothing, each line has its own colour).
// Both value axes sit at the plot's edges (onZero off), not where the other axis crosses 0.
// In offset mode each line is filled white down to its baseline, so a newer step hides the
// older ones behind it (TensorBoard's look) instead of a tangle of crossing lines.
function histogramOption(data, mode, plotHeight) {
  const centers = data.edges.slice(0, -1).map((e, i) => (e + data.edges[i + 1]) / 2);
  const rows = data.histograms;
  const peak = Math.max(1e-12, ...rows.flatMap((r) => r.counts));
  const offset = mode === "offset";
  const n = rows.length;
  const top = offset ? n - 1 + PEAK_ROWS : undefined;
  const [first, last] = [rows[0].step, rows.at(-1).step];
  const series = rows.map((row, i) => {
    const base = offset ? n - 1 - i : 0;
    const scale = offset ? PEAK_ROWS / peak : 1;
    return {
      type: "line", name: `step ${row.step}`, showSymbol: false, smooth: false,
      z: i, lineStyle: { width: 1.2, color: blend(OLDEST, NEWEST, last > first ? (row.step - first) / (last - first) : 1) },
      data: centers.map((x, j) => [x, base + row.counts[j] * scale, row.counts[j]]),
      areaStyle: offset ? { color: "#fff", opacity: 1, origin: base } : undefined,
    };
  });
  const every = offset ? Math.max(1, Math.ceil(STEP_LABEL_PX / (plotHeight / top))) : undefined;
  const stepLabel = (v) => {
    const i = n - 1 - v;
    return Number.isInteger(i) && i >= 0 && i < n ? String(rows[i].step) : "";
  };
  const edge = { show: true, onZero: false };
  const key = offset ? undefined : {
    type: "continuous", seriesIndex: n, min: first, max: Math.max(last, first + 1e-9),
    calculable: false, orient: "horizontal", right: 44, top: 0, itemWidth: 10, itemHeight: 160,
    text: [`step ${last}`, `step ${first}`], textGap: 6, textStyle: { fontSize: 11 },
    inRange: { color: [blend(OLDEST, NEWEST, 0), blend(OLDEST, NEWEST, 1)] },
  };
  if (key) series.push({ type: "line", name: "", data: [], silent: true });
  return {
    animation: false,
    grid: { left: offset ? 30 : 70, right: offset ? 70 : 30, top: offset ? 20 : 40, bottom: 40 },
    visualMap: key,
    tooltip: {
      trigger: "item",
      formatter: (p) => `${escapeHtml(p.seriesName)}<br>x ${fmt(p.value[0])}: ${fmt(p.value[2])}`,
    },
    xAxis: { type: "value", scale: true, name: "value", nameLocation: "middle", nameGap: 26,
      axisLine: edge, axisLabel: { formatter: fmt } },
    yAxis: offset
      ? { type: "value", position: "right", min: 0, max: top, interval: every, name: "step",
          nameLocation: "middle", nameGap: 50, nameRotate: -90, axisLine: edge,
          axisTick: { show: true }, splitLine: { show: false }, axisLabel: { formatter: stepLabel } }
      : { type: "value", position: "left", name: "count", nameLocation: "middle", nameGap: 50,
          axisLine: edge, axisLabel: { formatter: fmt } },
    series,
  };
}

// A weight tensor first (docs/web-ui.md, "Histograms"): the first tag naming a weight
// ("fc.weight", MindSpore's "fc.weight/auto") rather than a bias or an input.
function defaultTag(tags) {
  return (tags.find((t) => /weight/i.test(t.tag)) || tags[0]).tag;
}

async function drawHistogram(section) {
  const tag = $("select", section).value;
  const mode = $("input[name=hist-mode]:checked", section).value;
  if (!tag) return;
  const data = await api.histogramSeries(runId, tag);
  if (!histChart) {
    histChart = echarts.init($(".hist-chart", section), null, { renderer: "svg" });
    window.addEventListener("resize", () => histChart.resize());
  }
  histChart.resize();
  const option = histogramOption(data, mode, histChart.getHeight() - 60); // less grid top + bottom
  histChart.setOption(option, { notMerge: true });
  $(".hist-info", section).textContent =
    `${data.histograms.length} of ${data.total} steps, ${data.histograms[0].step}–${data.histograms.at(-1).step}`;
  section.dataset.drawn = tag;
  section.dataset.mode = mode;
}

async function loadHistograms(section) {
  const body = $(".media-body", section);
  try {
    const { tags } = await api.histogramTags(runId);
    const controls = $(".hist-controls", section);
    controls.hidden = !tags.length;
    $(".hist-chart", section).hidden = !tags.length;
    $(".hist-empty", section).hidden = !!tags.length;
    const select = $("select", section);
    const shown = section.dataset.run === runId ? select.value : undefined;
    section.dataset.run = runId;
    select.replaceChildren(...tags.map((t) =>
      h("option", { value: t.tag, text: `${t.tag} (${t.count})` })));
    if (tags.length) {  // a reload of the same run keeps the tag chosen
      select.value = tags.some((t) => t.tag === shown) ? shown : defaultTag(tags);
      await drawHistogram(section);
    }
  } catch (error) { failed(body, error); }
  done(section);
}

// --- tensors --------------------------------------------------------------------------------

function valuesTable(view) {
  const cols = view.shape.length >= 2 ? view.shape.at(-1) : Math.min(view.size, 16) || 1;
  const table = h("table", { class: "runs tensor-values" });
  for (let r = 0; r * cols < view.values.length; r += 1) {
    table.append(h("tr", {}, view.values.slice(r * cols, (r + 1) * cols)
      .map((v) => h("td", { class: "num", text: fmt(v) }))));
  }
  return table;
}

async function showTensor(box, tag, index) {
  const view = await api.tensorValue(runId, tag, index);
  const facts = [["step", view.step], ["shape", `[${view.shape.join(", ")}]`], ["dtype", view.dtype],
    ["size", view.size], ...Object.entries(view.stats || {})];
  const dl = h("dl", { class: "kv" }, facts.flatMap(([k, v]) => [h("dt", { text: k }), h("dd", { text: fmt(v) })]));
  box.replaceChildren(dl, view.values ? valuesTable(view)
    : h("div", { class: "muted", text: `${view.size} values: statistics only` }));
}

function tensorCard(item) {
  const box = h("div", { class: "tensor-view" });
  const label = h("span", { class: "muted" });
  const show = (index) => {
    label.textContent = `step ${item.steps[index]} (${index + 1} of ${item.steps.length})`;
    return showTensor(box, item.tag, index);
  };
  const card = h("figure", { class: "tensor-card" }, h("figcaption", { text: item.tag }),
    h("div", { class: "slider-row" }, slider(item.steps.length, show), label), box);
  return { card, first: show(item.steps.length - 1) };
}

async function loadTensors(section) {
  const body = $(".media-body", section);
  try {
    const { tags } = await api.tensorTags(runId);
    const cards = tags.map(tensorCard);
    body.replaceChildren(...(cards.length ? cards.map((c) => c.card)
      : [h("div", { class: "empty", text: "No tensors in this run's summaries." })]));
    await Promise.all(cards.map((c) => c.first));
  } catch (error) { failed(body, error); }
  done(section);
}

// --- wiring ---------------------------------------------------------------------------------

const LOADERS = { "run-images": loadImages, "run-histograms": loadHistograms, "run-tensors": loadTensors };

export function initMedia() {
  for (const [id, load] of Object.entries(LOADERS)) {
    const section = document.getElementById(id);
    section.addEventListener("toggle", () => {
      if (section.open && runId) load(section);
    });
  }
  const hist = document.getElementById("run-histograms");
  expandable($(".hist-chart", hist));
  $("select", hist).addEventListener("change", () => drawHistogram(hist));
  for (const radio of hist.querySelectorAll("input[name=hist-mode]")) {
    radio.addEventListener("change", () => drawHistogram(hist));
  }
}

// Called for each run the page shows: open views reload for the new run; closed ones wait.
export function showMedia(id) {
  runId = id;
  for (const [sectionId, load] of Object.entries(LOADERS)) {
    const section = document.getElementById(sectionId);
    delete section.dataset.loaded;
    if (section.open) load(section);
  }
}
