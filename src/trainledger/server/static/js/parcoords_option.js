// The runs page's parallel-coordinates chart as an ECharts option (lineage.js draws it): an
// axis a column, a line a run, coloured by the last metric axis. For a large result (`big`)
// the lines are the page's own layer (parcoords_lines.js): ECharts gets only the axes'
// extents, and no tooltip (the layer names the line under the mouse).
import { extentSeries } from "./parcoords_lines.js";
import { colorFor, fmt } from "./util.js";

// a line's opacity when nothing is brushed: fainter the more lines cross
export function lineOpacity(lines) {
  return lines > 300 ? 0.2 : 0.75;
}

// axes: [{column, numeric, categories, values, log}]; rows: each run's value on them (with
// `runId`); label(column): an axis's name; tip(params): a line's tooltip; empty: the
// chart's title when there is nothing to draw. Returns the option and the colour axis's index.
export function parcoordsOption(axes, rows, { label, tip, big, empty }) {
  const colorAxis = [...axes].reverse().find((a) => a.numeric && (a.column.startsWith("metric/") || a.column === "loss"));
  const colorIndex = colorAxis ? axes.indexOf(colorAxis) : -1;
  const option = {
    animation: false,
    // hovering a line names its run and its value on every axis
    tooltip: big ? { show: false } : { show: true, trigger: "item", confine: true, formatter: tip },
    parallel: {
      left: 70, right: colorIndex >= 0 ? 175 : 70, top: 48, bottom: 28,
      parallelAxisDefault: {
        z: 10, nameLocation: "end", nameGap: 18, realtime: false,
        nameTextStyle: { color: "#1d2433", fontSize: 12, fontWeight: 600 },
        axisLine: { lineStyle: { color: "#9aa3b5" } },
        axisLabel: { color: "#6b7489", fontSize: 11 },
        areaSelectStyle: { width: 18, color: "rgba(53,99,233,0.25)", borderColor: "#3563e9", opacity: 1 },
      },
    },
    parallelAxis: axes.map((a, i) => ({
      id: `ax-${i}`, dim: i, name: label(a.column),
      type: a.log ? "log" : a.numeric ? "value" : "category",
      data: a.numeric ? undefined : [...a.categories, ...(a.values.some((v) => v === null || v === undefined) ? ["—"] : [])],
      scale: a.numeric,
      // labels with a white halo, above the lines, stay readable over thousands of them
      axisLabel: {
        ...(a.numeric ? { formatter: (v) => fmt(v) } : { width: 80, overflow: "truncate" }),
        textBorderColor: "#fff", textBorderWidth: 3,
      },
    })),
  };
  option.series = [big
    ? extentSeries(option.parallelAxis.map((a, i) => ({ numeric: axes[i].numeric, data: a.data })), rows)
    : {
      type: "parallel",
      name: "runs",
      smooth: false,
      inactiveOpacity: 0.06,
      activeOpacity: 0.9,
      progressive: 0,
      lineStyle: { width: 1.5, opacity: lineOpacity(rows.length), color: colorFor(0) },
      emphasis: { lineStyle: { width: 3, opacity: 1 } },
      data: rows.map((row) => ({ name: row.runId, value: row })),
    }];
  if (colorIndex >= 0) {
    const vals = colorAxis.values.filter((v) => typeof v === "number");
    option.visualMap = {
      type: "continuous", dimension: colorIndex, min: Math.min(...vals), max: Math.max(...vals),
      right: 8, top: "middle", itemHeight: 160, calculable: false, precision: 3,
      // the colour bar says what it shows, and its ends' values
      text: [`${label(colorAxis.column)}: ${fmt(Math.max(...vals))}`, fmt(Math.min(...vals))],
      textGap: 8,
      textStyle: { color: "#6b7489", fontSize: 11 },
      inRange: { color: ["#3563e9", "#8e4ec6", "#f76b15"] },
    };
  }
  if (!rows.length || !axes.length) {
    option.title = {
      text: empty, left: "center", top: "middle",
      textStyle: { color: "#9aa3b5", fontWeight: "normal", fontSize: 14 },
    };
  }
  return { option, colorIndex };
}
