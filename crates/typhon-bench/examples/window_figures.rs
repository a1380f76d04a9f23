//! The window-mode figures alone (`typhon_bench::run_window`): each key beside its file twin of
//! the same run, then the window targets. `cargo run --release -p typhon-bench --example
//! window_figures [-- --quick]`.

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let r = typhon_bench::run_window(&typhon_bench::BenchOptions { quick });
    let v = r.to_json();
    for k in [
        "write_clock_file_alt_ns",
        "write_clock_window_ns",
        "flusher_file_ns_per_record",
        "flusher_window_ns_per_record",
        "window_memory_vs_budget",
        "drops_at_5m_window",
        "drops_at_5m_window_quiet",
        "attempted_at_5m_window",
        "snapshots_at_5m_window",
        "snapshot_s_at_5m_window",
        "late_ms_at_5m_window",
        "drain_gap_ms_at_5m_window",
        "window_zstd_memory_vs_budget",
        "flusher_file_zstd_ns_per_record",
        "flusher_window_zstd_ns_per_record",
        "flusher_file_zstd_flusher_ns_per_record",
        "flusher_window_zstd_flusher_ns_per_record",
        "window_held_ms_per_mib",
        "window_zstd_held_ms_per_mib",
        "drops_at_5m_window_zstd",
        "drops_at_5m_window_zstd_quiet",
        "attempted_at_5m_window_zstd",
        "snapshots_at_5m_window_zstd",
        "snapshot_s_at_5m_window_zstd",
        "flusher_ns_per_record_at_5m_window_zstd",
        "late_ms_at_5m_window_zstd",
        "drain_gap_ms_at_5m_window_zstd",
    ] {
        println!("{k}: {}", v[k]);
    }
    for t in r.targets.iter().filter(|t| {
        matches!(
            t.name,
            "write_window_vs_file"
                | "flusher_window_vs_file"
                | "window_memory_vs_budget"
                | "drops_at_5m_window"
                | "drops_at_5m_window_zstd"
                | "flusher_window_zstd_vs_file_zstd"
                | "window_zstd_memory_vs_budget"
        )
    }) {
        println!(
            "{}: {:.3} (limit {}) {}",
            t.name,
            t.measured,
            t.limit,
            if t.pass { "PASS" } else { "FAIL" }
        );
    }
}
