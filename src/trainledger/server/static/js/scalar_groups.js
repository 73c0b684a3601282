// Compare scalars grouped by a field (an optimizer, a user field), as W&B and Aim group runs:
// per group and step, the mean over the group's runs that have a finite value there, and the
// min-max band around it. A run without the field is in the group "—".
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

export function groupLines(lines, valueOf) {
  const groups = new Map();
  for (const line of lines) {
    const key = groupKey(valueOf(line.run_id));
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(line);
  }
  const keys = groupKeys(lines.map((line) => line.run_id), valueOf);
  return keys.map((key) => {
    const members = groups.get(key);
    const byStep = new Map();
    for (const line of members) {
      for (const [step, wall, value] of line.points) {
        if (!Number.isFinite(value)) continue;
        const at = byStep.get(step) || { sum: 0, n: 0, min: Infinity, max: -Infinity, wall };
        at.sum += value;
        at.n += 1;
        at.min = Math.min(at.min, value);
        at.max = Math.max(at.max, value);
        byStep.set(step, at);
      }
    }
    const steps = [...byStep.keys()].sort((a, b) => a - b);
    return {
      key,
      runs: members.map((m) => m.run_id),
      // [step, wall time, mean, min, max]
      points: steps.map((step) => {
        const at = byStep.get(step);
        return [step, at.wall, at.sum / at.n, at.min, at.max];
      }),
    };
  });
}
