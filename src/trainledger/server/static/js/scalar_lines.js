// A scalar chart's lines, one per run (or per session of a run drawn apart), from the series
// API's answer: the x each point takes (step, epoch, samples seen, relative or wall time), the
// smoothed value the server computed over the full series (issue 51 item 8) drawn over the
// raw points (item 7: a short series is not smoothed unless asked, the raw line is visible),
// a resume marked where it happened (item 11), and "Continue from parent" (issue 53 item 6):
// a run's series that the server continued from its parent's (`parent`: its first `count`
// points are the parent's, up to the fork step) is its own line drawn from the fork step on
// (its step s at fork + s) after the parent's part, dashed in the same colour.

// Below this many points a series is drawn as it is unless smoothing was asked for: five eval
// points smoothed at 0.6 turn a final accuracy of 0.92 into 0.86.
export const FEW_POINTS = 50;

export const X_NAMES = { step: "step", epoch: "epoch", samples: "samples", relative: "", wall: "" };

// The x of a point ([step, wall, ...]) of run `info` ({stepsPerEpoch, batch}); null when the
// run does not record what the axis needs
export function xMapper(x, info = {}, t0 = 0) {
  if (x === "epoch") return info.stepsPerEpoch > 0 ? (p) => p[0] / info.stepsPerEpoch : null;
  if (x === "samples") return info.batch > 0 ? (p) => p[0] * info.batch : null;
  if (x === "relative") return (p) => p[1] - t0;
  if (x === "wall") return (p) => p[1] * 1000;
  return (p) => p[0];
}

// What the x axis of a run needs, from its lineage columns: steps per epoch (its steps over
// its epochs, else its training samples over its batch size) and its batch size
export function xInfo(columns, i) {
  const col = (name) => (columns[name] || [])[i];
  const [steps, epochs, batch, count] =
    [col("run/total_steps"), col("epoch"), col("batch_size"), col("train_dataset_count")];
  let stepsPerEpoch = steps > 0 && epochs > 0 ? steps / epochs : null;
  if (!stepsPerEpoch && count > 0 && batch > 0) stepsPerEpoch = Math.ceil(count / batch);
  return { stepsPerEpoch, batch: batch > 0 ? batch : null };
}

// The same hue, lighter for each later session: a resumed run's sessions apart
export function shade(hex, k) {
  if (!k) return hex;
  const mix = Math.min(0.25 * k, 0.6);
  const c = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return `#${c.map((v) => Math.round(v + (255 - v) * mix).toString(16).padStart(2, "0")).join("")}`;
}

// Whether the series `s` is drawn smoothed: `explicit` when the user chose the weight
export function isSmoothed(s, weight, explicit) {
  return Boolean(weight && s.smoothed && (explicit || s.total >= FEW_POINTS));
}

// A series of the API split into the run's own points (`own`, a series as without the
// option) and, when `continued` and the server continued it, its parent's part (`head`:
// {run_id, points, smoothed}) and the fork step its own steps are drawn after
export function parentSplit(s, continued) {
  const n = s.parent ? s.parent.count : 0;
  const cut = (list, a, b) => (list ? list.slice(a, b) : list);
  const own = s.parent
    ? { ...s, points: s.points.slice(n), sessions: s.sessions.slice(n), smoothed: cut(s.smoothed, n) }
    : s;
  if (!continued || !s.parent) return { own, head: null, fork: 0 };
  return { own, fork: s.parent.step,
           head: { run_id: s.parent.run_id, points: s.points.slice(0, n), smoothed: cut(s.smoothed, 0, n) } };
}

