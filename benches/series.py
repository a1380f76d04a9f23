#!/usr/bin/env python3
"""A series of `typhon-rec bench --quick --json` runs, summarised as BENCHMARKS.md shows them:
each figure's median with the range over the runs, and each target's median ratio with how many
runs met it. Nothing is written to disk; the summary goes to stdout (Markdown tables).

    cargo build --release -p typhon-rec
    python3 benches/series.py [RUNS] [--bin target/release/typhon-rec]

RUNS defaults to 10. The load average before and after the series is printed with it, since
the figures of a shared machine move with what its neighbours do.
"""
import json
import os
import statistics
import subprocess
import sys

KEYS = [
    ("clock read (quanta `Clock::raw`)", "clock_ns"),
    ("store floor: 24 B + Release", "store_floor_ns"),
    ("write, recorder clock", "write_clock_ns"),
    ("write, caller timestamp", "write_caller_ts_ns"),
    ("span pair, recorder clock", "span_ns"),
    ("span pair, caller times", "span_caller_ts_ns"),
    ("span pair, `&str` name, recorder clock", "span_str_ns"),
    ("span pair, `&str` name, caller times", "span_str_caller_ts_ns"),
    ("crossbeam ArrayQueue push", "arrayqueue_ns"),
    ("fastrace LocalSpan", "peer_span_ns"),
    ("puffin `profile_scope!`", "puffin_span_ns"),
    ("Tracy `span!`, client queuing", "tracy_span_ns"),
    ("Tracy queue growth per zone (bytes)", "tracy_bytes_per_zone"),
    ("Tracy page faults per 1000 zones", "tracy_faults_per_kzone"),
    ("a fresh 4 KiB page's first touch", "page_fault_ns"),
    ("tracing: Registry + no-op layer", "tracing_floor_ns"),
    ("tracing: `TyphonLayer` span", "tracing_span_ns"),
    ("tracing: `TyphonLayer` `info!`", "tracing_event_ns"),
    ("tracing: tracing-tracy span", "tracing_tracy_span_ns"),
    ("tracing: tracing-chrome span", "tracing_chrome_span_ns"),
    ("disabled call, 8 per iteration", "disabled_ns"),
    ("latency p50", "p50_ns"),
    ("latency p99.9", "p999_ns"),
    ("clocked floor p99.9, interleaved", "floor_p999_ns"),
    ("lone TSC read p99.9, interleaved", "tsc_p999_ns"),
    ("flusher, null sink (M records/s of its CPU)", "flusher_records_per_s"),
    ("flusher, file sink (M records/s of its CPU)", "flusher_file_records_per_s"),
    ("drops at 5 M records/s, 2 threads", "drops_at_5m"),
]


def fmt(x):
    if abs(x) >= 1e6:
        return f"{x / 1e6:.1f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"


def main():
    args = sys.argv[1:]
    binary = "target/release/typhon-rec"
    if "--bin" in args:
        i = args.index("--bin")
        binary = args[i + 1]
        del args[i : i + 2]
    runs = int(args[0]) if args else 10
    load0 = os.getloadavg()
    out = []
    for i in range(runs):
        p = subprocess.run(
            [binary, "bench", "--quick", "--json"], capture_output=True, text=True, check=True
        )
        out.append(json.loads(p.stdout))
        print(f"run {i + 1}/{runs} done", file=sys.stderr)
    load1 = os.getloadavg()
    print(f"{runs} runs; load average {load0[0]:.2f} before, {load1[0]:.2f} after; {out[0]['machine']}\n")
    print("| figure | key | median (min–max) |\n|---|---|---|")
    for name, key in KEYS:
        v = [r[key] for r in out if isinstance(r.get(key), (int, float))]
        if v:
            print(f"| {name} | `{key}` | {fmt(statistics.median(v))} ({fmt(min(v))}–{fmt(max(v))}) |")
    print("\n| target | counted | runs met | median measured (min–max) | limit |\n|---|---|---|---|---|")
    for t in out[0]["targets"]:
        name = t["name"]
        rows = [x for r in out for x in r["targets"] if x["name"] == name]
        m = [x["measured"] for x in rows]
        met = sum(1 for x in rows if x["pass"])
        counted = "yes" if t.get("counted", True) else "context"
        print(
            f"| `{name}` | {counted} | {met}/{len(rows)} | "
            f"{fmt(statistics.median(m))} ({fmt(min(m))}–{fmt(max(m))}) | {fmt(t['limit'])} |"
        )
    allp = sum(1 for r in out if r.get("all_pass"))
    print(f"\nall counted targets met in {allp}/{runs} runs")


if __name__ == "__main__":
    main()
