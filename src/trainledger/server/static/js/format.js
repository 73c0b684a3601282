// One formatting of numbers, times, durations and non-finite values for every view: the
// runs table, the run page, the diff, the parallel coordinates and their hover (issue 51,
// item 12). Why one module: the same NaN read "null" in the diff, "—" in the table and "NaN"
// on an axis, and a float printed with 17 digits in one place and 5 in another.
//
// The server sends a non-finite number as protobuf JSON's strings ("NaN", "Infinity",
// "-Infinity"; JSON has no NaN) and a missing value as null: here they read "NaN", "inf",
// "-inf" and "—". Exact values stay available in a cell's title (`exact`).

const NONFINITE = new Map([["NaN", "NaN"], ["Infinity", "inf"], ["-Infinity", "-inf"]]);

// "NaN", "inf" or "-inf" for a non-finite number (or the server's string for one), else null
export function nonFiniteText(value) {
  if (typeof value === "number") {
    if (Number.isNaN(value)) return "NaN";
    if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
    return null;
  }
  return typeof value === "string" ? NONFINITE.get(value) ?? null : null;
}

export const isNonFinite = (value) => nonFiniteText(value) !== null;

// a number as the server sent it, as a JS number (NaN, ±Infinity included); null otherwise
export function asNumber(value) {
  if (typeof value === "number") return value;
  if (value === "NaN") return NaN;
  if (value === "Infinity") return Infinity;
  if (value === "-Infinity") return -Infinity;
  return null;
}

// Five significant digits, trailing zeros dropped; scientific below 1e-3 and from 1e6 on
// (3 digits after the point); integers as they are.
export function fmt(value) {
  if (value === null || value === undefined) return "—";
  const odd = nonFiniteText(value);
  if (odd) return odd;
  if (typeof value === "number") {
    if (Number.isInteger(value) && Math.abs(value) < 1e15) return String(value);
    const abs = Math.abs(value);
    if (abs !== 0 && (abs < 1e-3 || abs >= 1e6)) {
      return value.toExponential(3).replace(/\.?0+e/, "e");
    }
    return String(Number(value.toPrecision(5)));
  }
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

// seconds as 12.3s, 4m05s or 1h02m (a duration, an axis of relative time); 3d04h past a day
export function fmtDuration(seconds) {
  const odd = nonFiniteText(seconds);
  if (odd) return odd;
  if (typeof seconds !== "number") return "—";
  const s = Math.abs(seconds);
  const sign = seconds < 0 ? "-" : "";
  const pad = (n) => String(n).padStart(2, "0");
  if (s < 60) return `${Number(seconds.toFixed(1))}s`;
  if (s < 3600) return `${sign}${Math.floor(s / 60)}m${pad(Math.floor(s % 60))}s`;
  if (s < 86400) return `${sign}${Math.floor(s / 3600)}h${pad(Math.floor((s % 3600) / 60))}m`;
  return `${sign}${Math.floor(s / 86400)}d${pad(Math.floor((s % 86400) / 3600))}h`;
}

// epoch seconds as the local date and time, "2026-11-26 14:03:05": one form everywhere,
// sortable, and the same in every browser locale
export function fmtTime(seconds) {
  if (typeof seconds !== "number" || !Number.isFinite(seconds) || !seconds) return "—";
  const d = new Date(seconds * 1000);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} `
    + `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function fmtBytes(n) {
  if (typeof n !== "number" || !Number.isFinite(n)) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

// what a field holds, by its name as conditions name it: times, durations, or a value
const TIME_FIELD = /(^|[/_])(start_time|end_time|wall_time|time|started|ended)$/;
const DURATION_FIELD = /(^|[/_])duration$/;

export function fieldKind(name) {
  if (TIME_FIELD.test(name)) return "time";
  if (DURATION_FIELD.test(name)) return "duration";
  return "value";
}

// a field's value as every view shows it (a time as a date only when it is one: > 1e9 s)
export function fmtField(name, value) {
  const kind = fieldKind(name);
  if (kind === "time" && typeof value === "number" && value > 1e9) return fmtTime(value);
  if (kind === "duration" && typeof value === "number") return fmtDuration(value);
  return fmt(value);
}

// a cell's title: the exact value as sent (every digit), "" for a missing one
export function exact(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}
