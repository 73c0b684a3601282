// The hover of a scalar chart (issue 51 item 6): every line's nearest point to the hovered x,
// not only the lines with a point at exactly that x (ECharts' own axis tooltip keeps only
// those: an eval run logged every 10 steps vanished between its points). A smoothed line says
// its smoothed and its raw value; a point at another step names its step; a group's line says
// how many of its runs feed the point; a line continued from its parent's (issue 53 item 6)
// names the parent on the parent's points and the run's own step on its own. Names are escaped.
import { escapeHtml, fmt, fmtTime } from "./util.js";

// The index of the point of `data` ([[x, ...], ...]) nearest to `x`
export function nearestIndex(data, x) {
  let best = -1;
  let dist = Infinity;
  for (let i = 0; i < data.length; i += 1) {
    if (data[i][1] === null || data[i][1] === undefined) continue;
    const d = Math.abs(data[i][0] - x);
    if (d < dist) { dist = d; best = i; }
  }
  return best;
}

// `lines`: [{name, marker colour, data: [[x, shown y, step, wall, raw y, runs, from]], smoothed,
// fork}] (`from`: the parent run of a continued line's point; `fork`: the step its own start at);
// `xName(x)`: the hovered x as the axis says it
export function nearestHover(lines, xName) {
  return (params) => {
    const first = [].concat(params).find((p) => p && p.axisValue !== undefined);
    if (!first) return "";
    const x = Number(first.axisValue);
    const rows = [];
    let head = null;
    for (const line of lines) {
      const i = nearestIndex(line.data, x);
      if (i < 0) continue;
      const [px, y, step, wall, raw, runs, from] = line.data[i];
      head ??= { step, wall };
      const dot = `<span class="dot" style="display:inline-block;width:9px;height:9px;border-radius:50%;margin-right:5px;background:${line.color}"></span>`;
      let text = `${dot}${escapeHtml(line.name)}: <b>${fmt(y)}</b>`;
      if (line.smoothed && raw !== undefined) text += ` <span class="muted">(smoothed; raw ${fmt(raw)})</span>`;
      if (runs !== undefined) text += ` <span class="muted">(${runs} run${runs === 1 ? "" : "s"})</span>`;
      if (from !== undefined) text += ` <span class="muted">(parent ${escapeHtml(from)})</span>`;
      // (a continued line's own point: its own step, never the drawn one)
      if (px !== x || (line.fork && from === undefined)) text += ` <span class="muted">@ step ${step}</span>`;
      rows.push(text);
    }
    if (!rows.length) return "";
    return [`${escapeHtml(xName(x, head))} · ${escapeHtml(fmtTime(head.wall))}`, ...rows].join("<br>");
  };
}
