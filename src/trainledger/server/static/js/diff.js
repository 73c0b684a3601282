// The diff view (#/diff?run=a&run=b): what differs between two or more runs, field by field,
// grouped as the server groups them (hyper-parameters, optimizer, user defined, dataset...).
// The server decides what differs (GET /api/v1/diff: 1e-3 equals 0.001, a missing field is
// not a null one); this view only draws its answer, and "Show all fields" asks for every field.
import { api } from "./api.js";
import { $, fmtField, h } from "./util.js";

let runs = [];

// The runs of a diff, from the hash's query part (run ids may hold "/" or ",").
export function diffRunsOf(query) {
  return new URLSearchParams(query).getAll("run");
}

export function diffHash(ids) {
  const params = new URLSearchParams();
  for (const id of ids) params.append("run", id);
  return `#/diff?${params}`;
}

// a run's value as every view shows it (format.js: 5 digits, dates, durations with a unit,
// NaN as "NaN"), its exact text in the title; lists and mappings as the server wrote them
function cell(name, value) {
  const cls = value.missing ? "missing" : value.value === null ? "null" : "";
  const whole = value.missing || (value.value !== null && typeof value.value === "object");
  return h("td", { class: cls, title: value.text, text: whole ? value.text : fmtField(name, value.value) });
}

function draw(answer) {
  const table = $("#diff-table");
  const head = h("tr", {}, h("th", { text: "Field" }),
    answer.runs.map((id) => h("th", {}, h("a", { href: `#/run/${id}`, text: id }))));
  const body = [];
  for (const group of answer.groups) {
    body.push(h("tr", { class: "group" },
      h("th", { colspan: String(answer.runs.length + 1), scope: "rowgroup", text: group.group })));
    for (const field of group.fields) {
      body.push(h("tr", { class: field.same ? "same" : "differs", dataset: { field: field.name } },
        h("td", { class: "field", text: field.name }), field.values.map((v) => cell(field.name, v))));
    }
  }
  table.replaceChildren(h("thead", {}, head), h("tbody", {}, body));
  const all = $("#diff-all").checked;
  const shown = all ? `all ${answer.fields} fields` : `${answer.differing} of ${answer.fields} fields differ`;
  $("#diff-info").textContent = `${answer.runs.length} runs; ${shown}`;
  $("#diff-empty").hidden = answer.groups.length > 0;
  $("#diff-empty").textContent = "These runs hold the same value in every field.";
}

async function load() {
  const view = $("#view-diff");
  view.dataset.loaded = "";
  if (runs.length < 2) {
    $("#diff-table").replaceChildren();
    $("#diff-info").textContent = "";
    $("#diff-empty").hidden = false;
    $("#diff-empty").textContent = "Tick two or more runs in the Model lineage table, then Diff.";
  } else {
    draw(await api.diff(runs, $("#diff-all").checked));
  }
  view.dataset.loaded = runs.join("\n");
}

export async function showDiff(query) {
  runs = diffRunsOf(query);
  await load();
}

export const refreshDiff = load;

export function initDiff() {
  $("#diff-all").addEventListener("change", () => { load().catch((e) => { $("#diff-info").textContent = e.message; }); });
}
