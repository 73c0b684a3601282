// The JSON API client. Errors carry the server's message (a 400 names the bad condition).

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function detailOf(body, status) {
  if (body && typeof body.detail === "string") return body.detail;
  if (body && Array.isArray(body.detail)) {
    return body.detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ");
  }
  return `request failed with status ${status}`;
}

async function request(method, path, { body, query } = {}) {
  const url = new URL(`/api/v1${path}`, window.location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    for (const item of [].concat(value)) url.searchParams.append(key, item);
  }
  const init = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response = await fetch(url, init);
  // 503 with Retry-After: the index is being rebuilt (its file was deleted or replaced); ask
  // again as told, for up to about 30 s, rather than show an error or an empty table
  for (let tries = 0; response.status === 503 && tries < 15; tries += 1) {
    const wait = Number(response.headers.get("Retry-After"));
    if (!(wait > 0 && wait <= 10)) break;
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    response = await fetch(url, init);
  }
  const type = response.headers.get("content-type") || "";
  if (!response.ok) {
    const data = type.includes("json") ? await response.json().catch(() => null) : null;
    throw new ApiError(response.status, detailOf(data, response.status));
  }
  if (type.includes("json")) return response.json();
  return response.blob();
}

const enc = (id) => id.split("/").map(encodeURIComponent).join("/");

export const api = {
  status: (scan = true) => request("GET", scan ? "/status" : "/status?scan=false"),
  search: (condition, where) => request("POST", "/runs", { body: condition, query: { where } }),
  points: (condition, where, columns, maxRuns = 5000) =>
    request("POST", "/runs/points", { body: { condition, where, columns, max_runs: maxRuns } }),
  columns: (condition, where) =>
    request("POST", "/runs/columns", { body: condition, query: { where } }),
  exportCsv: (condition, where, columns) =>
    request("POST", "/runs/export.csv", { body: condition, query: { where, columns } }),
  run: (id) => request("GET", `/runs/${enc(id)}`),
  annotate: (id, patch) => request("PUT", `/runs/${enc(id)}/annotation`, { body: patch }),
  archive: (id) => request("POST", `/runs/${enc(id)}/archive`),
  remove: (id) => request("DELETE", `/runs/${enc(id)}`),
  imageTags: (id) => request("GET", `/runs/${enc(id)}/images`),
  imageUrl: (id, tag, index) =>
    `/api/v1/runs/${enc(id)}/images/file?${new URLSearchParams({ tag, index: String(index) })}`,
  histogramTags: (id) => request("GET", `/runs/${enc(id)}/histograms`),
  histogramSeries: (id, tag) => request("GET", `/runs/${enc(id)}/histograms/series`, { query: { tag } }),
  tensorTags: (id) => request("GET", `/runs/${enc(id)}/tensors`),
  tensorValue: (id, tag, index) =>
    request("GET", `/runs/${enc(id)}/tensors/value`, { query: { tag, index } }),
  landscapes: (id) => request("GET", `/runs/${enc(id)}/landscapes`),
  graph: (id, maxNodes) =>
    request("GET", `/runs/${enc(id)}/graph`, { query: maxNodes ? { max_nodes: maxNodes } : {} }),
  family: (id) => request("GET", `/runs/${enc(id)}/family`),
  datasets: () => request("GET", "/datasets"),
  diff: (runs, all = false) => request("GET", "/diff", { query: { run: runs, all } }),
  importance: (metric, where, includeIds = false) =>
    request("GET", "/importance", { query: { metric, where, include_ids: includeIds } }),
  // named models: the registry (GET), a registration from a run's checkpoint table, aliases
  models: () => request("GET", "/models"),
  model: (name) => request("GET", `/models/${encodeURIComponent(name)}`),
  registerModel: (name, run, checkpoint, alias) => request("POST",
    `/models/${encodeURIComponent(name)}/versions`, { body: { run, checkpoint, alias: alias || null } }),
  moveAlias: (name, alias, version) => request("PUT",
    `/models/${encodeURIComponent(name)}/aliases/${encodeURIComponent(alias)}`, { body: { version } }),
  removeAlias: (name, alias) =>
    request("DELETE", `/models/${encodeURIComponent(name)}/aliases/${encodeURIComponent(alias)}`),
  scalarTags: (runs) => request("GET", "/scalars/tags", { query: { run: runs } }),
  // range: {step_min, step_max} of a zoomed chart, re-bucketed from the full data, and the
  // other options of the series API (smoothing, continue_parent)
  series: (runs, tags, view = "merged", range = {}) =>
    request("POST", "/scalars/series", { body: { runs, tags, view, ...range } }),
};
