// A run's loss landscapes: the 3-D surface (plotly.js, WebGL) with the training path drawn on
// it, and a contour view (ECharts, 2-D canvas) with the same path, which needs no WebGL.
// plotly.js (1.7 MB) is fetched only when the section is first opened.
import { api } from "./api.js";
import { $, escapeHtml, fmt, h, loadScript } from "./util.js";

const PLOTLY = "/static/vendor/plotly-gl3d-4.1.1/plotly-gl3d.min.js";
const BANDS = 12; // contour levels
const COLORS = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"]; // viridis, low to high
const PATH_COLOR = "#e5484d";

let runId = null;
let items = [];
let contour = null;

function describe(item) {
  const span = item.intervals.length > 1
    ? `${item.unit || "step"}s ${item.intervals[0]}–${item.intervals.at(-1)}`
    : `${item.unit || "step"} ${item.intervals[0] ?? "?"}`;
  return `${item.kind === "train" ? "Training" : "Result"} (${item.decomposition}), ${span}`;
}

function zRange(item) {
  const values = item.z.flat().filter((v) => v !== null);
  return values.length ? [Math.min(...values), Math.max(...values)] : [0, 1];
}

// The final weights: the path's last point (train) or the convergence point (result).
function finalPoint(item) {
  if (item.path && item.path.x.length) {
    return [item.path.x.at(-1), item.path.y.at(-1), item.path.z.at(-1)];
  }
  return item.convergence_point;
}

function surfaceTraces(item) {
  const [lo, hi] = zRange(item);
  const step = (hi - lo) / BANDS || 1;
  const traces = [{
    type: "surface", name: "loss", x: item.x, y: item.y, z: item.z,
    colorscale: "Viridis", colorbar: { title: { text: "loss" }, len: 0.8, thickness: 14 },
    contours: { z: { show: true, start: lo, end: hi, size: step, usecolormap: true,
                     project: { z: true }, width: 1 } },
    hovertemplate: "x %{x:.4g}<br>y %{y:.4g}<br>loss %{z:.5g}<extra></extra>",
  }];
  if (item.path) {
    traces.push({
      type: "scatter3d", mode: "lines+markers", name: "training path",
      x: item.path.x, y: item.path.y, z: item.path.z,
      line: { color: PATH_COLOR, width: 6 }, marker: { color: PATH_COLOR, size: 3 },
      hovertemplate: "path<br>loss %{z:.5g}<extra></extra>",
    });
  }
  const last = finalPoint(item);
  if (last && last.every((v) => v !== null)) {
    traces.push({
      type: "scatter3d", mode: "markers", name: "final weights",
      x: [last[0]], y: [last[1]], z: [last[2]],
      marker: { color: "#ffffff", size: 5, line: { color: "#1d2433", width: 2 } },
      hovertemplate: "final weights<br>loss %{z:.5g}<extra></extra>",
    });
  }
  return traces;
}

async function drawSurface(box, item) {
  await loadScript(PLOTLY);
  const layout = {
    margin: { l: 0, r: 0, t: 10, b: 0 }, showlegend: true, legend: { x: 0, y: 1 },
    scene: { xaxis: { title: { text: "x" } }, yaxis: { title: { text: "y" } },
             zaxis: { title: { text: "loss" } }, camera: { eye: { x: 1.5, y: -1.5, z: 1.1 } } },
    uirevision: "keep",
  };
  await window.Plotly.react(box, surfaceTraces(item), layout,
    { displaylogo: false, responsive: true });
}

