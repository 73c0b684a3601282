// The run page's own curves: its first scalar tags as small charts (every point as the series
// API serves it, merged view, no smoothing); Compare scalars has the rest and the controls.
import { api } from "./api.js";
import { expandable } from "./expand.js";
import { $, escapeHtml, fmt, fmtTime, h } from "./util.js";

const SHOWN = 6;
let charts = [];
let current = 0;

function hover(params) {
  const [p] = params;
  if (!p) return "";
  const [step, value, wall] = p.value;
  return `step ${step} · ${escapeHtml(fmtTime(wall))}<br><b>${fmt(value)}</b>`;
}

export async function showRunScalars(id, onOpen) {
  const ticket = ++current;  // a later run's request wins
  const box = $("#run-scalars-charts");
  for (const chart of charts) chart.dispose();
  charts = [];
  box.replaceChildren();
  const { tags } = await api.scalarTags([id]);
  if (ticket !== current) return;
  $("#run-scalars").hidden = !tags.length;
  if (!tags.length) return;
  const shown = tags.slice(0, SHOWN);
  $("#run-scalars-more").textContent = tags.length > SHOWN
    ? `${tags.length - SHOWN} more tags in Compare scalars` : "Open in Compare scalars";
  $("#run-scalars-more").onclick = () => onOpen && onOpen(id);
  const { series } = await api.series([id], shown, "merged");
  if (ticket !== current) return;
  for (const tag of shown) {
    const line = series.find((s) => s.tag === tag);
    const host = h("div", { class: "chart chart-small", dataset: { tag } });
    box.append(h("div", { class: "mini" }, h("h3", { text: tag }), host));
    expandable(host);
    const chart = echarts.init(host, null, { renderer: "svg" });
    const points = line ? line.points.map(([step, wall, value]) => [step, value, wall]) : [];
    host.dataset.points = String(points.length);
    chart.setOption({
      animation: false,
      grid: { left: 48, right: 10, top: 10, bottom: 24 },
      tooltip: { trigger: "axis", formatter: hover },
      xAxis: { type: "value", scale: true, axisLabel: { color: "#6b7489", hideOverlap: true },
               splitLine: { show: false } },
      yAxis: { type: "value", scale: true, axisLabel: { color: "#6b7489", formatter: (v) => fmt(v) },
               splitLine: { lineStyle: { color: "#eef1f6" } } },
      series: [{ type: "line", showSymbol: points.length < 50, data: points,
                 lineStyle: { width: 1.6 }, color: "#3a6ff7" }],
    });
    charts.push(chart);
  }
}

window.addEventListener("resize", () => { for (const chart of charts) chart.resize(); });
