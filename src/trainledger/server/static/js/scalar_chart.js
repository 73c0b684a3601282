// One Compare-scalars chart's ECharts option: its lines (or its groups' means and bands), the
// y range of the drawn (and, zoomed, the visible) points with outliers clipped and marked
// (scalar_axis.js), the hover of every line's nearest point (scalar_hover.js) and a legend
// that shows every series, wrapped over as many rows as it needs (never paged: issue 51 item 6).
import { bandSeries, groupModels } from "./scalar_groups.js";
import { clippedSeries, tickFormatter, yRange } from "./scalar_axis.js";
import { nearestHover } from "./scalar_hover.js";
import { X_NAMES, hoverLine, lineModels, lineSeries } from "./scalar_lines.js";
import { markSeries, withNonfinite } from "./scalar_marks.js";
import { fmtDuration, fmtTime } from "./util.js";

const LEGEND_ROW = 20;

// The rows a plain legend of `names` takes in `width` pixels (ECharts wraps it so)
function legendRows(names, width) {
  let rows = 1;
  let used = 0;
  for (const name of names) {
    const w = name.length * 6.6 + 34;
    if (used && used + w > width - 16) { rows += 1; used = 0; }
    used += w;
  }
  return names.length ? rows : 0;
}

function xLabel(x) {
  if (x === "relative") return (v) => fmtDuration(v);
  if (x === "wall") return (v) => fmtTime(v / 1000);
  return (v) => `${X_NAMES[x]} ${Number(Number(v).toPrecision(6))}`;
}

// The y values drawn inside `window` ({min, max} of x, or none): what the axis is fitted to
function drawnYs(datasets, window) {
  const ys = [];
  for (const data of datasets) {
    for (const p of data) {
      if (window && (p[0] < window.min || p[0] > window.max)) continue;
      if (p[1] !== null && Number.isFinite(p[1])) ys.push(p[1]);
    }
  }
  return ys;
}

// The parts of the option that depend on what is drawn: {series, hover lines, legend names}
function content(lines, opts) {
  const models = lineModels(lines, opts);
  if (!opts.group) {
    const colors = models.map((m) => m.color);
    const marks = markSeries(models.map((m) => ({ ...m.source, run_id: m.name })), models.map((m) => m.data), colors);
    const parts = (m, line) => (line ? (m.smoothed ? [line.data, line.raw] : [line.data]) : []);
    return { models, series: [...lineSeries(models), ...marks], hover: models.map(hoverLine),
             legend: models.map((m) => m.name),
             datasets: models.flatMap((m) => [...parts(m, m), ...parts(m, m.parent)]) };
  }
  const groups = groupModels(models, opts.groupOf, { stepAxis: opts.x === "step" });
  const series = [];
  const hover = [];
  for (const g of groups) {
    const name = `${opts.group} = ${g.key} (${g.runs.length} run${g.runs.length > 1 ? "s" : ""})`;
    const color = opts.groupColor(g.key);
    series.push(bandSeries(name, color, g.band, opts.log),
      { type: "line", name, showSymbol: false, color, lineStyle: { width: 1.8 }, z: 2, data: g.data });
    hover.push({ name, color, data: g.data, smoothed: false });
  }
  const datasets = [...groups.map((g) => g.data), ...groups.map((g) => g.band.flat().flatMap((p) => [[p[0], p[1]], [p[0], p[2]]]))];
  return { models, series, hover, legend: hover.map((l) => l.name), datasets, groups };
}

// Draws `lines` (the series API's answer for one tag) on `chart`; `opts`: the view's state
// ({x, weight, explicit, apart, log, ignoreOutliers, group, window, continued}) and its lookups
export function drawScalarChart(chart, lines, opts) {
  const drawn = content(lines, opts);
  const range = yRange(drawnYs(drawn.datasets, opts.window), { log: opts.log, ignoreOutliers: opts.ignoreOutliers });
  const width = chart.getDom().clientWidth || 600;
  const rows = legendRows(drawn.legend, width);
  const clipped = clippedSeries(drawn.hover, range);
  const hover = nearestHover(drawn.hover, (x) => xLabel(opts.x)(x));
  const host = chart.getDom();
  host.dataset.groups = opts.group ? String(drawn.groups.length) : "";
  host.dataset.clipped = String(clipped.reduce((n, s) => n + s.data.length, 0));
  host.dataset.legendRows = String(rows);
  chart.setOption({
    animation: false,
    grid: { left: 64, right: 18, top: 14 + rows * LEGEND_ROW, bottom: 36 },
    legend: { type: "plain", top: 0, left: 8, right: 8, data: drawn.legend, itemGap: 10,
              textStyle: { color: "#3b4356", fontSize: 11 } },
    tooltip: { trigger: "axis", formatter: opts.group ? hover : withNonfinite(hover, lines) },
    // wheel/drag zooms the x axis; in steps, the zoomed range is fetched at full fidelity
    dataZoom: [{ type: "inside", xAxisIndex: 0, filterMode: "none",
                 ...(opts.window ? { startValue: opts.window.min, endValue: opts.window.max } : {}) }],
    xAxis: {
      type: opts.x === "wall" ? "time" : "value", scale: true,
      // zoomed: the axis keeps the whole run's extent, so zooming out is still possible
      ...(opts.extent || {}),
      name: X_NAMES[opts.x], nameLocation: "end", nameGap: 4,
      axisLabel: { color: "#6b7489", hideOverlap: true, showMinLabel: false, showMaxLabel: false,
                   formatter: opts.x === "relative" ? fmtDuration : undefined },
      splitLine: { show: false },
    },
    yAxis: {
      type: opts.log ? "log" : "value", scale: true, ...range,
      axisLabel: { color: "#6b7489", formatter: tickFormatter(range, opts.log) },
      splitLine: { lineStyle: { color: "#eef1f6" } },
    },
    series: [...drawn.series, ...clipped],
  }, { notMerge: true });
  chart.resize();
  return drawn;
}
