// The report page's stylesheet and drawing code (report_page.h).
#include "report_page.h"

namespace graft::cli {

// The page's stylesheet and drawing code. The data sits in <script type="application/json"
// id="run-data">; the code reads it, draws every chart as SVG, and records what it drew on each
// chart's element (data-points, data-cells, data-rows) and on <body data-rendered="ok">, so a
// headless browser can check the page without looking at pixels.
const char* const kReportStyle = R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1100px; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
.meta { color: #555; white-space: pre-line; } .charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; } figcaption { font-size: 12px; color: #555; }
svg { background: #fafafa; border: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 13px; } td, th { border: 1px solid #ddd; padding: 3px 8px; }
th { background: #f0f0f0; } .none { color: #777; }
)CSS";

const char* const kReportScript = R"JS(
(function () {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";
  const lines = JSON.parse(document.getElementById("run-data").textContent);
  const byType = (t) => lines.filter((r) => r.type === t);
  const steps = byType("step"), epochs = byType("epoch"), grads = byType("grad"), flags = byType("flag");
  const palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function text(parent, x, y, s, anchor) {
    const t = el("text", { x: x, y: y, "font-size": 11, "text-anchor": anchor || "start" }, parent);
    t.textContent = s;
    return t;
  }
  const finite = (v) => typeof v === "number" && isFinite(v);
  const fmt = (v) => (Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(1) : +v.toPrecision(3)).toString();

  // A line chart: series = [{name, points: [[x, y], ...]}]; log = log10 y axis.
  function lineChart(id, series, opts) {
    const W = 520, H = 260, L = 56, R = 12, T = 14, B = 34;
    const svg = document.getElementById(id);
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    const tf = (v) => (opts.log ? Math.log10(v) : v);
    const pts = [];
    for (const s of series) for (const p of s.points) if (finite(p[0]) && finite(p[1]) && (!opts.log || p[1] > 0)) pts.push(p);
    svg.setAttribute("data-points", pts.length);
    if (pts.length === 0) { text(svg, W / 2, H / 2, "no data", "middle"); return; }
    // Loops, not Math.min(...array): spreading a long array overflows the browser's stack.
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const p of pts) {
      x0 = Math.min(x0, p[0]); x1 = Math.max(x1, p[0]);
      y0 = Math.min(y0, tf(p[1])); y1 = Math.max(y1, tf(p[1]));
    }
    if (x1 === x0) { x0 -= 1; x1 += 1; }
    if (y1 === y0) { y0 -= 1; y1 += 1; }
    const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
    const sy = (y) => H - B - ((tf(y) - y0) / (y1 - y0)) * (H - T - B);
    el("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#999" }, svg);
    el("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#999" }, svg);
    for (let i = 0; i <= 4; ++i) {
      const yv = y0 + ((y1 - y0) * i) / 4, y = H - B - ((H - T - B) * i) / 4;
      text(svg, L - 4, y + 4, opts.log ? "1e" + yv.toFixed(1) : fmt(yv), "end");
      const xv = x0 + ((x1 - x0) * i) / 4;
      text(svg, L + ((W - L - R) * i) / 4, H - B + 14, fmt(xv), "middle");
    }
    text(svg, (W + L) / 2, H - 4, opts.xlabel, "middle");
    series.forEach((s, i) => {
      const good = s.points.filter((p) => finite(p[0]) && finite(p[1]) && (!opts.log || p[1] > 0));
      if (good.length === 0) return;
      const d = good.map((p, j) => (j ? "L" : "M") + sx(p[0]).toFixed(1) + " " + sy(p[1]).toFixed(1)).join(" ");
      const path = el("path", { d: d, fill: "none", stroke: palette[i % palette.length], "stroke-width": 1.5 }, svg);
      path.setAttribute("data-series", s.name);
      if (good.length === 1) el("circle", { cx: sx(good[0][0]), cy: sy(good[0][1]), r: 3, fill: palette[i % palette.length] }, svg);
      text(svg, W - R - 4, T + 12 + 13 * i, s.name, "end").setAttribute("fill", palette[i % palette.length]);
    });
  }

  // Layer-by-step heatmap of log10 gradient norms.
  function heatmap(id, names) {
    const svg = document.getElementById(id);
    const cellW = Math.max(2, Math.min(24, Math.floor(900 / Math.max(1, grads.length))));
    const cellH = 16, L = 140, T = 8;
    const W = L + cellW * grads.length + 90, H = T + cellH * names.length + 30;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    if (grads.length === 0 || names.length === 0) {
      svg.setAttribute("viewBox", "0 0 520 40");
      svg.setAttribute("width", 520);
      svg.setAttribute("height", 40);
      text(svg, 260, 24, "no gradient records (graft train --log or --report records them)", "middle");
      svg.setAttribute("data-cells", 0);
      return;
    }
    const vals = [];
    for (const g of grads) for (const n of names) { const p = g.params[n]; if (p && finite(p.grad_norm) && p.grad_norm > 0) vals.push(Math.log10(p.grad_norm)); }
    let lo = vals.length ? Infinity : 0, hi = vals.length ? -Infinity : 1;
    for (const v of vals) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    let cells = 0;
    names.forEach((n, r) => {
      text(svg, L - 4, T + cellH * r + 12, n, "end");
      grads.forEach((g, c) => {
        const p = g.params[n];
        let fill = "#eee";
        if (p && p.grad_norm === null) fill = "#000";
        else if (p && finite(p.grad_norm) && p.grad_norm > 0) {
          const t = hi > lo ? (Math.log10(p.grad_norm) - lo) / (hi - lo) : 0.5;
          fill = "hsl(" + (240 - 240 * t).toFixed(0) + ",70%,50%)";
        }
        const rect = el("rect", { x: L + cellW * c, y: T + cellH * r, width: cellW, height: cellH - 1, fill: fill }, svg);
        const title = el("title", {}, rect);
        title.textContent = n + " step " + g.step + ": grad norm " + (p ? p.grad_norm : "none");
        ++cells;
      });
    });
    text(svg, L, H - 8, "step " + (grads.length ? grads[0].step : "") + " ... " + (grads.length ? grads[grads.length - 1].step : "") +
         "  (blue: 1e" + lo.toFixed(1) + ", red: 1e" + hi.toFixed(1) + ", black: non-finite)");
    svg.setAttribute("data-cells", cells);
  }

  function flagTable() {
    const table = document.getElementById("flags");
    const body = table.querySelector("tbody");
    for (const f of flags) {
      const tr = document.createElement("tr");
      for (const v of [f.step, f.kind, f.param, f.value === null ? "non-finite" : fmt(f.value), f.message]) {
        const td = document.createElement("td");
        td.textContent = v;
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    table.setAttribute("data-rows", flags.length);
    if (flags.length === 0) document.getElementById("no-flags").hidden = false;
  }

  // Memory over the first steps, stacked by category (a memory_timeline record: the running totals
  // after each allocation event, Note [Memory history]).
  function memoryTimeline(id) {
    const svg = document.getElementById(id);
    const W = 720, H = 280, L = 64, R = 150, T = 14, B = 34;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    const tl = byType("memory_timeline")[0];
    if (!tl || tl.points.length === 0) {
      text(svg, W / 2, H / 2, "no memory timeline (graft train --log or --report records one)", "middle");
      svg.setAttribute("data-points", 0);
      return;
    }
    const cats = tl.categories, pts = tl.points;
    const MiB = 1024 * 1024;
    let top = 1;
    for (const p of pts) top = Math.max(top, p.totals.reduce((a, b) => a + b, 0));
    const sx = (i) => L + (pts.length > 1 ? (i / (pts.length - 1)) * (W - L - R) : 0);
    const sy = (v) => H - B - (v / top) * (H - T - B);
    el("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#999" }, svg);
    el("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#999" }, svg);
    for (let i = 0; i <= 4; ++i) text(svg, L - 4, sy((top * i) / 4) + 4, fmt((top * i) / 4 / MiB) + " MiB", "end");
    text(svg, (W - R + L) / 2, H - 4, "allocation events of steps " + pts[0].step + " to " + pts[pts.length - 1].step, "middle");
    // One band per category: from the sum of the categories below it to that sum plus its own.
    const below = pts.map(() => 0);
    cats.forEach((c, k) => {
      const upper = pts.map((p, i) => below[i] + p.totals[k]);
      let d = "";
      pts.forEach((p, i) => { d += (i ? "L" : "M") + sx(i).toFixed(1) + " " + sy(upper[i]).toFixed(1) + " "; });
      for (let i = pts.length - 1; i >= 0; --i) d += "L" + sx(i).toFixed(1) + " " + sy(below[i]).toFixed(1) + " ";
      const band = el("path", { d: d + "Z", fill: palette[k % palette.length], "fill-opacity": 0.75, stroke: "none" }, svg);
      band.setAttribute("data-category", c);
      text(svg, W - R + 8, T + 12 + 14 * k, c.replace("_", " "), "start").setAttribute("fill", palette[k % palette.length]);
      upper.forEach((v, i) => { below[i] = v; });
    });
    svg.setAttribute("data-points", pts.length);
  }

  function memoryTable() {
    const table = document.getElementById("memory-table");
    const recs = byType("memory");
    table.setAttribute("data-rows", 0);
    if (recs.length === 0) return;
    const last = recs[recs.length - 1];
    const body = table.querySelector("tbody");
    let rows = 0;
    for (const c in last.peak) {
      const tr = document.createElement("tr");
      for (const v of [c.replace("_", " "), (last.peak[c] / 1048576).toFixed(2), (last.current[c] / 1048576).toFixed(2)]) {
        const td = document.createElement("td");
        td.textContent = v;
        tr.appendChild(td);
      }
      body.appendChild(tr);
      ++rows;
    }
    table.setAttribute("data-rows", rows);
  }

  window.addEventListener("error", (e) => document.body.setAttribute("data-rendered", "error: " + e.message));
  const names = [];
  const mon = byType("monitor")[0];
  if (mon) for (const p of mon.params) names.push(p.name);
  else if (grads.length) for (const n in grads[0].params) names.push(n);

  lineChart("loss", [
    { name: "train loss (step)", points: steps.map((s) => [s.step, s.loss]) },
    { name: "train loss (epoch)", points: epochs.map((e) => [e.last_step, e.train_loss]) },
    { name: "test loss (epoch)", points: epochs.map((e) => [e.last_step, e.test_loss]) },
  ], { xlabel: "step" });
  lineChart("accuracy", [
    { name: "train accuracy", points: epochs.map((e) => [e.epoch, e.train_accuracy]) },
    { name: "test accuracy", points: epochs.map((e) => [e.epoch, e.test_accuracy]) },
  ], { xlabel: "epoch" });
  lineChart("lr", [{ name: "learning rate", points: steps.map((s) => [s.step, s.lr]) }], { xlabel: "step" });
  lineChart("update-ratio", names.map((n) => ({ name: n, points: grads.map((g) => [g.step, g.params[n] ? g.params[n].update_ratio : null]) })),
            { xlabel: "step", log: true });
  heatmap("grad-heatmap", names);
  flagTable();
  memoryTimeline("memory-timeline");
  memoryTable();
  if (!document.body.hasAttribute("data-rendered")) document.body.setAttribute("data-rendered", "ok");
})();
)JS";

}  // namespace graft::cli
