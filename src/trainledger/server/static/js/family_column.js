// The runs table's `parent/run` column (issue 53 item 6): the run(s) each run started from,
// found from the weights (GET /runs/{id}/family). It is no index field, so it is offered by
// the page (a "Family" group of the column chooser), never drawn on the chart, sorted or
// exported, and filled after the rows are drawn, one request per run of the visible page
// only, and only while the column is chosen: the table's first load asks for nothing.
import { api } from "./api.js";
import { h } from "./util.js";

export const PARENT_COLUMN = "parent/run";
export const FAMILY_GROUP = "Family";

// a column the index knows (chart axes, sort keys, the CSV): not this one
export const indexColumn = (column) => column !== PARENT_COLUMN;

// the parents (depth 1) of one family answer, each a link, a file from outside the base by
// its name; "—" for a run that started from no other
export function parentCell(found) {
  const parents = (found.ancestors || []).filter((a) => (a.depth || 1) === 1);
  if (!parents.length) return ["—"];
  return parents.flatMap((p, i) => {
    const step = p.step === null || p.step === undefined ? "" : ` @${p.step}`;
    const title = `${p.checkpoint || ""} (${Math.round((p.match || 0) * 100)}% of the weights)`;
    const node = p.run_id
      ? h("a", { class: "run-link", href: `#/run/${p.run_id}`, text: p.run_id, title })
      : h("span", { class: "muted", text: (p.checkpoint || "").split("/").pop(), title });
    return [...(i ? [", "] : []), node, step];
  });
}

// fill the column's cells of the rows drawn (each cell's run in its row's data-run)
export function fillParents(tbody) {
  for (const cell of tbody.querySelectorAll(`td[data-column="${PARENT_COLUMN}"]`)) {
    const id = cell.closest("tr").dataset.run;
    cell.dataset.loaded = "";
    api.family(id).then((found) => {
      cell.classList.remove("null");
      cell.title = "";
      cell.replaceChildren(...parentCell(found));
    }, () => { cell.textContent = "—"; }).finally(() => { cell.dataset.loaded = id; });
  }
}
