// The Models page (#/models, #/models/<name>): each named model with its versions (run,
// step, main metric, who registered it and when), its aliases as chips on their version, a
// form moving or removing an alias (with the read-write token only) and its history.
import { api } from "./api.js";
import { forgetModels, rememberModels } from "./model_map.js";
import { $, exact, fmt, fmtTime, h, toast } from "./util.js";

let role = "read";

function metricText(metric) {
  const entries = Object.entries(metric || {});
  return entries.length ? `${entries[0][0]} ${fmt(entries[0][1])}` : "—";
}

function aliasChip(model, alias, version) {
  return h("span", {
    class: "chip alias-chip", dataset: { alias, version: String(version) },
    title: `${model.name}@${alias} -> version ${version}`, text: `@${alias}`,
    onclick: () => {  // the form takes the alias to move
      const form = $(`form.alias-form[data-model="${CSS.escape(model.name)}"]`);
      if (!form) return;
      form.elements.alias.value = alias;
      form.elements.version.value = String(version);
    },
  });
}

function runCell(v) {
  if (!v.present) return h("td", { class: "null", title: `${v.run}: no longer in the base` }, `${v.run_id} (gone)`);
  return h("td", {}, h("a", { class: "run-link", href: `#/run/${v.run_id}`, text: v.run_id }));
}

function versionsTable(model) {
  const rows = model.versions.slice().reverse().map((v) => h("tr", { dataset: { version: String(v.version) } },
    h("td", { class: "version", text: `v${v.version}` }),
    h("td", {}, ...v.aliases.map((a) => aliasChip(model, a, v.version))),
    runCell(v),
    h("td", { text: v.path, title: v.path }),
    h("td", { class: "num", text: fmt(v.step) }),
    h("td", { class: "metric", text: metricText(v.metric), title: exact(Object.values(v.metric || {})[0]) }),
    h("td", { text: fmtTime(v.time) }),
    h("td", { class: "actor", text: v.actor })));
  return h("table", { class: "runs model-versions" },
    h("thead", {}, h("tr", {}, ...["Version", "Aliases", "Run", "Checkpoint", "Step", "Main metric",
      "Registered", "By"].map((t) => h("th", { text: t })))),
    h("tbody", {}, ...rows));
}

const was = (version) => (version === null || version === undefined ? "—" : `v${version}`);

function historyTable(history) {
  const rows = history.slice().reverse().map((e) => h("tr", { dataset: { seq: String(e.seq), action: e.action } },
    h("td", { text: fmtTime(e.time) }),
    h("td", { class: "actor", text: e.actor }),
    h("td", { text: e.action }),
    h("td", { class: "alias", text: e.alias ? `@${e.alias}` : "—" }),
    h("td", { class: "change", text: `${was(e.previous)} → ${e.version === null ? "removed" : was(e.version)}` }),
    h("td", { text: e.action === "register" ? (e.checkpoint || "") : "" })));
  return h("table", { class: "runs model-history" },
    h("thead", {}, h("tr", {}, ...["Time", "Actor", "Action", "Alias", "Version", "Checkpoint"]
      .map((t) => h("th", { text: t })))),
    h("tbody", {}, ...rows));
}

function aliasForm(model) {
  const versions = model.versions.map((v) => v.version).reverse();
  const list = `aliases-${model.name}`;
  const form = h("form", { class: "alias-form toolbar", dataset: { model: model.name }, autocomplete: "off" },
    h("label", {}, "Alias ", h("input", { name: "alias", required: true, list, placeholder: "production",
      spellcheck: "false", size: "14" })),
    h("datalist", { id: list }, ...Object.keys(model.aliases).map((a) => h("option", { value: a }))),
    h("label", {}, "Version ", h("select", { name: "version" },
      ...versions.map((n) => h("option", { value: String(n), text: `v${n}` })))),
    h("button", { type: "submit", class: "small primary", name: "move", text: "Move alias" }),
    h("button", { type: "button", class: "small danger", name: "remove", text: "Remove alias" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    change(model.name, form.elements.alias.value.trim(), Number(form.elements.version.value));
  });
  form.elements.remove.addEventListener("click", () => {
    if (form.elements.alias.reportValidity()) change(model.name, form.elements.alias.value.trim(), null);
  });
  return form;
}

async function change(name, alias, version) {
  let entry;
  try {
    entry = version === null ? await api.removeAlias(name, alias) : await api.moveAlias(name, alias, version);
  } catch (error) {
    toast(error.message);
    return;
  }
  forgetModels();
  toast(`${name}@${alias} → ${entry.version === null ? "removed" : `v${entry.version}`} (was ${was(entry.previous)})`);
  await redraw(name);
}

function modelCard(model) {
  const aliases = Object.entries(model.aliases);
  return h("div", { class: "card model-card", dataset: { model: model.name } },
    h("div", { class: "card-head" }, h("h2", { text: model.name }),
      h("span", { class: "muted", text: `latest v${model.latest} · ${model.versions.length} version${model.versions.length === 1 ? "" : "s"}` }),
      h("span", { class: "muted", text: aliases.length ? aliases.map(([a, v]) => `@${a} → v${v}`).join(", ") : "no aliases" })),
    h("div", { class: "table-wrap" }, versionsTable(model)),
    role === "write" ? aliasForm(model) : null,
    h("h3", { text: "History" }),
    h("div", { class: "table-wrap" }, historyTable(model.history || [])));
}

// one model's card again, from its own answer (after a move: its history has grown)
async function redraw(name) {
  const model = await api.model(name);
  const old = $(`.model-card[data-model="${CSS.escape(name)}"]`);
  if (old) old.replaceWith(modelCard(model));
  api.models().then((data) => rememberModels(data.models)).catch(() => {});
}

export async function showModels(name = null) {
  const [data, status] = await Promise.all([api.models(), api.status(false)]);
  role = status.role;
  rememberModels(data.models);
  const details = await Promise.all(data.models.map((m) => api.model(m.name)));
  $("#models-list").replaceChildren(...details.map(modelCard));
  $("#models-empty").hidden = details.length > 0;
  const wanted = name && $(`.model-card[data-model="${CSS.escape(name)}"]`);
  if (wanted) {
    wanted.classList.add("focused");
    wanted.scrollIntoView({ block: "start" });
  }
}
