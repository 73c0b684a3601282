// A resumed run's sessions on its run page (issue 51 item 11): a table of the processes that
// trained it (when each started and ended, as dates; how long; its first and last step; where
// it ran), not the record's JSON with epoch seconds. The CLI's `show` has the same table
// (cli/show_render.py).
import { fmt, fmtDuration, fmtTime, h } from "./util.js";

const HEAD = ["#", "Started", "Ended", "Duration", "Steps", "Host", "PID"];

function steps(session) {
  const [first, last] = [session.first_step, session.last_step];
  if (first === null || first === undefined) return last === null || last === undefined ? "—" : `… ${last}`;
  return `${first} – ${last === null || last === undefined ? "…" : last}`;
}

// The card of `sessions` (the run record's list), or null for a run with none
export function sessionsCard(sessions) {
  if (!Array.isArray(sessions) || !sessions.length) return null;
  const rows = sessions.map((raw, i) => {
    const s = raw && typeof raw === "object" ? raw : {};
    const span = s.end_time && s.start_time ? s.end_time - s.start_time : null;
    return h("tr", {},
      h("td", { class: "num", text: String(i + 1) }),
      h("td", { text: fmtTime(s.start_time), title: s.start_time ? String(s.start_time) : "" }),
      h("td", { text: s.end_time ? fmtTime(s.end_time) : "— (killed or running)" }),
      h("td", { class: "num", text: fmtDuration(span) }),
      h("td", { class: "num", text: steps(s) }),
      h("td", { text: s.hostname ? String(s.hostname) : "—" }),
      h("td", { class: "num", text: fmt(s.pid) }));
  });
  return h("div", { class: "card", id: "run-sessions", style: "grid-column: 1 / -1" },
    h("div", { class: "card-head" }, h("h2", { text: `Sessions (${sessions.length})` })),
    h("div", { class: "table-wrap" }, h("table", { class: "runs" },
      h("thead", {}, h("tr", {}, ...HEAD.map((t) => h("th", { text: t })))),
      h("tbody", {}, ...rows))));
}
