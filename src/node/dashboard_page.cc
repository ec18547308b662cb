// The dashboard page (node/dashboard.h): one self-contained HTML document,
// no external fetches. Element ids the browser test reads:
// #holder-count, #holders, #heatmap, #experts, #forwards, #status, and with
// --serve #serving (hidden without it), #serving-status, #serving-tps,
// #serving-load, #serving-requests.
#include "node/dashboard.h"

namespace tenzro::node {
namespace {

constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tenzro node</title>
<style>
  body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #1d2330; background: #f6f7f9; }
  h1 { font-size: 18px; margin: 0 0 4px; }
  h2 { font-size: 14px; margin: 18px 0 6px; }
  .muted { color: #6b7280; }
  .row { display: flex; gap: 16px; flex-wrap: wrap; align-items: flex-start; }
  .card { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 10px 12px; }
  table { border-collapse: collapse; }
  th, td { text-align: left; padding: 2px 8px; border-bottom: 1px solid #eceef2; white-space: nowrap; }
  th { font-weight: 600; color: #4b5563; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  code { font-size: 12px; }
  .ok { color: #15803d; } .bad { color: #b91c1c; }
  .legend span { display: inline-block; width: 12px; height: 12px; vertical-align: middle; margin: 0 3px 0 10px; border: 1px solid #999; }
  #status { float: right; }
</style>
</head>
<body>
<div id="status" class="muted">connecting…</div>
<h1>tenzro node <code id="node-id">?</code></h1>
<div class="muted" id="node-line"></div>

<div class="row" id="serving" hidden>
  <div class="card">
    <h2>Serving <code id="serving-model"></code> <span id="serving-status"></span></h2>
    <div><b id="serving-tps">0</b> generated tok/s <span class="muted" id="serving-window"></span>
      · <span id="serving-load"></span></div>
    <div class="muted" id="serving-totals"></div>
    <table id="serving-requests"><thead><tr><th>request</th><th>state</th><th>prompt</th><th>generated</th>
      <th>max</th><th>age</th></tr></thead><tbody></tbody></table>
  </div>
</div>

<div class="row">
  <div class="card">
    <h2>Shard map <select id="model"></select></h2>
    <div class="muted" id="coverage"></div>
    <div id="heatmap"></div>
    <div class="legend muted">replicas
      <span style="background:#fde2e2"></span>0 (uncovered ✕)
      <span style="background:#c6dbef"></span>1
      <span style="background:#6baed6"></span>2
      <span style="background:#2171b5"></span>3+
      <span style="background:#fff;border:2px solid #f59e0b"></span>hot
    </div>
  </div>
  <div class="card">
    <h2>Holders (<span id="holder-count">0</span>)</h2>
    <table id="holders"><thead><tr><th>node</th><th>state</th><th>experts</th><th>gates</th>
      <th>tok/s</th><th>budget</th><th>endpoints</th></tr></thead><tbody></tbody></table>
  </div>
</div>

<div class="row">
  <div class="card">
    <h2>This node: experts and gates</h2>
    <div class="muted" id="budget"></div>
    <table id="experts"><thead><tr><th>model</th><th>layer</th><th>expert</th><th>tier</th>
      <th>bytes</th><th>hits</th></tr></thead><tbody></tbody></table>
  </div>
  <div class="card">
    <h2>Recent forwards</h2>
    <table id="forwards"><thead><tr><th>time</th><th>model</th><th>layer</th><th>tokens</th><th>result</th>
      <th>gate</th><th>shared</th><th>plan</th><th>exec</th><th>combine</th><th>total ms</th><th>rounds</th>
      <th>transports</th></tr></thead><tbody></tbody></table>
  </div>
</div>

<script>
"use strict";
const SVGNS = "http://www.w3.org/2000/svg";
let chosenModel = null;

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in (attrs || {})) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}
function bytes(n) {
  if (n === undefined || n === null) return "";
  if (n === 0) return "0";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}
function shortId(id) { return id ? id.slice(0, 10) + "…" : "?"; }
function row(tbody, cells) {
  const tr = el("tr");
  for (const c of cells) {
    const td = el("td", c.cls ? {class: c.cls} : {}, c.text !== undefined ? String(c.text) : String(c));
    if (c.title) td.title = c.title;
    tr.appendChild(td);
  }
  tbody.appendChild(tr);
  return tr;
}
function colour(replicas) {
  if (replicas <= 0) return "#fde2e2";
  if (replicas === 1) return "#c6dbef";
  if (replicas === 2) return "#6baed6";
  return "#2171b5";
}

function drawHeatmap(map) {
  const box = document.getElementById("heatmap");
  box.textContent = "";
  if (!map) return;
  const layers = map.layers.map(l => l.layer);
  const width = Math.max(1, ...map.layers.map(l => l.n_expert));
  const cell = width > 64 ? 8 : (width > 32 ? 12 : (width > 16 ? 22 : 34));
  const left = 56, top = 20;
  const s = svg("svg", {id: "heatmap-svg", width: left + width * cell + 8, height: top + layers.length * cell + 8});
  const hot = new Set((map.hot || []).map(h => h.layer + "/" + h.expert));
  for (let x = 0; x < width; x += (width > 32 ? 8 : 1)) {
    const t = svg("text", {x: left + x * cell + cell / 2, y: 14, "font-size": 11, "text-anchor": "middle", fill: "#6b7280"});
    t.textContent = x;
    s.appendChild(t);
  }
  layers.forEach((l, row) => {
    const t = svg("text", {x: 4, y: top + row * cell + cell * 0.7, "font-size": 10, fill: "#6b7280"});
    t.textContent = "layer " + l;
    s.appendChild(t);
  });
  for (const e of map.experts) {
    const row = layers.indexOf(e.layer);
    if (row < 0) continue;
    const x = left + e.expert * cell, y = top + row * cell;
    const r = svg("rect", {x: x + 1, y: y + 1, width: cell - 2, height: cell - 2, fill: colour(e.replicas),
                           class: "cell", "data-layer": e.layer, "data-expert": e.expert, "data-replicas": e.replicas});
    const tip = svg("title", {});
    tip.textContent = "layer " + e.layer + " expert " + e.expert + ": " + e.replicas + " replica(s), " +
                      (e.tps || 0).toFixed(1) + " tok/s\n" + (e.holders || []).map(shortId).join("\n");
    r.appendChild(tip);
    if (hot.has(e.layer + "/" + e.expert)) { r.setAttribute("stroke", "#f59e0b"); r.setAttribute("stroke-width", 2); }
    s.appendChild(r);
    if (e.replicas <= 0) {
      const m = svg("text", {x: x + cell / 2, y: y + cell * 0.72, "font-size": cell * 0.7, "text-anchor": "middle",
                             fill: "#b91c1c", class: "uncovered"});
      m.textContent = "✕";
      s.appendChild(m);
    } else if (cell >= 16) {
      const m = svg("text", {x: x + cell / 2, y: y + cell * 0.68, "font-size": cell >= 30 ? 13 : 10, "text-anchor": "middle",
                             fill: e.replicas >= 2 ? "#fff" : "#1d2330"});
      m.textContent = e.replicas;
      s.appendChild(m);
    }
  }
  box.appendChild(s);
}

function renderServing(sv) {
  const box = document.getElementById("serving");
  box.hidden = !sv;
  if (!sv) return;
  document.getElementById("serving-model").textContent = sv.model;
  const stat = document.getElementById("serving-status");
  stat.textContent = sv.status;
  stat.className = sv.status === "ok" ? "ok" : (sv.status === "loading" ? "muted" : "bad");
  const rb = document.querySelector("#serving-requests tbody");
  rb.textContent = "";
  if (!sv.ready) return;
  document.getElementById("serving-tps").textContent = sv.generated_tokens_per_s.toFixed(1);
  document.getElementById("serving-window").textContent =
      "(last " + sv.window_s.toFixed(0) + " s, mean batch " + sv.mean_batch.toFixed(2) + ")";
  document.getElementById("serving-load").textContent =
      sv.active + " / " + sv.max_active + " active, " + sv.queued + " queued · sessions " +
      bytes(sv.session_bytes) + " of " + (sv.session_budget ? bytes(sv.session_budget) : "unlimited");
  const t = sv.totals;
  document.getElementById("serving-totals").textContent =
      t.requests + " requests · " + t.prompt_tokens + " prompt tokens · " + t.generated_tokens +
      " generated · " + t.steps + " steps · last step " + sv.last_step_ms.toFixed(1) + " ms";
  for (const r of sv.requests) {
    const tr = row(rb, [{text: r.id, cls: "num"}, r.state, {text: r.prompt_tokens, cls: "num"},
                        {text: r.generated, cls: "num"}, {text: r.max_tokens, cls: "num"},
                        {text: (r.age_ms / 1000).toFixed(1) + " s", cls: "num"}]);
    tr.className = "live-request";
    tr.dataset.id = r.id;
  }
}

function render(st) {
  renderServing(st.serving);
  const self = st.node.node_id || "";
  document.getElementById("node-id").textContent = shortId(self);
  document.getElementById("node-id").title = self;
  document.getElementById("node-line").textContent =
      "version " + st.node.version + " · http " + st.node.http + (st.node.quic ? " · quic " + st.node.quic : "");

  const sel = document.getElementById("model");
  const want = st.models.join("\n");
  if (sel.dataset.models !== want) {
    sel.textContent = "";
    for (const m of st.models) sel.appendChild(el("option", {value: m}, m));
    sel.dataset.models = want;
  }
  if (st.model) sel.value = st.model;

  const map = st.shard_map;
  drawHeatmap(map);
  document.getElementById("coverage").textContent = map
      ? map.covered_experts + " / " + map.total_experts + " experts covered, " + map.under_replicated.length +
        " under " + map.min_providers + " replicas, " + map.hot.length + " hot"
      : (st.shard_map_error || "no shard map");

  const hb = document.querySelector("#holders tbody");
  hb.textContent = "";
  const holders = map ? map.holders : [];
  document.getElementById("holder-count").textContent = holders.length;
  for (const h of holders) {
    const eps = (h.endpoints || []).map(e => e.kind + " " + e.addr).join(", ");
    const tr = row(hb, [{text: shortId(h.node_id) + (h.node_id === self ? " (this node)" : ""), title: h.node_id},
                        h.state, {text: h.experts, cls: "num"}, {text: h.gates, cls: "num"},
                        {text: (h.tps || 0).toFixed(1), cls: "num"}, {text: h.memory_budget ? bytes(h.memory_budget) : "unlimited", cls: "num"}, eps]);
    tr.className = "holder";
    tr.dataset.nodeId = h.node_id;
  }

  const rtm = st.runtime || {};
  const mem = rtm.memory || {};
  const c = rtm.counters || {};
  document.getElementById("budget").textContent =
      "warm " + bytes(mem.warm_bytes) + " of budget " + (mem.budget || bytes(mem.budget_bytes)) +
      " · cold " + bytes(mem.cold_bytes) + " · gates " + bytes(mem.gate_bytes) +
      " · hits " + (c.hits || 0) + " misses " + (c.misses || 0) +
      " promotions " + (c.promotions || 0) + " demotions " + (c.demotions || 0);
  const eb = document.querySelector("#experts tbody");
  eb.textContent = "";
  for (const g of (rtm.gates || []))
    row(eb, [g.model, {text: g.layer, cls: "num"}, "gate", g.tier, {text: bytes(g.bytes), cls: "num"}, ""]);
  for (const e of (rtm.experts || []))
    row(eb, [e.model, {text: e.layer, cls: "num"}, {text: e.expert, cls: "num"}, e.tier + (e.loading ? " (loading)" : ""),
             {text: bytes(e.bytes), cls: "num"}, {text: e.hits, cls: "num"}]);

  const fb = document.querySelector("#forwards tbody");
  fb.textContent = "";
  for (const f of (st.recent_forwards || [])) {
    const s = f.stages_ms || {};
    const ms = k => ({text: s[k] === undefined ? "" : s[k].toFixed(1), cls: "num"});
    const res = f.ok ? {text: "ok", cls: "ok"} : {text: "error", cls: "bad", title: f.error};
    row(fb, [new Date(f.unix_ms).toLocaleTimeString(), f.model, {text: f.layer, cls: "num"},
             {text: f.n_tokens, cls: "num"}, res, ms("gate"), ms("shared"), ms("plan"), ms("exec"), ms("combine"),
             ms("total"), {text: f.rounds, cls: "num"}, [...new Set(f.transports || [])].join(", ")]);
  }
}

// Served on the admin listener (--dashboard admin), the page is opened as
// http://ADMIN/#token=<admin.token>: the token stays in the fragment (never
// sent in a URL) and goes out as a Bearer header.
const tokenMatch = /(?:^#|&)token=([0-9a-fA-F]+)/.exec(location.hash);
const authHeaders = tokenMatch ? {"Authorization": "Bearer " + tokenMatch[1]} : {};

async function poll() {
  const status = document.getElementById("status");
  try {
    const q = chosenModel ? "?model=" + encodeURIComponent(chosenModel) : "";
    const r = await fetch("/v1/dashboard/state" + q, {cache: "no-store", headers: authHeaders});
    if (!r.ok) throw new Error("HTTP " + r.status);
    render(await r.json());
    status.textContent = "updated " + new Date().toLocaleTimeString();
    status.className = "muted";
  } catch (e) {
    status.textContent = "node unreachable: " + e.message;
    status.className = "bad";
  }
  setTimeout(poll, 1000);
}
document.getElementById("model").addEventListener("change", e => { chosenModel = e.target.value; });
poll();
</script>
</body>
</html>
)HTML";

}  // namespace

std::string_view DashboardHtml() { return kPage; }

}  // namespace tenzro::node
