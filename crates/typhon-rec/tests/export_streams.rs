//! `typhon-rec export` on recordings the demo makes (SPEC §10, issue 22 item 5): its memory does
//! not grow with the recording, and the Perfetto file is no larger than the trace.dat.

mod common;
use common::{cli, peak_rss_kib, tmp};
use std::path::{Path, PathBuf};

/// Records the demo (2 workers at 50 000 records/s each, the default demo's mix: every kind,
/// command flows, CeLog) for `secs` seconds into `dir/NAME.dat`.
fn demo(dir: &Path, name: &str, secs: f64) -> PathBuf {
    let out = dir.join(format!("{name}.dat"));
    let secs = secs.to_string();
    let (ok, _, err) = cli(&[
        "demo".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
        "--duration".as_ref(),
        secs.as_ref(),
        "--threads".as_ref(),
        "2".as_ref(),
        "--rate".as_ref(),
        "50000".as_ref(),
        "--json".as_ref(),
    ]);
    assert!(ok, "demo: {err}");
    out
}

fn records(dat: &Path) -> u64 {
    typhon_trace::tracedat::TraceFile::open_streaming(dat)
        .unwrap()
        .stream_records()
        .count() as u64
}

/// The export's peak RSS on a recording 8 times as long stays within 1.5 times that on the
/// short one, in both formats. (Before: command flows were held to the end, 273 MB for the
/// 88 MB default demo; 27 MB after.)
#[test]
fn export_memory_is_flat_from_1x_to_8x_the_demo() {
    let dir = tmp("export-flat");
    // Longer than the export's windows (50 ms of events in time order, 250 ms of open flows),
    // so that the small one fills them too.
    let small = demo(&dir, "small", 0.5);
    let large = demo(&dir, "large", 4.0);
    let (ns, nl) = (records(&small), records(&large));
    assert!(
        nl > 6 * ns,
        "the large recording has {nl} records, the small {ns}"
    );
    for format in ["perfetto", "chrome"] {
        let run = |p: &Path| {
            let out = dir.join(format!("out.{format}"));
            let a: Vec<&std::ffi::OsStr> = vec![
                "export".as_ref(),
                p.as_os_str(),
                "--format".as_ref(),
                format.as_ref(),
                "-o".as_ref(),
                out.as_os_str(),
            ];
            let (rss, ok, err) = peak_rss_kib(&a);
            assert!(ok, "export {format}: {err}");
            let _ = std::fs::remove_file(&out);
            rss
        };
        let (s, l) = (run(&small), run(&large));
        eprintln!("export --format {format}: {s} KiB on {ns} records, {l} KiB on {nl}");
        assert!(
            (l as f64) <= 1.5 * s as f64,
            "`typhon-rec export --format {format}` peaked at {l} KiB on {nl} records, {s} KiB \
             on {ns}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `.pftrace` of a demo recording is no larger than the trace.dat it comes from (before:
/// about twice its size), and every command flow in it is whole.
#[test]
fn the_perfetto_file_is_no_larger_than_the_recording() {
    let dir = tmp("export-size");
    let dat = demo(&dir, "demo", 1.0);
    let out = dir.join("demo.pftrace");
    let (ok, said, err) = cli(&[
        "export".as_ref(),
        dat.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert!(ok, "{err}");
    let (d, p) = (
        std::fs::metadata(&dat).unwrap().len(),
        std::fs::metadata(&out).unwrap().len(),
    );
    let n = records(&dat) as f64;
    eprintln!(
        "{} records: trace.dat {:.1} B/record, .pftrace {:.1} B/record",
        n,
        d as f64 / n,
        p as f64 / n
    );
    assert!(
        p <= d,
        "the .pftrace has {p} bytes, the trace.dat {d}: {said}"
    );
    // Every command the demo starts it finishes: no flow ends unfinished. (Before the flows
    // kept their furthest stage, a span beginning at its CommandConsumed's nanosecond counted
    // its flow as unfinished.)
    assert!(said.contains(" flows on "), "{said}");
    assert!(!said.contains("end before their CommandConsumed"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}
