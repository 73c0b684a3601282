// A run's loss landscapes: the 3-D surface (plotly.js, WebGL) with the training path drawn on
// it, and a contour view (ECharts, 2-D canvas) with the same path, which needs no WebGL.
// plotly.js (1.7 MB) is fetched only when the section is first opened.
import { api } from "./api.js";
import { expandable } from "./expand.js";
import { $, escapeHtml, fmt, h, loadScript, niceStep, niceTicks } from "./util.js";

const PLOTLY = "/static/vendor/plotly-gl3d-4.1.1/plotly-gl3d.min.js";
const BANDS = 12; // contour levels
const COLORS = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"]; // viridis, low to high
const PATH_COLOR = "#e5484d";
const TICK_MARGIN = 0.15; // 3-D: no tick this close (a fraction of the range) to an axis's end
const BOX = 0.5; // 3-D: plotly's scene box, in camera units, is [-BOX, BOX] on each axis
const LIFT = 0.03; // 3-D: the final-weights marker this far (of the loss range) above its loss
const MAX_ASPECT = 2; // contour: the plot at most this much wider than high (or higher than wide)

let runId = null;
let items = [];
let contour = null;
let contourItem = null;

function describe(item) {
  const span = item.intervals.length > 1
    ? `${item.unit || "step"}s ${item.intervals[0]}–${item.intervals.at(-1)}`
    : `${item.unit || "step"} ${item.intervals[0] ?? "?"}`;
  return `${item.kind === "train" ? "Training" : "Result"} (${item.decomposition}), ${span}`;
}

// What the plane's axes are: the principal directions with the share of the trajectory's
// variance each explains, or, where that was not recorded (MindSpore's files, trainledger
// before 0.2), "direction k"; a result landscape's directions are random.
function axisName(item, k) {
  const ratio = item.explained_variance?.[k];
  if (ratio !== undefined && ratio !== null) {
    return `PC${k + 1} (${Number((100 * ratio).toFixed(1))} % of variance)`;
  }
  return `${item.decomposition === "Random" ? "random " : ""}direction ${k + 1}`;
}

// The 3-D scene's axis titles: short ("PC1", "dir. 1"), since plotly draws them at the box's
// corners, where a long one ran off the canvas ("PC1 (95.9 % of varianc"); the caption above
// the views gives the long names.
function shortName(item, k) {
  return item.explained_variance?.[k] !== undefined && item.explained_variance?.[k] !== null
    ? `PC${k + 1}` : `dir. ${k + 1}`;
}

// One colour scale for both views: viridis' COLORS spread evenly over [lo, hi] (the contour
// levels' ends), linear in RGB as plotly and ECharts both interpolate.
function colorAt(value, lo, hi) {
  const t = Math.min(1, Math.max(0, (value - lo) / ((hi - lo) || 1))) * (COLORS.length - 1);
  const k = Math.min(COLORS.length - 2, Math.floor(t));
  const rgb = (c) => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));
  const [a, b] = [rgb(COLORS[k]), rgb(COLORS[k + 1])];
  const mix = a.map((v, i) => Math.round(v + (b[i] - v) * (t - k)));
  return `rgb(${mix.join(",")})`;
}

function colorscale() {
  return COLORS.map((c, k) => [k / (COLORS.length - 1), c]);
}

function zRange(item) {
  const values = item.z.flat().filter((v) => v !== null);
  return values.length ? [Math.min(...values), Math.max(...values)] : [0, 1];
}

// Contour levels at round losses (about BANDS of them) covering [lo, hi]: shared by the 3-D
// contour lines and the 2-D bands, so the legend reads "0.25 – 0.3".
function levels(item) {
  const [lo, hi] = zRange(item);
  const step = niceStep(hi - lo, BANDS);
  const start = Number((Math.floor(lo / step + 1e-9) * step).toPrecision(12));
  const out = [start];
  while (out.at(-1) < hi && out.length <= 2 * BANDS) out.push(Number((out.at(-1) + step).toPrecision(12)));
  if (out.length < 2) out.push(Number((start + step).toPrecision(12)));
  return out;
}

// The final weights: the path's last point (train) or the convergence point (result).
function finalPoint(item) {
  if (item.path && item.path.x.length) {
    return [item.path.x.at(-1), item.path.y.at(-1), item.path.z.at(-1)];
  }
  return item.convergence_point;
}

// Ticks at round values, none within TICK_MARGIN of an axis's ends: plotly puts the labels of
// two axes at the box's corners, where they met ("-2.5" over "0.3").
function sceneAxis(title, lo, hi) {
  const margin = TICK_MARGIN * (hi - lo);
  const ticks = niceTicks(lo, hi, 5).filter((v) => v >= lo + margin && v <= hi - margin);
  return { title: { text: title, font: { size: 12 } }, tickmode: "array", tickvals: ticks,
           ticktext: ticks.map(fmt), tickfont: { size: 12 } };
}

