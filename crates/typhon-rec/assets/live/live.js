// The page of `typhon-rec live`: one ES module, no build step, nothing loaded from the
// network but this server. Every request carries the token of the page's own URL.
const token = new URLSearchParams(location.search).get("t") || "";
const url = (path, extra = "") => `${path}?t=${encodeURIComponent(token)}${extra}`;
const { default: uPlot } = await import(url("./vendor/uPlot.esm.js"));

const $ = (sel) => document.querySelector(sel);
const role = (r) => document.querySelector(`[data-role="${r}"]`);

/** Ticks kept by the page (the server keeps more; this bounds the page's memory). */
const KEPT = 8192;
/** Ticks shown while following. */
const SHOWN = 600;
const COLORS = ["#3b82f6", "#22a55a", "#e6b800", "#dc2f2f"];

const ticks = { id: [], slot: [], start: [], dur: [] };
let budget = 16.6e6;
let paused = false;
let selected = null; // [fromId, toId]
let clicked = null;
let latest = null; // the last update, applied once per animation frame
let frameAsked = false;

function fmt(ns) {
  if (ns == null) return "–";
  if (ns < 1e3) return `${ns} ns`;
  if (ns < 1e6) return `${(ns / 1e3).toFixed(1)} µs`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(2)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

function level(dur) {
  if (dur <= budget / 2) return 0;
  if (dur <= budget) return 1;
  if (dur <= 2 * budget) return 2;
  return 3;
}

function addTicks(list) {
  for (const [id, slot, start, dur] of list) {
    const last = ticks.id.length ? ticks.id[ticks.id.length - 1] : -1;
    if (id <= last) continue;
    ticks.id.push(id); ticks.slot.push(slot); ticks.start.push(start); ticks.dur.push(dur);
  }
  const extra = ticks.id.length - KEPT;
  if (extra > 0) for (const k in ticks) ticks[k].splice(0, extra);
}

// The chart: one bar series per colour (a bar is in the series of its level, null in the
// others), and the budget as a dashed line.
const bars = uPlot.paths.bars({ size: [0.85, 24] });
const chart = new uPlot(
  {
    width: Math.max(400, $("#chart").clientWidth || 900),
    height: 220,
    cursor: { drag: { x: true, y: false }, points: { show: false } },
    legend: { show: false },
    scales: { x: { time: false }, y: { range: (u, min, max) => [0, Math.max(max, budget / 1e6 * 1.2)] } },
    axes: [
      { label: "tick", stroke: "#59606d", grid: { stroke: "#eef0f4" } },
      { label: "ms", stroke: "#59606d", grid: { stroke: "#eef0f4" } },
    ],
    series: [
      {},
      ...COLORS.map((c, i) => ({ label: `level ${i}`, fill: c, stroke: c, paths: bars, points: { show: false } })),
      { label: "budget", stroke: "#59606d", dash: [6, 4], width: 1, points: { show: false } },
    ],
    hooks: {
      setSelect: [
        (u) => {
          if (u.select.width < 4) return;
          const a = Math.ceil(u.posToVal(u.select.left, "x"));
          const b = Math.floor(u.posToVal(u.select.left + u.select.width, "x"));
          if (b >= a) {
            selected = [a, b];
            $("#selection").textContent = `ticks ${a}–${b} selected`;
            $("#export").disabled = false;
          }
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
        },
      ],
    },
  },
  [[], [], [], [], [], []],
  $("#chart"),
);

function chartData(from, to) {
  const x = [], lv = [[], [], [], []], b = [];
  for (let i = from; i < to; i++) {
    x.push(ticks.id[i]);
    const ms = ticks.dur[i] / 1e6, l = level(ticks.dur[i]);
    for (let k = 0; k < 4; k++) lv[k].push(k === l ? ms : null);
    b.push(budget / 1e6);
  }
  return [x, ...lv, b];
}

function redraw(centerIndex) {
  const n = ticks.id.length;
  let from = Math.max(0, n - SHOWN), to = n;
  if (centerIndex != null) {
    from = Math.max(0, centerIndex - SHOWN / 2);
    to = Math.min(n, from + SHOWN);
  }
  chart.setData(chartData(from, to));
}

chart.over.addEventListener("click", () => {
  const i = chart.cursor.idx;
  if (i == null) return;
  const id = chart.data[0][i];
  if (id != null) showFlame(id);
});

$("#pause").addEventListener("click", () => {
  paused = !paused;
  $("#pause").textContent = paused ? "Resume" : "Pause";
  $("#pause").dataset.paused = paused;
  if (!paused) redraw();
});

$("#worst").addEventListener("click", () => {
  const w = latest && latest.worst;
  if (!w) return;
  $("#worst").dataset.tick = w[0];
  const i = ticks.id.indexOf(w[0]);
  paused = true;
  $("#pause").textContent = "Resume";
  if (i >= 0) redraw(i);
  showFlame(w[0]);
});

$("#export").addEventListener("click", () => {
  const [a, b] = selected || [clicked, clicked];
  if (a == null) return;
  const link = document.createElement("a");
  link.href = url("./api/export", `&from=${a}&to=${b}`);
  link.download = `ticks-${a}-${b}.pftrace`;
  document.body.appendChild(link);
  link.click();
  link.remove();
});

function apply() {
  frameAsked = false;
  const s = latest;
  if (!s) return;
  budget = s.budget_ns;
  const st = role("state");
  st.textContent = s.state;
  st.className = `state ${s.state}`;
  role("records").textContent = s.records.toLocaleString("en");
  role("tick-count").textContent = s.ticks.toLocaleString("en");
  role("ticks-over").textContent = s.ticks_over.toLocaleString("en");
  role("budget").textContent = fmt(s.budget_ns);
  role("message").textContent = s.message || "";
  role("window").textContent = s.window_s;

  const bad = Object.entries(s.losses || {}).filter(([, v]) => v > 0);
  const losses = role("losses");
  losses.textContent = bad.length
    ? `losses: ${bad.map(([k, v]) => `${k} ${v.toLocaleString("en")}`).join(" · ")}`
    : "no losses";
  losses.classList.toggle("bad", bad.length > 0);

  const v = s.viewer || {};
  const sk = role("viewer-skipped");
  sk.hidden = !(v.skipped_pages || v.skipped_records || v.skipped_segments);
  const said = [];
  if (v.skipped_pages || v.skipped_records)
    said.push(`fell behind and skipped ${v.skipped_pages} pages (${v.skipped_records} records)`);
  if (v.skipped_segments)
    said.push(`missed ${v.skipped_segments} segment(s) the recording's keep deleted before it read them`);
  sk.textContent = `this viewer ${said.join("; ")}: not losses of the recording`;

  const tbody = role("span-table").querySelector("tbody");
  tbody.replaceChildren(
    ...s.spans.map((r) => {
      const tr = document.createElement("tr");
      for (const c of [r.name, r.count.toLocaleString("en"), fmt(r.p50_ns), fmt(r.p99_ns), fmt(r.max_ns)]) {
        const td = document.createElement("td");
        td.textContent = c;
        tr.appendChild(td);
      }
      return tr;
    }),
  );

  const cmd = role("commands");
  cmd.hidden = !s.commands;
  if (s.commands) {
    const c = s.commands;
    role("cmd-window").textContent = c.window_s;
    const rows = [
      ["received", `${c.received_per_s.toFixed(0)}/s`],
      ["admitted", `${c.admitted_per_s.toFixed(0)}/s`],
      ["consumed", `${c.consumed_per_s.toFixed(0)}/s`],
      ["egress sent", `${c.egress_per_s.toFixed(0)}/s`],
      ["dropped", `${c.dropped_per_s.toFixed(0)}/s (${c.dropped})`, c.dropped > 0],
      ["received→consumed p50", fmt(c.latency_p50_ns)],
      ["received→consumed p99", fmt(c.latency_p99_ns)],
      ["received→consumed max", fmt(c.latency_max_ns)],
    ];
    cmd.querySelector("dl").replaceChildren(
      ...rows.flatMap(([k, val, red]) => {
        const dt = document.createElement("dt"), dd = document.createElement("dd");
        dt.textContent = k; dd.textContent = val;
        if (red) dd.className = "bad";
        return [dt, dd];
      }),
    );
  }
  if (!paused) {
    redraw();
    drawCounters(s.counters);
  }
}

// The counters of the last seconds: one uPlot chart, a series per counter, each on its own
// scale (their units differ), made again when the set of names changes.
const PALETTE = ["#3b82f6", "#dc2f2f", "#22a55a", "#d08700", "#8b5cf6", "#0891b2", "#ea580c", "#64748b"];
const counterColor = (i) => (i < PALETTE.length ? PALETTE[i] : `hsl(${(i * 47) % 360} 55% 45%)`);
let counterChart = null;
let counterNames = null;

function fmtValue(x) {
  if (x == null) return "–";
  return Number.isInteger(x) ? x.toLocaleString("en") : String(Number(x.toPrecision(4)));
}

function drawCounters(c) {
  const box = role("counter-chart");
  const series = (c && c.series) || [];
  box.hidden = series.length === 0;
  const other = role("counter-other");
  other.hidden = !(c && c.other_values);
  if (c && c.other_values)
    other.textContent = `${c.other_names} more counter(s) not charted (${c.other_values.toLocaleString("en")} values)`;
  if (!series.length) return;
  role("counter-window").textContent = c.window_s;
  const names = series.map((x) => x.name);
  const data = uPlot.join(series.map((x) => [x.t, x.v]));
  if (counterChart === null || names.join("\u0000") !== counterNames) {
    if (counterChart) counterChart.destroy();
    counterNames = names.join("\u0000");
    const scales = { x: { time: false } };
    names.forEach((_, i) => { scales[`c${i}`] = { auto: true }; });
    const axes = [{ label: "s before the newest record", stroke: "#59606d", grid: { stroke: "#eef0f4" } }];
    names.slice(0, 2).forEach((n, i) => axes.push({
      scale: `c${i}`, side: i === 0 ? 3 : 1, label: n, stroke: counterColor(i),
      grid: { show: i === 0, stroke: "#eef0f4" }, size: 60,
    }));
    counterChart = new uPlot(
      {
        width: Math.max(400, $("#counter-chart").clientWidth || 900),
        height: 170,
        legend: { show: false },
        cursor: { points: { show: false } },
        scales,
        axes,
        series: [{}, ...names.map((n, i) => ({
          label: n, scale: `c${i}`, stroke: counterColor(i), width: 1.5, spanGaps: true, points: { show: false },
        }))],
      },
      data,
      $("#counter-chart"),
    );
  } else {
    counterChart.setData(data);
  }
  role("counter-legend").replaceChildren(
    ...series.map((x, i) => {
      const li = document.createElement("li");
      const sw = document.createElement("i");
      sw.style.background = counterColor(i);
      const name = document.createElement("span");
      name.className = "counter-name";
      name.textContent = x.name;
      const facts = document.createElement("span");
      facts.textContent = x.v.length
        ? `${fmtValue(x.v[x.v.length - 1])} (min ${fmtValue(x.min)}, max ${fmtValue(x.max)})`
        : "–";
      li.append(sw, name, facts);
      return li;
    }),
  );
  // For tests: the names charted and the values drawn.
  box.dataset.counters = names.join(",");
  box.dataset.points = data.slice(1).reduce((n, ys) => n + ys.filter((y) => y != null).length, 0);
}

function onUpdate(e) {
  const s = JSON.parse(e.data);
  addTicks(s.tick_list || []);
  latest = s;
  if (!frameAsked) {
    frameAsked = true;
    requestAnimationFrame(apply);
  }
}

const events = new EventSource(url("./events"));
events.addEventListener("update", onUpdate);
events.onopen = () => { role("connection").textContent = "connected"; };
events.onerror = () => { role("connection").textContent = "disconnected: retrying"; };

// The flame chart of one tick: a lane per thread, a row per depth.
const ROW = 16, HEAD = 16;
let rects = [];

function hue(name) {
  let h = 0;
  for (const ch of name) h = (h * 31 + ch.codePointAt(0)) >>> 0;
  return h % 360;
}

async function showFlame(id) {
  clicked = id;
  if (!selected) $("#export").disabled = false;
  const box = role("flame");
  const res = await fetch(url("./api/tick", `&id=${id}`));
  const t = await res.json();
  const canvas = $("#flame");
  const ctx = canvas.getContext("2d");
  box.dataset.tick = id;
  if (t.error) {
    $("#flame-title").textContent = `${id}: ${t.error}`;
    box.dataset.lanes = 0; box.dataset.spans = 0;
    canvas.height = 40;
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    return;
  }
  const [, slot, start, dur] = t.tick;
  $("#flame-title").textContent = `${id} (slot ${slot}): ${fmt(dur)}, ${t.lanes.reduce((n, l) => n + l.spans.length, 0)} spans`;
  const width = box.clientWidth || 900;
  const lanes = t.lanes.map((l) => ({ ...l, rows: 1 + Math.max(0, ...l.spans.map((s) => s.depth)) }));
  const height = lanes.reduce((h, l) => h + HEAD + l.rows * ROW + 6, 0) || 40;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = width * dpr; canvas.height = height * dpr;
  canvas.style.height = `${height}px`;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  const x = (ns) => ((ns - start) / Math.max(1, dur)) * width;
  rects = [];
  let y = 0;
  for (const lane of lanes) {
    ctx.fillStyle = "#1d2330";
    ctx.fillText(`${lane.thread} (slot ${lane.slot})`, 2, y + HEAD / 2);
    const top = y + HEAD;
    for (const s of lane.spans) {
      const x0 = Math.max(0, x(s.start)), x1 = Math.min(width, x(s.start + s.dur));
      const w = Math.max(1, x1 - x0), ry = top + s.depth * ROW;
      ctx.fillStyle = `hsl(${hue(s.name)} 60% 62%)`;
      ctx.fillRect(x0, ry, w, ROW - 1);
      if (w > 30) {
        ctx.save();
        ctx.beginPath(); ctx.rect(x0, ry, w, ROW); ctx.clip();
        ctx.fillStyle = "#111";
        ctx.fillText(s.name, x0 + 3, ry + ROW / 2);
        ctx.restore();
      }
      rects.push({ x0, x1: x0 + w, y0: ry, y1: ry + ROW, s, thread: lane.thread });
    }
    y = top + lane.rows * ROW + 6;
  }
  // Where the longest span is drawn: for a pointer (or a test) to find one.
  const big = rects.reduce((a, q) => (!a || q.x1 - q.x0 > a.x1 - a.x0 ? q : a), null);
  if (big) box.dataset.longest = `${Math.round((big.x0 + big.x1) / 2)},${Math.round((big.y0 + big.y1) / 2)}`;
  box.dataset.lanes = lanes.length;
  box.dataset.spans = rects.length;
  box.dataset.threads = lanes.map((l) => l.thread).join(",");
}

$("#flame").addEventListener("mousemove", (e) => {
  const tip = $("#tip");
  const r = e.target.getBoundingClientRect();
  const mx = e.clientX - r.left, my = e.clientY - r.top;
  const hit = rects.find((q) => mx >= q.x0 && mx <= q.x1 && my >= q.y0 && my < q.y1);
  if (!hit) { tip.hidden = true; return; }
  tip.hidden = false;
  tip.textContent = `${hit.s.name} · ${fmt(hit.s.dur)} · ${hit.thread} · trace ${hit.s.trace || "none"} · span ${hit.s.span_id}`;
  tip.style.left = `${Math.min(mx + 12, r.width - 300)}px`;
  tip.style.top = `${my + 14}px`;
});
$("#flame").addEventListener("mouseleave", () => { $("#tip").hidden = true; });
