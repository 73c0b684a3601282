// Data lineage: the dataset graphs of the runs as trees, runs grouped by dataset_mark.
import { api } from "./api.js";
import { $, h, treeOption } from "./util.js";

const state = { groups: [], current: 0, chart: null };

function render() {
  const list = $("#dataset-groups");
  list.replaceChildren(h("h3", { text: `Datasets (${state.groups.length})` }));
  state.groups.forEach((group, i) => {
    const n = group.run_ids.length;
    list.append(h("div", {
      class: `group ${i === state.current ? "on" : ""}`, dataset: { mark: group.dataset_mark ?? "" },
      onclick: () => { state.current = i; render(); },
    },
      h("div", { class: "title", text: group.dataset_mark ? `Dataset ${group.dataset_mark}` : "No dataset graph" }),
      h("div", { class: "meta", text: `${n} run${n === 1 ? "" : "s"} · ${group.dataset_graph.op_type || "—"}`
        + (group.batch_sizes.length ? ` · batch ${group.batch_sizes.join(", ")}` : "") })));
  });
  if (!state.groups.length) list.append(h("div", { class: "empty", text: "No runs yet." }));
  const group = state.groups[state.current];
  if (!state.chart) {
    state.chart = echarts.init($("#dataset-tree"), null, { renderer: "svg" });
    window.addEventListener("resize", () => state.chart.resize());
  }
  const option = group && treeOption(group.dataset_graph);
  state.chart.clear();
  if (option) state.chart.setOption(option, { notMerge: true });
  $("#dataset-title").textContent = group && group.dataset_mark ? `Dataset ${group.dataset_mark}` : "Dataset graph";
  $("#dataset-runs").replaceChildren(...(group ? group.run_ids : []).map(
    (id) => h("a", { class: "chip", href: `#/run/${id}`, text: id })));
}

export async function showDatasets() {
  const result = await api.datasets();
  state.groups = result.groups;
  if (state.current >= state.groups.length) state.current = 0;
  render();
  state.chart.resize();
}
