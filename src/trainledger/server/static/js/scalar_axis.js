// The y axis of a scalar chart (issue 51 item 4): one finite 6.8e25 must not flatten every
// other run onto 0. With "Ignore outliers" (on by default, as in TensorBoard) the range is the
// bulk of the drawn points: their 2nd to 98th percentile (nearest rank, so a short curve's
// single wild point is never inside it), widened to a curve's own extreme when that lies
// within ten times that span (a loss's first, high points are the curve, not outliers),
// padded by 10 %; the ends are rounded to the tick step, and the points beyond are marked at
// the edge they cross. Off, the range is every point's. Tick labels have one format per axis.
import { niceStep } from "./util.js";

const LOW = 0.02;
const HIGH = 0.98;
const REACH = 10;  // how many core spans beyond the core an extreme still belongs to the curve

function extent(sorted, ignoreOutliers) {
  const n = sorted.length;
  const [min, max] = [sorted[0], sorted[n - 1]];
  if (!ignoreOutliers) return [min, max];
  const lo = sorted[Math.ceil(LOW * (n - 1))];
  const hi = sorted[Math.floor(HIGH * (n - 1))];
  const span = hi - lo;
  return [min >= lo - REACH * span ? min : lo, max <= hi + REACH * span ? max : hi];
}

// The axis {min, max} over `values` (every drawn y, any order), or {} when none is finite
export function yRange(values, { log = false, ignoreOutliers = true } = {}) {
  const usable = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  if (!usable.length) return {};
  const ys = usable.map((v) => (log ? Math.log10(v) : v)).sort((a, b) => a - b);
  let [lo, hi] = extent(ys, ignoreOutliers);
  const mid = (lo + hi) / 2;
  if (hi - lo <= Math.abs(mid) * 1e-6) {
    // flat (or float-noise flat): +-10 % around its value, not an axis zoomed into rounding
    const half = log ? 0.05 : (mid ? Math.abs(mid) * 0.1 : 1);
    [lo, hi] = [mid - half, mid + half];
    if (!log) return { min: lo, max: hi };
  } else if (!log) {  // (a log axis is padded by its rounding out to powers of ten)
    const pad = (hi - lo) * 0.1;
    [lo, hi] = [lo - pad, hi + pad];
  }
  if (log) return { min: 10 ** Math.floor(lo), max: 10 ** Math.ceil(hi) };
  // the padding never takes a curve that stays on one side of 0 across it (a loss's axis
  // does not go negative)
  if (ys[0] >= 0 && lo < 0) lo = 0;
  if (ys[ys.length - 1] <= 0 && hi > 0) hi = 0;
  const step = niceStep(hi - lo, 10);
  return { min: round(Math.floor(lo / step) * step), max: round(Math.ceil(hi / step) * step) };
}

const round = (v) => Number(v.toPrecision(12));

// The decimals that show every multiple of `step` exactly (0.25 -> 2)
function decimals(step) {
  for (let d = 0; d < 12; d += 1) {
    const scaled = step * 10 ** d;
    if (Math.abs(scaled - Math.round(scaled)) < 1e-6 * scaled) return d;
  }
  return 12;
}

const exp = (v) => (v === 0 ? "0" : Number(v.toPrecision(6)).toExponential());

// The labels of an axis from `min` to `max`: rounded (1e+36, never 9.999999999999999e+35),
// all in one format (every label exponential when one needs it)
export function tickFormatter({ min, max }, log = false) {
  if (!(Number.isFinite(min) && Number.isFinite(max))) return (v) => exp(v);
  const big = Math.max(Math.abs(min), Math.abs(max));
  if (log) {
    const plain = min >= 1e-3 && max <= 1e4;
    return (v) => (plain ? String(Number(v.toPrecision(6))) : exp(v));
  }
  // (finer than any step ECharts or the rounded ends use here: trailing zeros are trimmed)
  const step = niceStep(max - min, 50);
  if (big >= 1e6 || step < 1e-5) return (v) => exp(v);
  const d = decimals(step);
  return (v) => (Math.abs(v) < step * 1e-9 ? "0" : String(Number(v.toFixed(d))));
}

// Scatter series marking, at the edge they cross, the points of `lines` ({name, color, data:
// [[x, y, ...]]}) outside `range`: a triangle pointing the way the curve went
export function clippedSeries(lines, range) {
  if (!(Number.isFinite(range.min) && Number.isFinite(range.max))) return [];
  const out = [];
  for (const line of lines) {
    const above = [];
    const below = [];
    for (const p of line.data) {
      if (p[1] === null || !Number.isFinite(p[1])) continue;
      if (p[1] > range.max) above.push([p[0], range.max, ...p.slice(2), p[1]]);
      else if (p[1] < range.min) below.push([p[0], range.min, ...p.slice(2), p[1]]);
    }
    for (const [data, symbol] of [[above, "triangle"], [below, "path://M0,0L10,0L5,10Z"]]) {
      if (!data.length) continue;
      out.push({ type: "scatter", name: `${line.name} (clipped)`, color: line.color, z: 5,
                 symbol, symbolSize: 9, clip: false, silent: true, data });
    }
  }
  return out;
}
