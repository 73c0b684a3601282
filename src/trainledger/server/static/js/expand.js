// Any chart full-window: an enlarge button in its corner, Escape (or the button again) to
// go back. The chart is not drawn again here: each view already redraws on a window resize
// (ECharts' resize, the contour's grid, plotly's `responsive`), so one resize event after the
// box changed size is enough.
import { h } from "./util.js";

let open = null;

function relayout() {
  window.dispatchEvent(new Event("resize"));
}

function close() {
  if (!open) return;
  open.classList.remove("expanded");
  open.querySelector(".chart-expand").title = "Enlarge";
  open = null;
  relayout();
}

function expand(wrap) {
  close();
  wrap.classList.add("expanded");
  wrap.querySelector(".chart-expand").title = "Back (Escape)";
  open = wrap;
  relayout();
}

// Wrap `host` (a chart's box) in a box with the button; again on the same host: no-op.
export function expandable(host) {
  const parent = host.parentElement;
  if (parent && parent.classList.contains("expand-wrap")) return parent;
  const wrap = h("div", { class: "expand-wrap" });
  host.replaceWith(wrap);
  const button = h("button", { type: "button", class: "chart-expand", title: "Enlarge",
    "aria-label": "Enlarge the chart", text: "⤢" });
  button.addEventListener("click", () => (open === wrap ? close() : expand(wrap)));
  wrap.append(host, button);
  return wrap;
}

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && open) close();
});
