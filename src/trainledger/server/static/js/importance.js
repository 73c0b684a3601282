// "Which hyperparameters matter": importance of each hyperparameter for a chosen metric over
// the runs the lineage filter selects (GET /api/v1/importance), with a scatter per parameter.
import { api } from "./api.js";
import { lineageState } from "./lineage.js";
import { $, fmt, h, loadCharts } from "./util.js";

// two significant digits: 0.095 ± 0.047, not 0.094586 ± 0.046969
const round2 = (v) => (Number.isFinite(v) ? Number(v.toPrecision(2)).toString() : String(v));

const SCATTERS = 6; // the most important parameters get a scatter plot each
let bars = null;
let scatters = [];

function fillMetrics() {
  const select = $("#importance-metric");
  const metrics = ((lineageState.groups || {}).Metrics || []).filter((c) => c.startsWith("metric/"));
  const chosen = select.value;
  select.replaceChildren(...metrics.map((m) => h("option", { value: m, text: m.slice(7) })));
  if (metrics.includes(chosen)) select.value = chosen;
}

function drawBars(parameters) {
  if (!bars) bars = echarts.init($("#importance-bars"), null, { renderer: "svg" });
  const shown = [...parameters].reverse(); // the most important on top
  bars.setOption({
    animation: false,
    grid: { left: 150, right: 90, top: 10, bottom: 30 },
    xAxis: { type: "value", name: "drop in R² when shuffled", nameLocation: "middle", nameGap: 24 },
    yAxis: { type: "category", data: shown.map((p) => (p.aliases && p.aliases.length ? `${p.name} (= ${p.aliases.join(", ")})` : p.name)),
             axisLabel: { width: 140, overflow: "truncate" } },
    series: [{
      type: "bar", data: shown.map((p) => p.importance), itemStyle: { color: "#3563e9" },
      label: {
        show: true, position: "right",
        formatter: (d) => `${round2(d.value)} ± ${round2(shown[d.dataIndex].spread)}`,
      },
    }],
  }, { notMerge: true });
}

function drawScatters(parameters, metric) {
  for (const chart of scatters) chart.dispose();
  scatters = [];
  const grid = $("#importance-scatter");
  grid.replaceChildren();
  for (const p of parameters.slice(0, SCATTERS)) {
    const box = h("div", { class: "chart scatter", dataset: { param: p.name, log: p.log ? "1" : "" } });
    grid.append(box);
    const chart = echarts.init(box, null, { renderer: "svg" });
    const categorical = p.kind === "categorical";
    const xs = p.values.map((v) => (v === null ? "—" : v));
    chart.setOption({
      // one value under two names (learning_rate, optimizer/lr) is one parameter: its others named
      title: { text: p.aliases && p.aliases.length ? `${p.name} (= ${p.aliases.join(", ")})` : p.name,
               left: "center", textStyle: { fontSize: 12, fontWeight: "normal" } },
      animation: false,
      grid: { left: 50, right: 12, top: 28, bottom: 30 },
      tooltip: { trigger: "item" },
      xAxis: categorical
        ? { type: "category", data: [...new Set(xs.map(String))] }
        // a parameter spanning decades (a learning rate): a log axis, as the runs chart's
        : { type: p.log ? "log" : "value", scale: true, name: p.name, nameLocation: "middle", nameGap: 20,
            axisLabel: { formatter: (v) => fmt(v) } },
      yAxis: { type: "value", scale: true, name: metric.slice(7), nameGap: 8 },
      series: [{
        type: "scatter", symbolSize: 6,
        data: xs.map((x, i) => [categorical ? String(x) : x, p.metric_values[i]]),
      }],
    });
    scatters.push(chart);
  }
}

async function compute() {
  const metric = $("#importance-metric").value;
  const note = $("#importance-note");
  if (!metric) { note.textContent = "No metric to explain: no run has a metric."; return; }
  note.textContent = "Computing…";
  let answer;
  try {
    // the runs page may not have started ECharts yet (util.js loadCharts)
    [answer] = await Promise.all([
      api.importance(metric, lineageState.where, $("#importance-ids").checked), loadCharts()]);
  } catch (error) {
    note.textContent = error.message;
    return;
  }
  if (answer.reason) {
    note.textContent = answer.reason;
    $("#importance-bars").hidden = true;
    drawBars([]);
    drawScatters([], metric);
    return;
  }
  const left = answer.left_out.length ? ` · left out as id-like: ${answer.left_out.join(", ")}` : "";
  note.textContent = `${answer.runs} runs · ${answer.verdict} · mean drop in held-out R² when one parameter is shuffled, ± its spread over 5 folds${left}`;
  $("#importance-card").dataset.explains = String(answer.explains);
  // below its own threshold the answer says the parameters explain nothing: bars would
  // rank noise, so none are drawn (the verdict says why)
  const shown = answer.explains ? answer.parameters : [];
  drawBars(shown);
  drawScatters(shown, metric);
  $("#importance-bars").hidden = !answer.explains;
  $("#importance-card").dataset.ready = "1";
}

export function initImportance() {
  const card = $("#importance-card");
  card.addEventListener("toggle", () => { if (card.open) fillMetrics(); });
  $("#importance-run").onclick = compute;
  window.addEventListener("resize", () => { if (bars) bars.resize(); for (const c of scatters) c.resize(); });
}