// Heatmap cells on category axes; the path on value axes laid over the same grid, whose
// ranges reach half a cell past the first and last grid lines so both line up.
function contourOption(item) {
  const [lo, hi] = zRange(item);
  const half = (axis) => (axis.length > 1 ? (axis[1] - axis[0]) / 2 : 0.5);
  const cells = [];
  item.z.forEach((row, i) => row.forEach((v, j) => { if (v !== null) cells.push([j, i, v]); }));
  const hiddenValue = (axis) => ({
    type: "value", show: false, gridIndex: 0,
    min: axis[0] - half(axis), max: axis.at(-1) + half(axis),
  });
  const series = [{
    type: "heatmap", name: "loss", data: cells, xAxisIndex: 0, yAxisIndex: 0,
    emphasis: { disabled: true }, progressive: 0,
  }];
  if (item.path) {
    series.push({
      type: "line", name: "training path", xAxisIndex: 1, yAxisIndex: 1, symbolSize: 6,
      data: item.path.x.map((x, k) => [x, item.path.y[k], item.path.z[k]]),
      lineStyle: { color: PATH_COLOR, width: 2.5 }, itemStyle: { color: PATH_COLOR },
    });
  }
  const last = finalPoint(item);
  if (last) {
    series.push({
      type: "scatter", name: "final weights", xAxisIndex: 1, yAxisIndex: 1, symbolSize: 10,
      data: [last], itemStyle: { color: "#ffffff", borderColor: "#1d2433", borderWidth: 2 }, z: 5,
    });
  }
  return {
    animation: false,
    grid: { left: 70, right: 150, top: 20, bottom: 50 },
    tooltip: {
      trigger: "item",
      formatter: (p) => (p.seriesType === "heatmap"
        ? `x ${fmt(item.x[p.value[0]])}, y ${fmt(item.y[p.value[1]])}<br>loss ${fmt(p.value[2])}`
        : `${escapeHtml(p.seriesName)}<br>loss ${fmt(p.value[2])}`),
    },
    xAxis: [
      { type: "category", data: item.x.map(fmt), name: "x", nameLocation: "middle", nameGap: 30,
        axisLabel: { interval: Math.max(0, Math.ceil(item.x.length / 8) - 1) }, splitArea: { show: false } },
      hiddenValue(item.x),
    ],
    yAxis: [
      { type: "category", data: item.y.map(fmt), name: "y", nameLocation: "middle", nameGap: 50,
        axisLabel: { interval: Math.max(0, Math.ceil(item.y.length / 8) - 1) } },
      hiddenValue(item.y),
    ],
    visualMap: {
      type: "piecewise", splitNumber: BANDS, min: lo, max: hi === lo ? lo + 1 : hi,
      seriesIndex: 0, orient: "vertical", right: 0, top: "middle", itemWidth: 14, itemHeight: 10,
      precision: 3, inRange: { color: COLORS }, textStyle: { fontSize: 10 },
    },
    series,
  };
}

function drawContour(box, item) {
  if (!contour) {
    contour = echarts.init(box, null, { renderer: "canvas" });
    window.addEventListener("resize", () => contour.resize());
  }
  contour.setOption(contourOption(item), { notMerge: true });
  contour.resize();
}

async function draw(section) {
  const item = items[Number($("select", section).value)];
  if (!item) return;
  $(".landscape-info", section).textContent = `${item.x.length} × ${item.y.length} grid` +
    (item.path ? `, path of ${item.path.x.length} points` : "") +
    (item.source === "mindspore" ? ", written by MindSpore" : "");
  drawContour($(".landscape-contour", section), item);
  section.dataset.contour = item.tag;
  const surface = $(".landscape-surface", section);
  try {
    await drawSurface(surface, item);
    section.dataset.drawn = item.tag;
  } catch (error) {
    surface.replaceChildren(h("div", { class: "error", text: `3-D view unavailable: ${error.message}` }));
  }
}

async function load(section) {
  const body = $(".media-body", section);
  const empty = $(".landscape-empty", section);
  try {
    const select = $("select", section);
    const shown = section.dataset.run === runId ? items[Number(select.value)]?.tag : undefined;
    items = (await api.landscapes(runId)).landscapes;
    section.dataset.run = runId;
    $(".landscape-views", section).hidden = !items.length;
    $(".landscape-controls", section).hidden = !items.length;
    empty.hidden = !!items.length;
    select.replaceChildren(...items.map((item, i) =>
      h("option", { value: String(i), text: `${item.tag}: ${describe(item)}` })));
    const keep = items.findIndex((item) => item.tag === shown); // a refresh keeps the choice
    if (keep >= 0) select.value = String(keep);
    if (items.length) await draw(section);
  } catch (error) {
    body.prepend(h("div", { class: "error", text: error.message }));
  }
  section.dataset.loaded = runId;
}

export function initLandscapes() {
  const section = document.getElementById("run-landscapes");
  section.addEventListener("toggle", () => { if (section.open && runId) load(section); });
  $("select", section).addEventListener("change", () => draw(section));
}

// Called for each run the page shows (as showMedia): reload if open, else wait to be opened.
export function showLandscapes(id) {
  runId = id;
  const section = document.getElementById("run-landscapes");
  delete section.dataset.loaded;
  delete section.dataset.drawn;
  if (section.open) load(section);
}
