// The btts serve page: pick a metric, its tags and a time range, draw the /api/query answer
// as SVG lines. No build step, no external file: everything it loads ships with the package.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"];
const $ = (id) => document.getElementById(id);
let METRICS = {};

function status(text, isError) {
  const el = $("status");
  el.textContent = text;
  el.className = isError ? "error" : "";
}

async function getJSON(url, options) {
  const resp = await fetch(url, options);
  const body = await resp.json();
  if (!resp.ok) {
    throw new Error((body.error && body.error.message) || resp.statusText);
  }
  return body;
}

function showTags(given) {
  const box = $("tags");
  box.textContent = "";
  for (const tag of METRICS[$("metric").value] || []) {
    const label = document.createElement("label");
    label.textContent = tag;
    const input = document.createElement("input");
    input.name = "tag:" + tag;
    input.dataset.tag = tag;
    input.size = 18;
    input.value = given[tag] !== undefined ? given[tag] : "*";
    label.appendChild(input);
    box.appendChild(label);
  }
}

function parseTime(text) {
  const t = text.trim();
  if (!t) return undefined;
  return /^-?[0-9]+$/.test(t) ? Number(t) : t; // epoch ms, negative before 1970
}

function buildBody() {
  const tags = {};
  for (const input of document.querySelectorAll("#tags input")) {
    if (input.value.trim()) tags[input.dataset.tag] = input.value.trim();
  }
  const query = { metric: $("metric").value, aggregator: $("aggregator").value, tags: tags };
  if ($("downsample").value.trim()) query.downsample = $("downsample").value.trim();
  const body = { start: parseTime($("start").value), queries: [query], msResolution: true };
  const end = parseTime($("end").value);
  if (end !== undefined) body.end = end;
  return body;
}

function el(name, attrs, text) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function label(series) {
  const pairs = Object.entries(series.tags).map(([k, v]) => k + "=" + v);
  return series.metric + (pairs.length ? "{" + pairs.join(", ") + "}" : "");
}

function draw(answer) {
  const svg = $("chart");
  svg.textContent = "";
  const W = Number(svg.getAttribute("width"));
  const H = Number(svg.getAttribute("height"));
  const shown = Math.min(answer.length, 8);
  const pad = { left: 70, right: 30, top: 20, bottom: 40 + 16 * shown };
  const series = answer.map((s) => ({
    label: label(s),
    points: Object.entries(s.dps)
      .filter(([, v]) => typeof v === "number" && isFinite(v))
      .map(([t, v]) => [Number(t), v])
      .sort((a, b) => a[0] - b[0]),
  }));
  const all = series.flatMap((s) => s.points);
  if (!all.length) {
    status("No data in this range.", false);
    return;
  }
  let [x0, x1] = [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
  let [y0, y1] = [Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1]))];
  if (x0 === x1) x1 = x0 + 1;
  if (y0 === y1) { y0 -= 1; y1 += 1; }
  const px = (t) => pad.left + ((t - x0) / (x1 - x0)) * (W - pad.left - pad.right);
  const py = (v) => H - pad.bottom - ((v - y0) / (y1 - y0)) * (H - pad.top - pad.bottom);
  // the scale, for anyone (a test) reading values back from the drawing
  Object.assign(svg.dataset, { x0, x1, y0, y1, left: pad.left, right: W - pad.right, top: pad.top, bottom: H - pad.bottom });
  for (let i = 0; i <= 4; i++) {
    const v = y0 + ((y1 - y0) * i) / 4;
    svg.appendChild(el("line", { class: "grid", x1: pad.left, x2: W - pad.right, y1: py(v), y2: py(v) }));
    svg.appendChild(el("text", { class: "tick", x: pad.left - 6, y: py(v) + 4, "text-anchor": "end" }, Number(v.toPrecision(4)).toString()));
    const t = x0 + ((x1 - x0) * i) / 4;
    const anchor = i === 0 ? "start" : i === 4 ? "end" : "middle";
    svg.appendChild(el("text", { class: "tick", x: px(t), y: H - pad.bottom + 16, "text-anchor": anchor }, new Date(t).toISOString().slice(0, 19).replace("T", " ")));
  }
  svg.appendChild(el("line", { class: "axis", x1: pad.left, x2: pad.left, y1: pad.top, y2: H - pad.bottom }));
  svg.appendChild(el("line", { class: "axis", x1: pad.left, x2: W - pad.right, y1: H - pad.bottom, y2: H - pad.bottom }));
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const pts = s.points.map(([t, v]) => px(t).toFixed(3) + "," + py(v).toFixed(3)).join(" ");
    svg.appendChild(el("polyline", { class: "series", points: pts, fill: "none", stroke: color, "stroke-width": 1.5, "data-label": s.label }));
    if (i < shown) {
      const y = H - pad.bottom + 40 + 16 * i;
      svg.appendChild(el("text", { class: "legend", x: pad.left, y: y, fill: color }, s.label));
    }
  });
  status(series.length + " series, " + all.length + " points", false);
}

async function run(event) {
  if (event) event.preventDefault();
  status("querying…", false);
  try {
    const answer = await getJSON("api/query", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(buildBody()),
    });
    draw(answer);
    document.body.dataset.drawn = "yes";
  } catch (err) {
    $("chart").textContent = "";
    status(err.message, true);
    document.body.dataset.drawn = "error";
  }
}

async function start() {
  const params = new URLSearchParams(location.search);
  try {
    METRICS = await getJSON("api/metrics");
    const aggregators = await getJSON("api/aggregators");
    for (const name of Object.keys(METRICS)) $("metric").add(new Option(name, name));
    for (const name of aggregators) $("aggregator").add(new Option(name, name));
  } catch (err) {
    status(err.message, true);
    return;
  }
  $("aggregator").value = params.get("aggregator") || "avg";
  if (params.get("metric")) $("metric").value = params.get("metric");
  for (const name of ["downsample", "start", "end"]) {
    if (params.get(name) !== null) $(name).value = params.get(name);
  }
  const given = {};
  for (const [k, v] of params) if (k.startsWith("tag:")) given[k.slice(4)] = v;
  showTags(given);
  $("metric").addEventListener("change", () => showTags({}));
  $("query").addEventListener("submit", run);
  if (params.get("metric")) run();
}

start();
