// What a scalar chart draws besides its lines, so that it tells the truth when training goes
// wrong (issue 51 item 3): JSON sends NaN and inf as null, which only stops a line, so the
// series API's `nonfinite` (the first step of each kind, from the full data) is marked with a
// labelled triangle where the line stops, and the hover says it (`inf at step 72`). A point
// with no neighbour (between two gaps, or alone) draws no line at all: it gets a dot.
import { escapeHtml } from "./util.js";

// [x, y] of a mark at `step` on a line's data ([x, y, step, wall]): x of the first point at
// or after the step (the line's last x when none is), y the last finite value before it
function markAt(data, step) {
  let y = null;
  let x = data.length ? data[data.length - 1][0] : step;
  for (const p of data) {
    if (p[2] >= step) { x = p[0]; break; }
    if (p[1] !== null && Number.isFinite(p[1])) y = p[1];
  }
  if (y === null) y = (data.find((p) => p[1] !== null && Number.isFinite(p[1])) || [0, 0])[1];
  return [x, y];
}

// The points of a line's data that no segment draws (both neighbours null or absent)
function isolated(data) {
  const lone = (i) => data[i][1] !== null
    && (i === 0 || data[i - 1][1] === null) && (i === data.length - 1 || data[i + 1][1] === null);
  return data.filter((_, i) => lone(i));
}

// ECharts series of the marks and the lone points of `lines` (the API's series) drawn as
// `datasets` (their plotted data) in `colors`
export function markSeries(lines, datasets, colors) {
  const out = [];
  lines.forEach((s, i) => {
    const marks = (s.nonfinite || []).map((m) => [...markAt(datasets[i], m.step), m.step, m.value]);
    if (marks.length) {
      out.push({
        type: "scatter", name: `${s.run_id} (non-finite)`, color: colors[i], z: 4,
        symbol: "triangle", symbolSize: 11, data: marks,
        label: { show: true, position: "top", formatter: (p) => `${p.value[3]} @${p.value[2]}`,
                 color: colors[i], fontSize: 10, fontWeight: 600 },
      });
    }
    const lone = isolated(datasets[i]);
    if (lone.length) {
      out.push({ type: "scatter", name: `${s.run_id} (point)`, color: colors[i], z: 3,
                 symbol: "circle", symbolSize: 6, data: lone });
    }
  });
  return out;
}

// The hover's lines for the runs whose series went non-finite at or before the hovered
// step: "diverged: inf at step 72, nan at step 80"; `head` when the other lines gave none
function nonfiniteHover(params, lines, head) {
  const at = params.find((p) => p.value && p.value[2] !== undefined);
  if (!at) return "";
  const step = at.value[2];
  const said = lines.map((s) => {
    const seen = (s.nonfinite || []).filter((m) => m.step <= step);
    if (!seen.length) return "";
    const what = seen.map((m) => `${m.value} at step ${m.step}`).join(", ");
    return `${escapeHtml(s.run_id)}: <b class="nonfinite">${what}</b>`;
  }).filter(Boolean);
  if (!said.length) return "";
  return [head ? "" : `step ${step}`, ...said].filter(Boolean).join("<br>");
}

// The hover `hoverText` writes, then the non-finite values of `lines` it cannot show
export function withNonfinite(hoverText, lines) {
  return (params) => {
    const text = hoverText(params);
    const bad = nonfiniteHover(params, lines, text);
    return text && bad ? `${text}<br>${bad}` : text || bad;
  };
}
