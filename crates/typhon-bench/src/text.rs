//! The text table `typhon-rec bench` prints without `--json`.

use crate::report::{BenchReport, NsFigure};
use std::fmt;

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let row = |f: &mut fmt::Formatter<'_>, name: &str, x: &NsFigure| {
            writeln!(
                f,
                "  {name:<34} {:>8.2} ns  (runs {:.2}–{:.2})",
                x.median, x.min, x.max
            )
        };
        writeln!(
            f,
            "typhon-rec bench{} — {}",
            if self.quick { " --quick" } else { "" },
            self.machine
        )?;
        writeln!(f, "ns per call (median of runs, loop-timed):")?;
        row(f, "clock read (quanta Clock::raw)", &self.clock)?;
        row(f, "store floor (24 B + release)", &self.store_floor)?;
        row(
            f,
            "  same, ring read by a consumer",
            &self.store_floor_shared,
        )?;
        row(f, "write, recorder clock", &self.write_clock)?;
        row(f, "write, caller timestamp", &self.write_caller_ts)?;
        for (k, x) in &self.kinds {
            row(f, &format!("  {k}"), x)?;
        }
        row(f, "CeLog event, timestamp", &self.celog_ts)?;
        row(f, "CeLog event, no timestamp", &self.celog_no_ts)?;
        row(f, "span pair, recorder clock", &self.span)?;
        row(f, "span pair, caller timestamps", &self.span_caller_ts)?;
        row(f, "span pair, &str name, recorder clock", &self.span_str)?;
        row(
            f,
            "span pair, &str name, caller times",
            &self.span_str_caller_ts,
        )?;
        row(f, "crossbeam ArrayQueue push", &self.arrayqueue)?;
        row(
            f,
            "  512 slots, popped on this core",
            &self.arrayqueue_local,
        )?;
        row(
            f,
            "  popped by a consumer during the run",
            &self.arrayqueue_shared,
        )?;
        row(f, "std mpsc send", &self.mpsc)?;
        row(
            f,
            &format!(
                "{} span (enter+exit; {} spans reported)",
                self.peer, self.peer_reported
            ),
            &self.peer_span,
        )?;
        row(
            f,
            &format!(
                "puffin scope (enter+exit; {} scopes reported)",
                self.puffin_reported
            ),
            &self.puffin_span,
        )?;
        row(
            f,
            &format!(
                "Tracy span! (queuing {:.0} B/zone, {:.1} faults/1000 zones)",
                self.tracy_bytes_per_zone, self.tracy_faults_per_kzone
            ),
            &self.tracy_span,
        )?;
        writeln!(
            f,
            "  a fresh 4 KiB page's first touch (minor fault) {:.0} ns",
            self.page_fault_ns
        )?;
        writeln!(
            f,
            "tracing, span enter+exit on a Registry ({} records, {} dropped):",
            self.tracing_records, self.tracing_drops
        )?;
        row(f, "  a layer that does nothing", &self.tracing_floor)?;
        row(f, "  TyphonLayer", &self.tracing_span)?;
        row(
            f,
            "  TyphonLayer, info! with one field",
            &self.tracing_event,
        )?;
        row(
            f,
            &format!("  tracing-chrome ({} B of JSON)", self.tracing_chrome_bytes),
            &self.tracing_chrome_span,
        )?;
        row(f, "  tracing-tracy", &self.tracing_tracy_span)?;
        writeln!(f, "lock + unlock of a free mutex:")?;
        row(f, "  parking_lot::Mutex", &self.mutex_plain)?;
        row(f, "  TracedMutex (records only waits)", &self.mutex_traced)?;
        writeln!(f, "counter write, beside its floor:")?;
        row(f, "  24-byte write with the clock", &self.counter_floor)?;
        row(f, "  counter (static name)", &self.counter)?;
        writeln!(f, "allocation + free, allocation-heavy loop:")?;
        row(f, "  System", &self.system_alloc)?;
        row(f, "  TrackingAllocator<System>", &self.tracking_alloc)?;
        row(
            f,
            "disabled (no recorder), 8 calls per loop iteration",
            &self.disabled,
        )?;
        row(
            f,
            "disabled, 1 call per loop iteration",
            &self.disabled_loop,
        )?;
        let l = &self.latency;
        writeln!(
            f,
            "per-call latency ({} samples, flusher writing a file, bracket {:.1} ns subtracted):",
            l.samples, l.bracket_ns
        )?;
        writeln!(
            f,
            "  p50 {:.1}  p99 {:.1}  p99.9 {:.1}  p99.99 {:.1}  max {:.0}  first call {:.0} ns; drops {}",
            l.p50, l.p99, l.p999, l.p9999, l.max, l.first_call, l.drops
        )?;
        writeln!(
            f,
            "  mean {:.1} ns; clock resolution {:.1} ns (every percentile is a multiple of it)",
            l.mean, l.resolution_ns
        )?;
        match l.ring_huge_share {
            Some(s) => writeln!(
                f,
                "  our ring: {:.0}% on transparent huge pages{}",
                s * 100.0,
                if s < 1.0 {
                    " (4 KiB pages have a longer tail)"
                } else {
                    ""
                }
            )?,
            None => writeln!(f, "  our ring's page backing: unknown")?,
        }
        writeln!(
            f,
            "  first call without a spare ring (it allocates and faults in its own) {:.0} ns",
            l.first_call_no_spare
        )?;
        writeln!(
            f,
            "  a thread that calls register_thread first: register {:.0} ns, then its first call {:.0} ns",
            l.register, l.first_call_registered
        )?;
        writeln!(
            f,
            "  interleaved: clocked store floor p50 {:.1}  p99.9 {:.1} ns; lone TSC read p50 {:.1}  p99.9 {:.1} ns; empty bracket p99.9 {:.1} ns",
            l.floor_p50, l.floor_p999, l.tsc_p50, l.tsc_p999, l.empty_p999
        )?;
        writeln!(f, "throughput (default ring, NullSink):")?;
        for t in &self.threads {
            writeln!(
                f,
                "  {} thread(s): {:.1} M records/s, drops {} of {}",
                t.threads,
                t.records_per_s / 1e6,
                t.drops,
                t.attempted
            )?;
        }
        for (name, x) in [
            ("null sink", &self.flusher_null),
            ("file sink", &self.flusher_file),
        ] {
            writeln!(
                f,
                "flusher into {name}: {:.1} M records/s ({:.0} MB/s) per second of flusher CPU ({} records, {:.3} s CPU)",
                x.records_per_s / 1e6,
                x.mb_per_s,
                x.records,
                x.cpu_s
            )?;
        }
        let t = &self.recorder_threads;
        writeln!(
            f,
            "recorder threads at {:.1} M records/s into the file sink: flusher {:.1} ns CPU a record; zstd:{}: flusher {:.1} + compressor {:.1} ns a record ({:.1} M records/s on one core), {:.2} B a record, {} missed",
            t.rate / 1e6,
            t.flusher_cpu_ns_per_record,
            t.zstd_level,
            t.zstd_flusher_cpu_ns_per_record,
            t.compressor_cpu_ns_per_record,
            t.zstd_sink_records_per_s() / 1e6,
            t.zstd_bytes_per_record,
            t.missed
        )?;
        writeln!(
            f,
            "drops at 5 M records/s from 2 threads (default ring): {} of {} (producers at worst {:.1} ms behind schedule, {:.1} ms at most between two drains)",
            self.drops_at_5m, self.attempted_at_5m, self.late_ms_at_5m, self.drain_gap_ms_at_5m
        )?;
        writeln!(f, "targets:")?;
        for t in &self.targets {
            writeln!(
                f,
                "  [{}] {:<32} {:>10.3} (limit {}) — {}",
                if t.pass { "pass" } else { "FAIL" },
                t.name,
                t.measured,
                t.limit,
                t.target
            )?;
        }
        write!(f, "elapsed {:.1} s", self.elapsed_s)
    }
}
