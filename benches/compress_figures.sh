#!/usr/bin/env bash
# The compressed-recording figures of BENCHMARKS.md ("Compressed recordings"), side by side in
# one run: bytes per record of the default demo and of the heavy one (4 × 200 000/s, 3 s) as
# v6, recorded with zstd 1 and 3, the same v6 recording converted by us (zstd 1 and 3, chunks of
# 10, 32 and 256 pages) and by `trace-cmd convert --compression zstd`, and the zstd CLI on the
# same v6 bytes as the floor; then the file sink's throughput (examples/sink_throughput) with
# the compressor thread and inline, and how fast the flusher drains one producer writing flat
# out (demo --rate 0) uncompressed, with the thread, and inline. Usage:
# benches/compress_figures.sh [WORKDIR]. Needs trace-cmd and zstd.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p typhon-rec
cargo build -q --release -p typhon-recorder --example sink_throughput
R=$PWD/target/release/typhon-rec
E=$PWD/target/release/examples/sink_throughput
w="${1:-$(mktemp -d)}"
mkdir -p "$w"
cd "$w"
rm -f ./*.dat
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
rate() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['written'])" "$1"; }
bpr() { python3 -c "import sys; print(f'{int(sys.argv[1]):>11} bytes {int(sys.argv[1])/int(sys.argv[2]):6.2f} B/record')" "$1" "$2"; }
for form in default heavy; do
  args=()
  [ "$form" = heavy ] && args=(--threads 4 --rate 200000 --duration 3)
  echo "== $form demo ${args[*]:-}"
  for c in none zstd:1 zstd:3; do
    "$R" demo "${args[@]}" --compress "$c" --out "$form-$c.dat" --json > "$form-$c.json"
    n=$(rate "$form-$c.json")
    echo "recorded $c: $n records, $(bpr "$(stat -c %s "$form-$c.dat")" "$n")"
  done
  v6="$form-none.dat"; n=$(rate "$form-none.json")
  for lv in 1 3; do for cp in 10 32 256; do
    "$R" convert "$v6" "$form-c$lv-$cp.dat" --compress "zstd:$lv" --chunk-pages "$cp"
    echo "same v6, ours zstd:$lv, $cp pages a chunk: $(bpr "$(stat -c %s "$form-c$lv-$cp.dat")" "$n")"
  done; done
  trace-cmd convert -i "$v6" -o "$form-tc.dat" --compression zstd >/dev/null 2>&1
  echo "same v6, trace-cmd convert --compression zstd: $(bpr "$(stat -c %s "$form-tc.dat")" "$n")"
  for lv in 1 3 19; do
    echo "same v6, zstd -$lv (whole file, the floor): $(bpr "$(zstd -q "-$lv" -c "$v6" | wc -c)" "$n")"
  done
done
echo "== file sink throughput (pages of the heavy v6 recording)"
"$E" heavy-none.dat "$w" | sed 's/^/thread: /'
TYPHON_COMPRESS_INLINE=1 "$E" heavy-none.dat "$w" | grep zstd | sed 's/^/inline: /'
echo "== flusher draining one producer flat out (demo --threads 1 --rate 0 --duration 2)"
for i in 1 2 3; do
  for m in none thread inline; do
    c=zstd:1; [ "$m" = none ] && c=none
    if [ "$m" = inline ]; then export TYPHON_COMPRESS_INLINE=1; else unset TYPHON_COMPRESS_INLINE; fi
    "$R" demo --threads 1 --rate 0 --duration 2 --compress "$c" --out "flat-$m-$i.dat" --json |
      python3 -c "import json,sys; d=json.load(sys.stdin); print(f\"$m: {d['written']/d['duration_s']/1e6:5.2f} M records/s written, {d['missed']/d['attempted']*100:4.1f}% missed, {d['bytes']/d['written']:5.2f} B/record\")"
    rm -f "flat-$m-$i.dat"
  done
done
unset TYPHON_COMPRESS_INLINE
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
