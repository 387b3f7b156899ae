// kvrouter's dashboard: polls /v1/dashboard each second and draws the
// workers, the route rate and latency, and each policy's hit rate over
// time. No framework, no build step.
"use strict";

const colors = { kvrouter: "#1f6feb", round_robin: "#cf222e", random: "#9a6700", least_loaded: "#8250df" };
const $ = (id) => document.getElementById(id);

function us(v) {
  if (!v) return "–";
  return v >= 1000 ? (v / 1000).toFixed(1) + " ms" : v.toFixed(0) + " µs";
}
function pct(v) { return (100 * v).toFixed(1) + "%"; }
function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}
function fillRows(tbody, rows) {
  tbody.replaceChildren(...rows.map((cells) => {
    const tr = document.createElement("tr");
    tr.append(...cells);
    return tr;
  }));
}

function drawWorkers(workers) {
  fillRows($("workers").tBodies[0], workers.map((w) => [
    cell(String(w.worker_id)),
    cell(w.state + (w.reason ? " *" : ""), w.state),
    cell(w.healthy ? "in" : "out", w.healthy ? "" : "out"),
    cell(String(w.blocks)),
    cell(String(w.inflight)),
    cell(String(w.active_blocks)),
    cell(String(w.violations)),
    cell(String(w.quarantines)),
    cell(w.engine_hash || "", (w.engine_hash || "").split(" ")[0]),
    cell(w.base_url || "", "text"),
  ]));
  for (const [i, w] of workers.entries()) {
    if (w.reason) $("workers").tBodies[0].rows[i].cells[1].title = w.reason;
    if (w.engine_hash_reason) $("workers").tBodies[0].rows[i].cells[8].title = w.engine_hash_reason;
  }
}

function drawPolicies(policies) {
  fillRows($("policies").tBodies[0], policies.map((p) => [
    cell(p.policy), cell(String(p.requests)), cell(String(p.failed + p.route_failed)), cell(pct(p.hit_rate)),
    cell(String(p.prompt_tokens)), cell(String(p.cached_tokens)), cell(us(p.route_p50_us)), cell(us(p.route_p99_us)),
  ]));
}

const NS = "http://www.w3.org/2000/svg";
function svgEl(name, attrs, text) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// drawChart: x = seconds since each policy's first request, y = its
// cumulative hit rate (0..100%).
function drawChart(policies) {
  const svg = $("chart");
  const W = 720, H = 260, L = 44, R = 12, T = 12, B = 28;
  let tmax = 1;
  for (const p of policies) for (const pt of p.series || []) tmax = Math.max(tmax, pt.t);
  const x = (t) => L + (W - L - R) * t / tmax;
  const y = (v) => T + (H - T - B) * (1 - v);
  const kids = [];
  for (const v of [0, 0.25, 0.5, 0.75, 1]) {
    kids.push(svgEl("line", { class: "grid", x1: L, x2: W - R, y1: y(v), y2: y(v) }));
    kids.push(svgEl("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" }, (100 * v) + "%"));
  }
  kids.push(svgEl("line", { class: "axis", x1: L, x2: W - R, y1: y(0), y2: y(0) }));
  kids.push(svgEl("line", { class: "axis", x1: L, x2: L, y1: T, y2: y(0) }));
  for (let i = 0; i <= 4; i++) {
    const t = tmax * i / 4;
    kids.push(svgEl("text", { x: x(t), y: H - 8, "text-anchor": "middle" }, t.toFixed(0) + " s"));
  }
  const legend = [];
  for (const p of policies) {
    const pts = p.series || [];
    if (pts.length === 0) continue;
    const color = colors[p.policy] || "#444";
    const d = pts.map((pt, i) => (i ? "L" : "M") + x(pt.t).toFixed(1) + " " + y(pt.hit_rate).toFixed(1)).join(" ");
    kids.push(svgEl("path", { class: "line", d, stroke: color, "data-policy": p.policy, "data-points": pts.length }));
    const item = document.createElement("span");
    const sw = document.createElement("i");
    sw.style.background = color;
    item.append(sw, p.policy + " " + pct(p.hit_rate));
    legend.push(item);
  }
  svg.replaceChildren(...kids);
  $("legend").replaceChildren(...legend);
}

async function poll() {
  try {
    const r = await fetch("/v1/dashboard", { cache: "no-store" });
    if (!r.ok) throw new Error(r.status + " " + r.statusText);
    const d = await r.json();
    $("note").textContent = d.note || "";
    $("rate").textContent = d.routes_per_sec.toFixed(1);
    // The headline is the default policy's routing (a demo's baselines
    // are in the policy table); every policy's when it has routed nothing.
    const of = d.route_policy ? " · " + d.route_policy : "";
    $("p50-label").textContent = "route p50" + of;
    $("p99-label").textContent = "route p99" + of;
    $("p50").textContent = us(d.route_p50_us);
    $("p99").textContent = us(d.route_p99_us);
    $("routed").textContent = String(d.route_requests);
    drawWorkers(d.workers || []);
    drawPolicies(d.policies || []);
    drawChart(d.policies || []);
    $("updated").textContent = "updated " + new Date(d.time).toLocaleTimeString();
    document.body.dataset.loaded = "1";
  } catch (e) {
    $("updated").textContent = "cannot reach kvrouter: " + e.message;
  }
}

poll();
setInterval(poll, 1000);
