// The runs of a large result (more than lineage.js's SVG_MAX_LINES) as lines on a canvas of
// our own. ECharts' parallel series costs about 1.1 s of the main thread for 5,000 lines on
// two cores (its display list, then layout and software rasterisation of every element);
// here they are one pass of canvas strokes. ECharts still draws everything else, on its own
// canvas above this one: the axes, their names and white-haloed labels (so they stay
// readable over the lines), the brush and the colour bar. Every point comes from its
// parallel coordinate system (`dataToPoint`), so the lines meet the axes exactly, log and
// category axes included; hover, click and the brush's dimming are done here, as ECharts
// did them for its own lines.

import { colorOf } from "./parcoords_axes.js";

const GRADIENT = [[0x35, 0x63, 0xe9], [0x8e, 0x4e, 0xc6], [0xf7, 0x6b, 0x15]]; // the visualMap's
const OFF_SCALE = "rgb(204,204,204)"; // a run with no value on the colour axis
export const NONFINITE_COLOR = "#e5484d"; // a NaN or infinite one: outside the scale, in its key
// One device pixel (1 CSS pixel, half of one on a 2x screen), not ECharts' 1.5 CSS pixels:
// Skia strokes a line of one device pixel as a hairline, which a CPU rasterises 4-5x faster
// (5,000 lines: 70-120 ms against 350-370 ms on two cores; on a 2x screen the first load
// went from about 2 s to about 1.1 s)
const WIDTH = 1;
const FOCUS_WIDTH = 3;     // the hovered line, as ECharts' emphasis drew it
const ACTIVE = 0.9;        // inside every brushed interval (ECharts' activeOpacity)
const INACTIVE = 0.06;     // outside one (inactiveOpacity)
const HIT_PX = 5;          // a line this close to the mouse is the one under it
const DRAG_PX = 4;         // a mouse moved further between down and up dragged (a brush), as zrender