function surfaceTraces(item) {
  const lv = levels(item);
  const [xName, yName] = [axisName(item, 0), axisName(item, 1)];
  const traces = [{
    type: "surface", name: "loss", x: item.x, y: item.y, z: item.z,
    colorscale: colorscale(), cmin: lv[0], cmax: lv.at(-1),
    colorbar: { title: { text: "loss" }, len: 0.8, thickness: 14, tickvals: lv, ticktext: lv.map(fmt) },
    contours: { z: { show: true, start: lv[0], end: lv.at(-1), size: lv[1] - lv[0],
                     usecolormap: true, project: { z: true }, width: 1 } },
    hovertemplate: `${xName} %{x:.4g}<br>${yName} %{y:.4g}<br>loss %{z:.5g}<extra></extra>`,
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
    // Drawn LIFT of the loss range above the surface, where the depth test cannot bury it
    // in the bowl it sits in; its hover still says the loss at the final weights.
    const [lo, hi] = zRange(item);
    traces.push({
      type: "scatter3d", mode: "markers", name: "final weights",
      x: [last[0]], y: [last[1]], z: [last[2] + LIFT * ((hi - lo) || 1)], customdata: [last[2]],
      marker: { color: "#ffffff", size: 8, line: { color: "#1d2433", width: 3 } },
      hovertemplate: "final weights<br>loss %{customdata:.5g}<extra></extra>",
    });
  }
  return traces;
}

// Whether the straight line from the (lifted) final weights to a camera at `eye` passes above
// the surface wherever it crosses the grid: plotly's scene box is [-BOX, BOX] on each axis.
function seesFinal(item, last, eye) {
  const [lo, hi] = zRange(item);
  const unit = (v, a, b) => (2 * (v - a)) / ((b - a) || 1) - 1;
  const from = [unit(last[0], item.x[0], item.x.at(-1)), unit(last[1], item.y[0], item.y.at(-1)),
    unit(last[2] + LIFT * (hi - lo), lo, hi)];
  const to = [eye.x / BOX, eye.y / BOX, eye.z / BOX];
  for (let k = 1; k <= 100; k += 1) {
    const [u, v, w] = from.map((f, d) => f + (k / 100) * (to[d] - f));
    if (Math.abs(u) > 1 || Math.abs(v) > 1) continue;
    const i = Math.round(((v + 1) / 2) * (item.y.length - 1));
    const j = Math.round(((u + 1) / 2) * (item.x.length - 1));
    const z = item.z[i][j];
    if (z !== null && unit(z, lo, hi) > w + 0.02) return false;
  }
  return true;
}

// The camera: from the final weights' side of the grid first (seen from the other side, the
// slope the training came down hides where it ended), higher if the surface is in the way,
// straight above as the last resort (nothing of a height field lies above its own points).
function eye(item) {
  const last = finalPoint(item);
  if (!last || last.some((v) => v === null)) return { x: 1.5, y: -1.5, z: 1.1 };
  const side = (v, axis) => (v < (axis[0] + axis.at(-1)) / 2 ? -1 : 1);
  const [sx, sy] = [side(last[0], item.x), side(last[1], item.y)];
  for (const z of [1.1, 1.5, 2.0]) {
    for (const [a, b] of [[sx, sy], [sx, -sy], [-sx, sy], [-sx, -sy]]) {
      const candidate = { x: 1.4 * a, y: 1.4 * b, z };
      if (seesFinal(item, last, candidate)) return candidate;
    }
  }
  return { x: 0.2 * sx, y: 0.2 * sy, z: 2.4 };
}

async function drawSurface(box, item) {
  await loadScript(PLOTLY);
  const [lo, hi] = zRange(item);
  const layout = {
    margin: { l: 0, r: 0, t: 10, b: 0 }, showlegend: true, legend: { x: 0, y: 1 },
    scene: { xaxis: sceneAxis(shortName(item, 0), item.x[0], item.x.at(-1)),
             yaxis: sceneAxis(shortName(item, 1), item.y[0], item.y.at(-1)),
             zaxis: sceneAxis("loss", lo, hi), camera: { eye: eye(item) } },
    uirevision: "keep",
  };
  await window.Plotly.react(box, surfaceTraces(item), layout,
    { displaylogo: false, responsive: true });
}

// The plot rectangle, as large as the box allows and centred in it: with one scale for both
// axes (a unit of direction 1 as long on screen as a unit of direction 2) unless that makes
// it more than MAX_ASPECT times wider than high or higher than wide: a PCA plane whose first
// direction holds 97 % of the variance was a 420 x 75 px strip. `toScale` says which.
function plotGrid(box, xSpan, ySpan) {
  const m = { left: 80, right: 150, top: 20, bottom: 56 };
  const width = Math.max(1, box.clientWidth - m.left - m.right);
  const height = Math.max(1, box.clientHeight - m.top - m.bottom);
  const aspect = Math.min(MAX_ASPECT, Math.max(1 / MAX_ASPECT, xSpan / ySpan));
  const [w, h] = width / height > aspect ? [height * aspect, height] : [width, width / aspect];
  return { left: m.left + (width - w) / 2, top: m.top + (height - h) / 2, width: w, height: h,
           toScale: aspect === xSpan / ySpan };
}

// The heatmap's cells on hidden category axes; the visible value axes (and the path on them)
// span the same grid to half a cell past the first and last grid lines, so both line up.
// Their labels are ECharts' round ticks; the two ends, not round, are left unlabelled.
function contourOption(item, box) {
  const lv = levels(item);
  const half = (axis) => (axis.length > 1 ? (axis[1] - axis[0]) / 2 : 0.5);
  const span = (axis) => [axis[0] - half(axis), axis.at(-1) + half(axis)];
  const [[x0, x1], [y0, y1]] = [span(item.x), span(item.y)];
  const { toScale, ...grid } = plotGrid(box, x1 - x0, y1 - y0);
  const cells = [];
  item.z.forEach((row, i) => row.forEach((v, j) => { if (v !== null) cells.push([j, i, v]); }));
  const valueAxis = (name, [lo, hi], pixels, gap) => ({
    type: "value", name, nameLocation: "middle", nameGap: gap, min: lo, max: hi,
    splitNumber: Math.max(1, Math.min(5, Math.floor(pixels / 60))), splitLine: { show: false },
    axisLine: { onZero: false }, axisLabel: { formatter: (v) => (v === lo || v === hi ? "" : fmt(v)) },
  });
  const hiddenCategory = (axis) => ({ type: "category", show: false, data: axis.map(fmt) });
  const series = [{
    type: "heatmap", name: "loss", data: cells, xAxisIndex: 1, yAxisIndex: 1,
    emphasis: { disabled: true }, progressive: 0,
  }];
  if (item.path) {
    series.push({
      type: "line", name: "training path", xAxisIndex: 0, yAxisIndex: 0, symbolSize: 6,
      data: item.path.x.map((x, k) => [x, item.path.y[k], item.path.z[k]]),
      lineStyle: { color: PATH_COLOR, width: 2.5 }, itemStyle: { color: PATH_COLOR },
    });
  }
  const last = finalPoint(item);
  if (last) {
    series.push({
      type: "scatter", name: "final weights", xAxisIndex: 0, yAxisIndex: 0, symbolSize: 10,
      data: [last], itemStyle: { color: "#ffffff", borderColor: "#1d2433", borderWidth: 2 }, z: 5,
    });
  }
  const [xName, yName] = [axisName(item, 0), axisName(item, 1)];
  return {
    animation: false,
    grid,
    title: toScale ? undefined : { text: "(the two axes to different scales)", right: 150, bottom: 0,
      textStyle: { fontSize: 11, fontWeight: "normal", color: "#6b7489" } },
    tooltip: {
      trigger: "item",
      formatter: (p) => (p.seriesType === "heatmap"
        ? `${xName} ${fmt(item.x[p.value[0]])}, ${yName} ${fmt(item.y[p.value[1]])}<br>loss ${fmt(p.value[2])}`
        : `${escapeHtml(p.seriesName)}<br>loss ${fmt(p.value[2])}`),
    },
    xAxis: [valueAxis(xName, [x0, x1], grid.width, 30), hiddenCategory(item.x)],
    yAxis: [valueAxis(yName, [y0, y1], grid.height, 55), hiddenCategory(item.y)],
    visualMap: {
      type: "piecewise", seriesIndex: 0, orient: "vertical", right: 0, top: "middle",
      itemWidth: 14, itemHeight: 10, textStyle: { fontSize: 10 },
      pieces: lv.slice(0, -1).map((a, k) => ({ min: a, max: lv[k + 1], label: `${fmt(a)} – ${fmt(lv[k + 1])}`,
        color: colorAt((a + lv[k + 1]) / 2, lv[0], lv.at(-1)) })),
    },
    series,
  };
}

function drawContour(box, item) {
  if (!contour) {
    contour = echarts.init(box, null, { renderer: "canvas" });
    window.addEventListener("resize", () => { // the equal scale depends on the box's size
      contour.resize();
      if (contourItem) contour.setOption(contourOption(contourItem, box), { notMerge: true });
    });
  }
  contourItem = item;
  contour.resize();
  contour.setOption(contourOption(item, box), { notMerge: true });
}

async function draw(section) {
  const item = items[Number($("select", section).value)];
  if (!item) return;
  $(".landscape-info", section).textContent = `${item.x.length} × ${item.y.length} grid` +
    (item.path ? `, path of ${item.path.x.length} points` : "") +
    (item.source === "mindspore" ? ", written by MindSpore" : "");
  $(".landscape-axes", section).textContent = [0, 1].map((k) => (shortName(item, k) === axisName(item, k)
    ? "" : `${shortName(item, k)}: ${axisName(item, k)}`)).filter(Boolean).join(" · ");
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
  expandable($(".landscape-surface", section));
  expandable($(".landscape-contour", section));
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
