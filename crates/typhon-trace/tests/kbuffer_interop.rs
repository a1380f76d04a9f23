//! Interop: libtraceevent's own kbuffer (built here from tests/c/kbuffer_pages.c) and the Rust
//! `KBuffer` must print identical lines for pages made by `PageWriter` (random sizes, long
//! records, time extends, missed counts, trap variants) and for the hand-built pages of
//! research §8. Skips when cc/pkg-config/libtraceevent are absent, fails instead with
//! `TYPHON_REQUIRE_INTEROP=1`.

mod common;

use std::process::Command;

use common::*;
use typhon_trace::kbuffer::{Endian, LongSize};

struct Batch {
    name: String,
    page_size: usize,
    ls: LongSize,
    en: Endian,
    pages: Vec<Vec<u8>>,
}

fn batches() -> Vec<Batch> {
    let mut v = Vec::new();
    for (i, (page_size, nrec)) in [(4096, 4000), (4096, 600), (8192, 3000), (16384, 1500)]
        .into_iter()
        .enumerate()
    {
        let (pages, _) = generate_pages(0x5eed_0000 + i as u64, page_size, nrec);
        let mutated: Vec<Vec<u8>> = pages
            .iter()
            .enumerate()
            .map(|(k, p)| mutate(p, k as u64))
            .collect();
        v.push(Batch {
            name: format!("writer {page_size} #{i}"),
            page_size,
            ls: LongSize::Eight,
            en: Endian::Little,
            pages,
        });
        v.push(Batch {
            name: format!("traps {page_size} #{i}"),
            page_size,
            ls: LongSize::Eight,
            en: Endian::Little,
            pages: mutated,
        });
    }
    for (name, ls, en, page) in section8_pages() {
        v.push(Batch {
            name: format!("section 8: {name}"),
            page_size: page.len(),
            ls,
            en,
            pages: vec![page],
        });
    }
    v
}

#[test]
fn rust_kbuffer_matches_libtraceevent() {
    let dir = scratch_dir("kbuffer-interop");
    let Some(exe) = build_c("kbuffer_pages.c", &dir) else {
        return;
    };
    let (mut npages, mut nrecords) = (0, 0);
    let mut all_c = String::new();
    for (b, batch) in batches().into_iter().enumerate() {
        let file = dir.join(format!("batch{b}.pages"));
        std::fs::write(&file, batch.pages.concat()).unwrap();
        let [l, e] = mode_args(batch.ls, batch.en);
        let out = Command::new(&exe)
            .arg(batch.page_size.to_string())
            .args([l, e])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: C reader failed: {}",
            batch.name,
            String::from_utf8_lossy(&out.stderr)
        );
        let c = String::from_utf8(out.stdout).unwrap();
        let mut rust = String::new();
        for (n, page) in batch.pages.iter().enumerate() {
            dump_page(&mut rust, n, page, batch.ls, batch.en);
        }
        for (i, (cl, rl)) in c.lines().zip(rust.lines()).enumerate() {
            assert_eq!(
                cl,
                rl,
                "{}: first difference at line {} (C left, Rust right)",
                batch.name,
                i + 1
            );
        }
        assert_eq!(
            c.lines().count(),
            rust.lines().count(),
            "{}: line counts differ",
            batch.name
        );
        all_c.push_str(&c);
        npages += batch.pages.len();
        nrecords += c.lines().filter(|l| l.starts_with(" ev ")).count();
    }
    eprintln!(
        "interop: {npages} pages, {nrecords} records read identically by libtraceevent and KBuffer"
    );
    assert!(npages > 100 && nrecords > 10_000);
    // The pages exercised what they were meant to: long records, bogus -4 records from zero words
    // inside the commit, unknown (-1) and stored missed counts, records needing a time extend.
    for needle in [
        " event_size=116 ",
        " event_size=-4 ",
        "missed=-1",
        "missed=2147483647",
    ] {
        assert!(all_c.contains(needle), "no C output line has {needle:?}");
    }
    let extended = all_c
        .lines()
        .filter(|l| l.starts_with(" ev "))
        .collect::<Vec<_>>()
        .windows(2)
        .any(|w| {
            let ts = |l: &str| {
                l.split(' ')
                    .nth(2)
                    .unwrap()
                    .trim_start_matches("ts=")
                    .parse::<u64>()
                    .unwrap()
            };
            ts(w[1]).wrapping_sub(ts(w[0])) >= 1 << 27 && ts(w[1]) > ts(w[0])
        });
    assert!(extended, "no record pair 2^27 ns apart");
    let _ = std::fs::remove_dir_all(&dir);
}