// A value's colour on the visualMap's gradient, `t` in [0, 1]: linear in RGB between the
// stops, as zrender's colour lerp.
function gradientColor(t) {
  if (!Number.isFinite(t)) return OFF_SCALE;
  const at = Math.min(1, Math.max(0, t)) * (GRADIENT.length - 1);
  const lo = Math.floor(at);
  const hi = Math.min(GRADIENT.length - 1, lo + 1);
  const f = at - lo;
  const c = GRADIENT[lo].map((v, k) => Math.round(v + (GRADIENT[hi][k] - v) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

// The gradient in 256 steps (a value's colour within 1 of its own in each channel): runs share
// 256 colour strings instead of building and parsing one each (about 20 ms on two cores).
const STEPS = 255;
let palette = null;

// each run's colour as the visualMap's scale colours its value (`values`: the colour axis's
// values as the server sent them, null when there is no metric to colour by: `plain` for
// all); a non-finite value gets NONFINITE_COLOR, outside the scale and named in its key
export function lineColors(values, visualMap, plain) {
  if (!values) return [];
  palette ??= Array.from({ length: STEPS + 1 }, (_, k) => gradientColor(k / STEPS));
  const { min, max } = visualMap;
  const scale = (v) => palette[max > min
    ? Math.round(((Math.min(max, Math.max(min, v)) - min) / (max - min)) * STEPS) : Math.round(STEPS / 2)];
  return values.map((v) => colorOf(v, scale, { offScale: NONFINITE_COLOR, missing: OFF_SCALE }));
}

// The series ECharts gets instead of the runs: two invisible lines holding each axis's
// lowest and highest value, so its axes' extents and ticks are the ones the runs would give.
export function extentSeries(axes, rows) {
  const ends = [[], []];
  axes.forEach((a, j) => {
    let [lo, hi] = [Infinity, -Infinity];
    for (const row of rows) {
      const v = row[j];
      if (typeof v === "number" && v < lo) lo = v;
      if (typeof v === "number" && v > hi) hi = v;
    }
    ends[0].push(a.numeric ? lo : a.data[0]);
    ends[1].push(a.numeric ? hi : a.data[0]);
  });
  return {
    type: "parallel", name: "extent", silent: true, progressive: 0,
    lineStyle: { width: 0, opacity: 0 }, activeOpacity: 0, inactiveOpacity: 0,
    emphasis: { disabled: true }, data: ends,
  };
}

function layerCanvas(cls) {
  const canvas = document.createElement("canvas");
  canvas.className = cls;
  canvas.style.cssText = "position:absolute;left:0;top:0;pointer-events:none";
  return canvas;
}

export class LineLayer {
  // host: the chart's element; tip(i): the HTML naming line i (escaped); open(i): its click
  constructor(host, { tip, open }) {
    this.host = host;
    this.tip = tip;
    this.open = open;
    this.lines = layerCanvas("parcoords-lines");
    this.focus = layerCanvas("parcoords-focus");
    this.tipBox = document.createElement("div");
    this.tipBox.className = "parcoords-tip";
    this.tipBox.hidden = true;
    this.on = false;
    this.hovered = -1;
    this.down = null;
    this.frame = 0;
    host.addEventListener("mousemove", (e) => this.onMove(e));
    host.addEventListener("mouseleave", () => this.setHovered(-1));
    host.addEventListener("mousedown", (e) => { this.down = [e.clientX, e.clientY]; });
    host.addEventListener("click", (e) => this.onClick(e));
  }

  // chart: the ECharts instance drawing the axes; axes: [{numeric, log, data}] in the chart's
  // axis order (dim i); rows: each run's values on them; colors: each run's stroke;
  // opacity: a line's when nothing is brushed.
  show(chart, { axes, rows, colors, opacity }) {
    Object.assign(this, { chart, axes, rows, colors, opacity, on: true, hovered: -1 });
    this.tipBox.hidden = true; // it named a line of the last drawing
    this.attach();
    this.layout();
    this.draw();
  }

  hide() {
    this.on = false;
    this.rows = [];
    for (const el of [this.lines, this.focus, this.tipBox]) el.remove();
  }

  // ECharts' dispose empties the host: put the layer back, under ECharts' own element
  attach() {
    if (this.lines.parentNode !== this.host) this.host.prepend(this.lines, this.focus);
    if (this.tipBox.parentNode !== this.host) this.host.append(this.tipBox);
  }

  // after a resize or a brush: the axes' layout and the lines' states are ECharts' again
  redraw() {
    if (!this.on) return;
    this.layout();
    this.draw();
  }

  // every run's point on every axis, in CSS pixels of the chart (NaN: no value, skipped,
  // the line joining its neighbours, as ECharts' parallel view does)
  layout() {
    const sys = this.chart.getModel().getComponent("parallel").coordinateSystem;
    const m = this.axes.length;
    const points = new Float64Array(this.rows.length * m * 2);
    this.axes.forEach((axis, j) => {
      const at = placer(sys, axis, j, this.rows);
      this.rows.forEach((row, i) => {
        const [x, y] = at(row[j]);
        const k = (i * m + j) * 2;
        points[k] = x;
        points[k + 1] = y;
      });
    });
    this.points = points;
    this.states = this.activeStates();
  }

  // null when no axis is brushed; else whether each run is inside every brushed interval,
  // asked of the axis models themselves (a category's value is its index, as in ECharts' data)
  activeStates() {
    const model = this.chart.getModel();
    const axisModels = this.axes.map((_, j) => model.getComponent("parallelAxis", j));
    if (!axisModels.some((am) => am && am.activeIntervals && am.activeIntervals.length)) return null;
    const ordinals = this.axes.map((a) => (a.numeric ? null : new Map(a.data.map((c, k) => [c, k]))));
    return this.rows.map((row) => axisModels.every((am, j) => {
      const v = ordinals[j] ? ordinals[j].get(row[j]) : row[j];
      return am.getActiveState(v) !== "inactive";
    }));
  }

  alpha(i) {
    if (!this.states) return this.opacity;
    return this.states[i] ? ACTIVE : INACTIVE;
  }

  // a canvas the chart's size in device pixels, drawn on in CSS pixels
  context(canvas) {
    const dpr = window.devicePixelRatio || 1;
    const [w, h] = [this.chart.getWidth(), this.chart.getHeight()];
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
      canvas.style.width = `${w}px`;
      canvas.style.height = `${h}px`;
    }
    const g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    return g;
  }

  trace(g, i) {
    const m = this.axes.length;
    const p = this.points;
    let started = false;
    g.beginPath();
    for (let j = 0; j < m; j++) {
      const k = (i * m + j) * 2;
      if (Number.isNaN(p[k])) continue;
      if (started) g.lineTo(p[k], p[k + 1]);
      else g.moveTo(p[k], p[k + 1]);
      started = true;
    }
  }

  // in the data's order, later runs on top, as ECharts drew them
  draw() {
    const g = this.context(this.lines);
    g.lineWidth = WIDTH / (window.devicePixelRatio || 1); // (in CSS pixels: one device pixel)
    for (let i = 0; i < this.rows.length; i++) {
      g.globalAlpha = this.alpha(i);
      g.strokeStyle = this.colors[i];
      this.trace(g, i);
      g.stroke();
    }
    this.drawFocus();
  }

  drawFocus() {
    const g = this.context(this.focus);
    if (this.hovered < 0) return;
    g.lineWidth = FOCUS_WIDTH;
    g.strokeStyle = this.colors[this.hovered];
    this.trace(g, this.hovered);
    g.stroke();
  }

  // the line nearest (x, y) within HIT_PX, by its distance to each segment the x falls in;
  // on a tie the later one, drawn on top
  hit(x, y) {
    const m = this.axes.length;
    const p = this.points;
    let best = -1;
    let bestD = HIT_PX * HIT_PX;
    for (let i = 0; i < this.rows.length; i++) {
      let px = NaN;
      let py = NaN;
      for (let j = 0; j < m; j++) {
        const k = (i * m + j) * 2;
        const [qx, qy] = [p[k], p[k + 1]];
        if (Number.isNaN(qx)) continue;
        if (!Number.isNaN(px) && x >= Math.min(px, qx) - HIT_PX && x <= Math.max(px, qx) + HIT_PX) {
          const d = segmentDistance2(x, y, px, py, qx, qy);
          if (d <= bestD) { best = i; bestD = d; }
        }
        [px, py] = [qx, qy];
      }
    }
    return best;
  }

  local(event) {
    const box = this.host.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  }

  onMove(event) {
    if (!this.on) return;
    const [x, y] = this.local(event);
    cancelAnimationFrame(this.frame);
    this.frame = requestAnimationFrame(() => {
      if (!this.on) return;
      this.setHovered(this.hit(x, y), x, y);
    });
  }

  setHovered(i, x, y) {
    if (!this.on) return;
    if (i !== this.hovered) {
      this.hovered = i;
      this.drawFocus();
      if (i >= 0) this.tipBox.innerHTML = this.tip(i);
    }
    this.tipBox.hidden = i < 0;
    if (i >= 0) this.placeTip(x, y);
  }

  // beside the mouse, kept inside the chart (ECharts' tooltip with `confine`)
  placeTip(x, y) {
    const [w, h] = [this.tipBox.offsetWidth, this.tipBox.offsetHeight];
    const [cw, ch] = [this.host.clientWidth, this.host.clientHeight];
    const left = x + 20 + w > cw ? Math.max(0, x - 20 - w) : x + 20;
    const top = Math.max(0, Math.min(ch - h, y + 20 + h > ch ? y - 20 - h : y + 20));
    this.tipBox.style.left = `${left}px`;
    this.tipBox.style.top = `${top}px`;
  }

  onClick(event) {
    if (!this.on) return;
    const moved = this.down && Math.hypot(event.clientX - this.down[0], event.clientY - this.down[1]);
    this.down = null;
    if (moved > DRAG_PX) return;
    const i = this.hit(...this.local(event));
    if (i >= 0) this.open(i);
  }
}

// A value's point on axis j ([NaN, NaN]: none). ECharts maps a value axis linearly (a log
// axis linearly in log10) and then places the axis by an affine transform, so two of its
// points give every other one exactly: 2 calls of `dataToPoint` an axis instead of one a run
// (a category's point is asked once per category).
function placer(sys, axis, j, rows) {
  const dim = `dim${j}`;
  const none = [NaN, NaN];
  if (!axis.numeric) {
    const at = new Map(axis.data.map((c, k) => [c, sys.dataToPoint(k, dim)]));
    return (v) => at.get(v) || none;
  }
  const g = axis.log ? Math.log10 : (v) => v;
  let [v0, v1] = [Infinity, -Infinity];
  for (const row of rows) {
    const v = row[j];
    if (typeof v === "number" && v < v0) v0 = v;
    if (typeof v === "number" && v > v1) v1 = v;
  }
  const [p0, p1] = [sys.dataToPoint(v0, dim), sys.dataToPoint(v1, dim)];
  const span = g(v1) - g(v0);
  return (v) => {
    if (typeof v !== "number" || Number.isNaN(v)) return none;
    if (!span) return sys.dataToPoint(v, dim);
    const t = (g(v) - g(v0)) / span;
    return [p0[0] + t * (p1[0] - p0[0]), p0[1] + t * (p1[1] - p0[1])];
  };
}

function segmentDistance2(x, y, x0, y0, x1, y1) {
  const [dx, dy] = [x1 - x0, y1 - y0];
  const len2 = dx * dx + dy * dy;
  const t = len2 ? Math.max(0, Math.min(1, ((x - x0) * dx + (y - y0) * dy) / len2)) : 0;
  const [ex, ey] = [x0 + t * dx - x, y0 + t * dy - y];
  return ex * ex + ey * ey;
}
