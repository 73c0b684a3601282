// Compare scalars grouped by a field (an optimizer, a user field), as W&B and Aim group runs
// (issue 51 item 5). Runs of one group rarely share their steps (eval every epoch at another
// batch size, runs of different lengths), so each run is aligned on the chosen x by linear
// interpolation within its own range (never beyond its first or last point): at each x any
// member has a point at, the mean and the min-max band are over the runs that cover it, and
// how many those are is said (the hover, the line's data). The band stops where fewer than two
// runs do, and is a polygon, which a log axis draws as well as a linear one. What is averaged
// is what each run's line shows (smoothed or not), so the mean and its band are smoothed alike.
// A run without the field is in the group "—".
export function groupKey(value) {
  return value === null || value === undefined ? "—" : String(value);
}

// The groups of runs ``ids``, in the order their colours are given (numbers by value, then
// text): the charts and the run list's swatches use the same order, so a group keeps its
// colour in every chart, even one where some of its runs have no line.
export function groupKeys(ids, valueOf) {
  return [...new Set(ids.map((id) => groupKey(valueOf(id))))].sort((a, b) => {
    const [x, y] = [Number(a), Number(b)];
    return Number.isFinite(x) && Number.isFinite(y) ? x - y : a.localeCompare(b);
  });
}

// The value of `data` ([[x, y], ...] by x, y finite) at `x` by linear interpolation, or null
// outside its range; `at` is a cursor ({i}) that only moves forward over increasing x
function valueAt(data, x, at) {
  if (!data.length || x < data[0][0] || x > data[data.length - 1][0]) return null;
  while (at.i + 1 < data.length && data[at.i + 1][0] <= x) at.i += 1;
  const [x0, y0] = data[at.i];
  if (x0 === x || at.i + 1 >= data.length) return y0;
  const [x1, y1] = data[at.i + 1];
  return y0 + ((y1 - y0) * (x - x0)) / (x1 - x0);
}

// One line's finite points, by x; a gap (NaN) splits it, so nothing is interpolated across it
function pieces(model) {
  const out = [[]];
  for (const p of [...model.data].sort((a, b) => a[0] - b[0])) {
    if (p[1] === null || !Number.isFinite(p[1])) { if (out.at(-1).length) out.push([]); continue; }
    out.at(-1).push([p[0], p[1]]);
  }
  return out.filter((piece) => piece.length);
}

// The groups of line `models` (scalar_lines.js): {key, runs, data: [[x, mean, step, null,
// undefined, runs covering x]], band: [[[x, min, max], ...] per stretch covered by >= 2 runs]}
export function groupModels(models, valueOf, { stepAxis = true } = {}) {
  const groups = new Map();
  for (const m of models) {
    const key = groupKey(valueOf(m.run_id));
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(m);
  }
  const keys = groupKeys(models.map((m) => m.run_id), valueOf);
  return keys.map((key) => {
    const members = groups.get(key);
    const parts = members.flatMap(pieces);
    const xs = [...new Set(parts.flatMap((part) => part.map((p) => p[0])))].sort((a, b) => a - b);
    const cursors = parts.map(() => ({ i: 0 }));
    const data = [];
    const band = [[]];
    for (const x of xs) {
      const ys = parts.map((part, j) => valueAt(part, x, cursors[j])).filter((y) => y !== null);
      const mean = ys.reduce((a, b) => a + b, 0) / ys.length;
      data.push([x, mean, stepAxis ? x : null, null, undefined, ys.length]);
      if (ys.length >= 2) band.at(-1).push([x, Math.min(...ys), Math.max(...ys)]);
      else if (band.at(-1).length) band.push([]);
    }
    return { key, runs: [...new Set(members.map((m) => m.run_id))], data,
             band: band.filter((b) => b.length > 1) };
  });
}

// The band of a group as an ECharts custom series: one polygon per stretch (upper edge out,
// lower edge back), drawn at the stretch's first point; data [x, min, max, stretch, index];
// on a log axis only its positive part can be drawn
export function bandSeries(name, color, band, log) {
  const stretches = band.map((b) => (log ? b.filter((p) => p[1] > 0) : b)).filter((b) => b.length > 1);
  return {
    type: "custom", name: `${name} (band)`, silent: true, z: 1, clip: true,
    data: stretches.flatMap((b, k) => b.map((p, j) => [p[0], p[1], p[2], k, j])),
    encode: { x: 0, y: [1, 2] },
    renderItem: (params, api) => {
      if (api.value(4) !== 0) return null;
      const b = stretches[api.value(3)];
      const points = [...b.map((p) => api.coord([p[0], p[2]])), ...[...b].reverse().map((p) => api.coord([p[0], p[1]]))];
      return { type: "polygon", shape: { points }, style: { fill: color, opacity: 0.2 } };
    },
  };
}
