// The parallel coordinates' axes from the runs' values (lineage.js draws them): which axis is
// numeric, its round ticks, and where a run with no value or a non-finite one sits on it.
//
// Why a place for every run (issue 51, items 1 and 2): ECharts draws no line at all for a run
// with no value on a numeric axis, so a run whose eval loss went NaN vanished from the chart,
// and one NaN among numbers made the axis a list of labels. Here a numeric axis stays
// numeric; its ticks are round multiples of one step (`niceStep`), a non-finite value (NaN,
// inf, -inf) sits one step above the highest tick, labelled with what it is, and a missing
// value one step below the lowest, labelled "—" (as a text axis draws a missing value). On a
// log axis those places are a decade beyond its ends.
import { asNumber, fmt, isNonFinite, nonFiniteText } from "./format.js";
import { niceStep } from "./util.js";

const MISSING = "—";

// {column, numeric, categories, values, log, min, max, interval, odd, oddLabel, miss}
// of one column; `values` are the runs' as the server sent them ("NaN" for a NaN).
export function buildAxis(column, values) {
  const present = values.filter((v) => v !== null && v !== undefined);
  const finite = present.filter((v) => typeof v === "number" && Number.isFinite(v));
  const numeric = finite.length > 0 && present.every((v) => typeof v === "number" || isNonFinite(v));
  if (!numeric) {
    const categories = [...new Set(present.map((v) => nonFiniteText(v) ?? String(v)))].sort();
    return { column, numeric, categories, values, log: false };
  }
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of finite) { if (v < lo) lo = v; if (v > hi) hi = v; }
  // a positive field spanning two decades or more (a learning rate): a log axis, so 0.001
  // and 0.01 do not overlap
  const log = lo > 0 && hi / lo >= 100;
  const kinds = [...new Set(present.filter(isNonFinite).map(nonFiniteText))];
  const hasMissing = present.length < values.length;
  const axis = { column, numeric, categories: null, values, log, lo, hi };
  if (log) {
    axis.min = 10 ** Math.floor(Math.log10(lo) + 1e-9);
    axis.max = 10 ** Math.ceil(Math.log10(hi) - 1e-9);
    if (kinds.length) axis.odd = axis.max = axis.max * 10;
    if (hasMissing) axis.miss = axis.min = axis.min / 10;
  } else {
    let step = niceStep(hi - lo || Math.abs(hi) || 1, 5);
    // integers (epochs, batch sizes) get integer ticks: 2, 3, 4, not 2, 2.5, 3
    if (finite.every(Number.isInteger) && !Number.isInteger(step)) step = step < 1 ? 1 : 2 * Math.round(step / 2);
    axis.interval = step;
    axis.min = round(Math.floor(lo / step + 1e-9) * step);
    axis.max = round(Math.ceil(hi / step - 1e-9) * step);
    if (axis.max === axis.min) axis.max = round(axis.min + step);
    if (kinds.length) axis.odd = axis.max = round(axis.max + step);
    if (hasMissing) axis.miss = axis.min = round(axis.min - step);
  }
  axis.oddLabel = kinds.join(" / ");
  return axis;
}

const round = (v) => Number(v.toPrecision(12));

// a run's value as drawn on the axis: its own, or the axis's place for a missing or a
// non-finite one
export function place(axis, value) {
  if (!axis.numeric) {
    if (value === null || value === undefined) return MISSING;
    return nonFiniteText(value) ?? String(value);
  }
  if (value === null || value === undefined) return axis.miss;
  if (isNonFinite(value)) return axis.odd;
  return value;
}

const near = (a, b) => b !== undefined && Math.abs(a - b) <= Math.abs(b) * 1e-9 + 1e-300;

// the tick label at `v`: the places' names, or the number
export function tickLabel(axis, v) {
  if (near(v, axis.odd)) return axis.oddLabel;
  if (near(v, axis.miss)) return MISSING;
  return fmt(v);
}

// ECharts' parallelAxis for one of these axes (with its name)
export function axisOption(axis, i, name) {
  if (!axis.numeric) {
    const missing = axis.values.some((v) => v === null || v === undefined);
    return {
      id: `ax-${i}`, dim: i, name, type: "category",
      data: [...axis.categories, ...(missing ? [MISSING] : [])],
      axisLabel: { width: 80, overflow: "truncate", textBorderColor: "#fff", textBorderWidth: 3 },
    };
  }
  return {
    id: `ax-${i}`, dim: i, name, type: axis.log ? "log" : "value",
    min: axis.min, max: axis.max, ...(axis.log ? {} : { interval: axis.interval }),
    // labels with a white halo, above the lines, stay readable over thousands of them
    axisLabel: {
      formatter: (v) => tickLabel(axis, v), textBorderColor: "#fff", textBorderWidth: 3,
      showMinLabel: true, showMaxLabel: true,
    },
  };
}

// a run's colour by its value on the colour axis: the scale's for a finite value, `offScale`
// (drawn in the key) for a non-finite one, `missing` for none
export function colorOf(value, scale, { offScale, missing }) {
  if (value === null || value === undefined) return missing;
  const n = asNumber(value);
  if (n === null || !Number.isFinite(n)) return offScale;
  return scale(n);
}
