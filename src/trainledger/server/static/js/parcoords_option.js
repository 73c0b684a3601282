// The runs page's parallel-coordinates chart as an ECharts option (lineage.js draws it): an
// axis a column, a line a run, coloured by the last metric axis. For a large result (`big`)
// the lines are the page's own layer (parcoords_lines.js): ECharts gets only the axes'
// extents, and no tooltip (the layer names the line under the mouse).
import { axisOption } from "./parcoords_axes.js";
import { NONFINITE_COLOR, extentSeries } from "./parcoords_lines.js";
import { colorFor, fmt } from "./util.js";

// a line's opacity when nothing is brushed: fainter the more lines cross
export function lineOpacity(lines) {
  return lines > 300 ? 0.2 : 0.75;
}

// axes: parcoords_axes.js's; rows: each run's place on them (with `runId`); colors: each
// run's line colour (lineColors); label(column): an axis's name; tip(params): a line's
// tooltip; empty: the chart's title when there is nothing to draw. Returns the option and the
// colour axis's index.
export function parcoordsOption(axes, rows, { label, tip, big, empty, colors }) {
  const colorAxis = colorAxisOf(axes);
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
    parallelAxis: axes.map((a, i) => axisOption(a, i, label(a.column))),
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
      // each line's colour is its own (lineColors): a value off the scale (NaN, inf) gets the
      // key's colour, which a visualMap cannot give
      data: rows.map((row, i) => ({ name: row.runId, value: row, lineStyle: { color: colors[i] } })),
    }];
  if (colorIndex >= 0) {
    const { lo, hi } = colorAxis;
    option.visualMap = {
      type: "continuous", dimension: colorIndex, min: lo, max: hi, seriesIndex: [],
      right: 8, top: "middle", itemHeight: 160, calculable: false, precision: 3,
      // the colour bar says what it shows, and its ends' values
      text: [`${label(colorAxis.column)}: ${fmt(hi)}`, fmt(lo)],
      textGap: 8,
      textStyle: { color: "#6b7489", fontSize: 11 },
      inRange: { color: ["#3563e9", "#8e4ec6", "#f76b15"] },
    };
    if (colorAxis.oddLabel) {  // the key of the colour outside the scale
      option.graphic = [{
        type: "text", id: "nonfinite-key", right: 8, bottom: 8, z: 100,
        style: { text: `━ ${colorAxis.oddLabel} ${label(colorAxis.column)}`, fill: NONFINITE_COLOR,
                 fontSize: 11, fontWeight: 600 },
      }];
    }
  }
  if (!rows.length || !axes.length) {
    option.title = {
      text: empty, left: "center", top: "middle",
      textStyle: { color: "#9aa3b5", fontWeight: "normal", fontSize: 14 },
    };
  }
  return { option, colorIndex };
}

// the axis lines are coloured by: the last metric (or loss) axis that is numeric
export function colorAxisOf(axes) {
  return [...axes].reverse().find((a) => a.numeric && (a.column.startsWith("metric/") || a.column === "loss"));
}
