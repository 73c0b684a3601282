// The run page's named models: "Registered as" chips under its head, each checkpoint row's
// versions and, with the read-write token, its Register action (a model name and an
// optional alias; POST /api/v1/models/<name>/versions).
import { api } from "./api.js";
import { forgetModels, modelsByRun, versionText } from "./model_map.js";
import { $, h, toast } from "./util.js";

let shown = null;  // {id, writer}: the run the page shows

// the run's "Registered as" line and each checkpoint row's versions (from the cached map)
export async function showRunModels(id, writer) {
  shown = { id, writer };
  const versions = (await modelsByRun()).get(id) || [];
  if (shown.id !== id) return;  // another run was opened meanwhile
  const line = $("#run-models");
  line.hidden = !versions.length;
  line.replaceChildren(h("span", { class: "muted", text: "Registered as" }),
    ...versions.map((v) => h("a", { class: "chip model-chip", href: `#/models/${encodeURIComponent(v.name)}`,
      text: versionText(v), title: v.path })));
  for (const row of document.querySelectorAll("#run-checkpoints tbody tr[data-checkpoint]")) {
    const path = `${id}/${row.dataset.checkpoint}`;
    const mine = versions.filter((v) => v.path === path);
    row.querySelector("td.models").replaceChildren(
      ...mine.map((v) => h("span", { class: "chip model-chip", text: versionText(v) })),
      writer ? h("button", { type: "button", class: "small register", text: "Register",
        title: "Register this checkpoint as a new version of a named model",
        onclick: () => openForm(row) }) : null);
  }
}

function openForm(row) {
  document.querySelectorAll("#run-checkpoints tr.register-row").forEach((r) => r.remove());
  const checkpoint = row.dataset.checkpoint;
  const names = h("datalist", { id: "model-names" });
  api.models().then((data) => names.replaceChildren(
    ...data.models.map((m) => h("option", { value: m.name })))).catch(() => {});
  const form = h("form", { class: "register-form toolbar", autocomplete: "off" },
    h("span", { class: "muted", text: `Register ${checkpoint} as` }),
    h("label", {}, "Model ", h("input", { name: "model", required: true, list: "model-names",
      placeholder: "classifier", spellcheck: "false", size: "16" })),
    names,
    h("label", {}, "Alias ", h("input", { name: "alias", placeholder: "optional", spellcheck: "false", size: "12" })),
    h("button", { type: "submit", class: "small primary", text: "Register" }),
    h("button", { type: "button", class: "small ghost", text: "Cancel", onclick: () => formRow.remove() }));
  const formRow = h("tr", { class: "register-row" }, h("td", { colspan: "6" }, form));
  row.after(formRow);
  form.elements.model.focus();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = form.elements.model.value.trim();
    const alias = form.elements.alias.value.trim();
    const { id, writer } = shown;
    let version;
    try {
      version = await api.registerModel(name, id, checkpoint, alias);
    } catch (error) {
      toast(error.message);  // (a bad alias after the registration: the version shows below)
      forgetModels();
      await showRunModels(id, writer);
      return;
    }
    formRow.remove();
    toast(`Registered ${versionText(version)} from ${checkpoint}`);
    forgetModels();
    await showRunModels(id, writer);
  });
}
