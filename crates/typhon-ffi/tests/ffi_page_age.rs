//! `typhon_set_max_page_age_us`: a recorder started after it hands a quiet thread's partly
//! filled page to `OUT.parts/` once the page is that old, while one started with an hour keeps
//! it in memory, which is what a viewer following the recording (`typhon-rec live`) waits for.
//! Both recordings run in this one test, one after the other (one recorder per process).

use std::ffi::CString;
use std::path::Path;
use std::time::{Duration, Instant};
use typhon_ffi::*;

/// Bytes of pages in `OUT.parts/`.
fn parts_bytes(out: &Path) -> u64 {
    let dir = typhon_recorder::sink::parts_dir(out);
    std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".pages"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Starts a recorder with `age_us`, writes one instant, and says whether its page reached the
/// parts directory within `wait`.
fn page_out_within(dir: &Path, name: &str, age_us: u64, wait: Duration) -> bool {
    let out = dir.join(name);
    assert_eq!(typhon_set_max_page_age_us(age_us), TYPHON_OK);
    let path = CString::new(out.to_str().unwrap()).unwrap();
    let cfg = TyphonConfig {
        output_path: path.as_ptr(),
        page_size: 0,
        ring_bytes: 0,
        flush_interval_us: 0,
        zstd_level: 0,
    };
    // SAFETY: `cfg` and the path it points to live through the call.
    assert_eq!(unsafe { typhon_start(&cfg) }, TYPHON_OK);
    let before = parts_bytes(&out);
    assert_eq!(typhon_instant(1, 2), TYPHON_OK);
    let t0 = Instant::now();
    let mut seen = false;
    while t0.elapsed() < wait {
        if parts_bytes(&out) > before {
            seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut stats = TyphonStats::default();
    // SAFETY: `stats` is a writable TyphonStats.
    assert_eq!(unsafe { typhon_finish(&mut stats) }, TYPHON_OK);
    seen
}

#[test]
fn max_page_age_reaches_the_recorder() {
    let dir = std::env::temp_dir().join(format!("typhon-page-age-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Shorter than the default age (1 s), so that only the setting can get the page out.
    let short = Duration::from_millis(600);
    assert!(
        page_out_within(&dir, "short.dat", 50_000, short),
        "with a 50 ms max page age the instant's page stayed in memory for {short:?}"
    );
    // Longer than the default age: a setting that did not apply would show.
    let wait = Duration::from_millis(1500);
    assert!(
        !page_out_within(&dir, "hour.dat", 3_600_000_000, wait),
        "with an hour's max page age the page went out early: the setting did not apply"
    );
    assert_eq!(typhon_set_max_page_age_us(0), TYPHON_OK);
    std::fs::remove_dir_all(&dir).unwrap();
}
