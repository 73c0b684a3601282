// The runs table's `parent/run` cells (issue 53 items 4 and 6): the run each run started
// from, found from the weights. It is an index field like any other (chosen in the column
// chooser's "Family" group, sorted, filtered, exported, drawn on the chart); its cell is a
// link to that run with the step of the checkpoint, the checkpoint and the share of the
// weights in its title. A file loaded from outside the base has no run: its name is shown.
import { h } from "./util.js";

export const PARENT_COLUMN = "parent/run";

// the cell's contents, from the row's parent group (``model_lineage.parent``)
export function parentCell(parent) {
  if (!parent || (!parent.run && !parent.checkpoint)) return ["—"];
  const step = parent.step === null || parent.step === undefined ? "" : ` @${parent.step}`;
  const more = parent.count > 1 ? ` (+${parent.count - 1})` : "";
  const title = `${parent.checkpoint || ""} (${Math.round((parent.match || 0) * 100)}% of the weights`
    + `${parent.count > 1 ? `; ${parent.count} sources` : ""})`;
  const id = parent.run ? parent.run.replace(/^\.\//, "") : null;
  const node = id
    ? h("a", { class: "run-link", href: `#/run/${id}`, text: id, title })
    : h("span", { class: "muted", text: (parent.checkpoint || "").split("/").pop(), title });
  return [node, step, more];
}
