// Which named-model versions each run holds, for the runs table's chip and the run page's
// "Registered as" line: one GET /api/v1/models per page load, shared by every row and view
// (never a request per row), asked again only after this page registered or moved something.
import { api } from "./api.js";
import { h } from "./util.js";

let byRun = null;  // a promise of Map run id -> [{name, version, aliases, path}]

// "classifier v2 @production @candidate"
export function versionText(v) {
  return [`${v.name} v${v.version}`, ...(v.aliases || []).map((a) => `@${a}`)].join(" ");
}

export function runMap(models) {
  const map = new Map();
  for (const model of models || []) {
    for (const v of model.versions || []) {
      if (!map.has(v.run_id)) map.set(v.run_id, []);
      map.get(v.run_id).push(v);
    }
  }
  return map;
}

// the map (cached); a registry that cannot be read is an empty one, asked again next time:
// the table still shows
export function modelsByRun() {
  byRun ??= api.models().then((data) => runMap(data.models)).catch(() => {
    byRun = null;
    return new Map();
  });
  return byRun;
}

// what the models page fetched is the newest: the table and the run page use it
export function rememberModels(models) {
  byRun = Promise.resolve(runMap(models));
}

export function forgetModels() {
  byRun = null;
}

// the runs table's chip on a run's id cell: its versions, each with its aliases
export function modelChip(versions) {
  if (!versions || !versions.length) return null;
  const texts = versions.map(versionText);
  return h("a", {
    class: "chip model-chip", href: `#/models/${encodeURIComponent(versions[0].name)}`,
    text: texts.join(", "), title: `Registered as: ${texts.join("; ")}`,
  });
}