// One line model per run (per session with `apart`): {name, run_id, color, smoothed, data:
// [[x, shown y, step, wall, raw y]], raw: the same with the raw y, resumes: [x...], fork,
// parent: null or the parent's part {run_id, data, raw}, each point [.., undefined, its run]}
export function lineModels(series, { x, weight, explicit, apart, log, colorOf, infoOf, continued }) {
  const out = [];
  for (const whole of series) {
    const { own: s, head, fork } = parentSplit(whole, continued);
    const t0 = s.points.length ? s.points[0][1] : 0;
    const mapped = xMapper(x, infoOf(s.run_id), t0);
    if (!mapped) continue;
    const xOf = head ? (p) => mapped(p) + fork : mapped;  // (continued: the step axis only)
    const smoothed = isSmoothed(s, weight, explicit);
    const shown = (v) => (log && !(v > 0) ? null : v);
    const point = (p, i, y) => [xOf(p), shown(y), p[0], p[1], p[2]];
    const all = s.points.map((p, i) => point(p, i, smoothed ? s.smoothed[i] : p[2]));
    const raw = s.points.map((p, i) => point(p, i, p[2]));
    const from = (p, y) => [p[0], shown(y), p[0], p[1], p[2], undefined, head.run_id];
    const parent = head && head.points.length ? {
      run_id: head.run_id,
      data: head.points.map((p, i) => from(p, smoothed ? head.smoothed[i] : p[2])),
      raw: head.points.map((p) => from(p, p[2])),
    } : null;
    const base = { run_id: s.run_id, source: s, smoothed, fork };
    const cuts = [0];
    for (let i = 1; i < s.points.length; i += 1) if (s.sessions[i] !== s.sessions[i - 1]) cuts.push(i);
    cuts.push(s.points.length);
    const color = colorOf(s.run_id);
    if (apart && cuts.length > 2) {
      for (let k = 0; k + 1 < cuts.length; k += 1) {
        const [a, b] = [cuts[k], cuts[k + 1]];
        out.push({ ...base, name: `${s.run_id} · session ${s.sessions[a] + 1}`, color: shade(color, k),
                   data: all.slice(a, b), raw: raw.slice(a, b), resumes: [], parent: k ? null : parent });
      }
    } else {
      // merged: where the later session's points begin, the run was resumed
      const resumes = cuts.slice(1, -1).map((i) => ({ x: all[i][0], step: all[i][2] }));
      out.push({ ...base, name: s.run_id, color, data: all, raw, resumes, parent });
    }
  }
  return out;
}

// A continued line's parent part (dashed, its first point's own line joined to it, so the
// fork shows where the dash ends), with its raw points behind it when smoothed
function parentSeries(models) {
  return models.filter((m) => m.parent).flatMap((m) => [
    ...(m.smoothed ? [{
      type: "line", id: `parent-raw:${m.name}`, name: `${m.name} (raw)`, showSymbol: false,
      connectNulls: false, color: m.color, lineStyle: { width: 1, type: "dashed", opacity: 0.45 },
      z: 1, data: m.parent.raw, silent: true,
    }] : []),
    {
      type: "line", id: `parent:${m.name}`, name: m.name, showSymbol: m.parent.data.length === 1,
      connectNulls: false, color: m.color, lineStyle: { width: 1.5, type: "dashed", opacity: 0.75 },
      z: 2, data: [...m.parent.data, ...m.data.slice(0, 1)],
    },
  ]);
}

// The hover's line of a model: a continued line's parent part, then its own points
export function hoverLine(m) {
  return m.parent ? { ...m, data: [...m.parent.data, ...m.data] } : m;
}

// The ECharts series of line models: each smoothed line's raw points behind it, then the line
// (with a dashed mark where the run was resumed), then the parent parts of continued lines
export function lineSeries(models) {
  const raws = models.filter((m) => m.smoothed).map((m) => ({
    type: "line", name: `${m.name} (raw)`, showSymbol: false, connectNulls: false, color: m.color,
    lineStyle: { width: 1, opacity: 0.45 }, z: 1, data: m.raw, silent: true,
  }));
  const lines = models.map((m) => ({
    type: "line", name: m.name, showSymbol: false, connectNulls: false, color: m.color,
    lineStyle: { width: 1.8 }, z: 2, data: m.data,
    ...(m.resumes.length ? { markLine: {
      silent: true, symbol: "none", animation: false,
      lineStyle: { type: "dashed", color: m.color, width: 1.2 },
      label: { formatter: (p) => `resumed @${p.data.step}`, color: m.color, fontSize: 10, position: "insideEndTop" },
      data: m.resumes.map((r) => ({ xAxis: r.x, step: r.step })),
    } } : {}),
  }));
  return [...raws, ...lines, ...parentSeries(models)];
}
