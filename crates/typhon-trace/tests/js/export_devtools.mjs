// Loads a Chrome trace-event JSON file with the Chrome DevTools Performance panel's own trace
// model (npm @paulirish/trace_engine, the DevTools front end's models/trace packaged for Node)
// and prints what it made of it as one JSON object, for tests/export.rs.
//
// Usage: node export_devtools.mjs NODE_MODULES_DIR TRACE.json
//
// Printed: the warnings the model logged and the per-kind counts of its Warnings handler, and
// per thread its name, its entries (name, ts and dur in µs) in order, and its tree's depth.
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const [modules, file] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(modules, '@paulirish/trace_engine', p)).href);
const {polyfillDOMRect} = await load('analyze-trace.mjs');
const Trace = await load('models/trace/trace.js');
polyfillDOMRect();

const json = JSON.parse(fs.readFileSync(file, 'utf8'));
const model = Trace.TraceModel.Model.createWithAllHandlers();
const logged = [];
const keep = (...a) => logged.push(a.map(String).join(' '));
console.warn = keep;
console.error = keep;
await model.parse(json.traceEvents);
const parsed = model.parsedTrace();
const data = parsed.data ?? parsed;
const threads = [];
for (const [pid, p] of data.Renderer.processes) {
  for (const [tid, th] of p.threads) {
    threads.push({
      pid, tid, name: th.name ?? '',
      depth: th.tree?.maxDepth ?? 0,
      entries: th.entries.map((e) => [e.name, e.ts, e.dur ?? 0]),
    });
  }
}
const perWarning = [...(data.Warnings.perWarning?.entries?.() ?? [])].map(([k, v]) => [k, v.length]);
process.stdout.write(JSON.stringify({logged, perWarning, threads}));
