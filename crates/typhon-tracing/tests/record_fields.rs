//! `Span::record` replaces the field's value (the file has the last one recorded), costs the
//! same per call however often a span records, and a span's field text is bounded: a value
//! that does not fit is cut with a mark that counts exactly what was left out.

mod common;

use common::{read, scratch, thread_cpu};
use std::time::Duration;
use tracing::Dispatch;
use tracing_subscriber::prelude::*;
use typhon_recorder::{doc_lock, RecorderBuilder};
use typhon_tracing::TyphonLayer;

fn layer() -> Dispatch {
    Dispatch::new(tracing_subscriber::registry().with(TyphonLayer::new()))
}

/// The last description of the span named `name`: (its key, its fields).
fn last_fields(r: &common::Read, name: &str) -> (u64, String) {
    let (k, _, f) = r
        .infos
        .iter()
        .rev()
        .find(|(_, n, _)| n == name)
        .unwrap_or_else(|| panic!("no info of {name}"));
    (*k, f.clone())
}

#[test]
fn the_last_value_recorded_is_the_one_in_the_file() {
    let _g = doc_lock();
    let dir = scratch("record-last");
    let path = dir.join("last.dat");
    let rec = RecorderBuilder::new()
        .output(&path)
        .ring_bytes(8 << 20)
        .start()
        .unwrap();
    const N: u64 = 20_000;
    tracing::dispatcher::with_default(&layer(), || {
        let s = tracing::info_span!("counter", a = 1, v = 0u64, b = "x");
        for i in 1..N {
            s.record("v", i);
        }
        s.in_scope(|| {});
    });
    let stats = rec.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
    assert_eq!(stats.slots.iter().map(|s| s.refused).sum::<u64>(), 0);
    let r = read(&path);
    let (key, fields) = last_fields(&r, "counter");
    // In place: the other fields stay where they were.
    assert_eq!(fields, format!("a=1 v={} b=\"x\"", N - 1));
    // One description at creation and one per record, every one of them written.
    assert_eq!(r.infos.iter().filter(|i| i.0 == key).count() as u64, N);
    assert_eq!(r.one("counter").key, key);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// CPU time per call of the first `chunk` records of one span's field and of the last
/// `chunk` of `n`, each the best of three spans.
fn first_and_last(n: u64, chunk: u64) -> (Duration, Duration) {
    let best = |v: Vec<Duration>| v.into_iter().min().unwrap() / chunk as u32;
    let (mut first, mut last) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        tracing::dispatcher::with_default(&layer(), || {
            let s = tracing::info_span!("counter", v = 0u64);
            let t = thread_cpu();
            for i in 0..chunk {
                s.record("v", i);
            }
            first.push(thread_cpu() - t);
            for i in chunk..n - chunk {
                s.record("v", i);
            }
            let t = thread_cpu();
            for i in n - chunk..n {
                s.record("v", i);
            }
            last.push(thread_cpu() - t);
        });
    }
    (best(first), best(last))
}

#[test]
fn a_record_costs_the_same_however_many_came_before() {
    let _g = doc_lock();
    let dir = scratch("record-cost");
    let rec = RecorderBuilder::new()
        .output(dir.join("cost.dat"))
        .start()
        .unwrap();
    let (first, last) = first_and_last(20_000, 2_000);
    rec.finish().unwrap();
    // Appending made each record's text (and its cost) grow with the records before it.
    // Replacing keeps it flat.
    assert!(
        last < first * 3,
        "per record: {first:?} for the first 2 000 records, {last:?} for the last of 20 000"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_value_that_does_not_fit_is_cut_and_counted() {
    let _g = doc_lock();
    let dir = scratch("record-cut");
    let path = dir.join("cut.dat");
    let rec = RecorderBuilder::new().output(&path).start().unwrap();
    let big = "x".repeat(100_000);
    tracing::dispatcher::with_default(&layer(), || {
        let s = tracing::info_span!("big", a = 1, body = tracing::field::Empty, z = 2);
        s.record("body", big.as_str());
        s.in_scope(|| {});
        s.record("body", "short");
        s.in_scope(|| {});
        // A value written with NUL bytes keeps them as U+FFFD (a NUL ends strings in the
        // file's readers).
        let n = tracing::info_span!("nul", d = tracing::field::display("a\0b"));
        n.in_scope(|| {});
        // Two fields too many for the room: the second one finds none at all.
        let m = tracing::info_span!(
            "many",
            f1 = tracing::field::Empty,
            f2 = tracing::field::Empty
        );
        m.record("f1", big.as_str());
        m.record("f2", "abc");
        m.in_scope(|| {});
        // Cut at a character boundary, never inside one.
        let w = tracing::info_span!("wide", w = tracing::field::Empty);
        w.record("w", "é".repeat(3_000).as_str());
    });
    let stats = rec.finish().unwrap();
    assert_eq!(stats.slots.iter().map(|s| s.refused).sum::<u64>(), 0);
    let r = read(&path);
    let infos: Vec<&str> = r
        .infos
        .iter()
        .filter(|i| i.1 == "big")
        .map(|i| i.2.as_str())
        .collect();
    assert_eq!(infos.len(), 3, "{infos:?}");
    assert_eq!(infos[0], "a=1 z=2");
    let cut = infos[1];
    // The values are bounded (2 KiB); their text adds the names, the quotes and the mark.
    assert!(
        cut.len() <= 2048 + "a=1 z=2 body=\"\" typhon.cut=".len() + 20,
        "{} bytes",
        cut.len()
    );
    let value = cut
        .strip_prefix("a=1 z=2 body=\"")
        .unwrap_or_else(|| panic!("{cut}"));
    let (kept, mark) = value.split_once('…').unwrap_or_else(|| panic!("{cut}"));
    assert!(
        kept.len() > 1_000 && kept.bytes().all(|b| b == b'x'),
        "{cut}"
    );
    // The value is cut (its string ends in `…`, still quoted): the bytes of it not kept,
    // exactly.
    let lost = big.len() - kept.len();
    assert_eq!(mark, format!("\" typhon.cut={lost}"));
    // Replaced by a value that fits: whole, and no mark.
    assert_eq!(infos[2], "a=1 z=2 body=\"short\"");
    assert_eq!(last_fields(&r, "nul").1, "d=a\u{FFFD}b");
    let many = last_fields(&r, "many").1;
    // The values are bounded (2 KiB); their text adds the name, the quotes and the mark.
    assert!(
        many.len() <= 2048 + "f1=\"\" typhon.cut=".len() + 20,
        "{}",
        many.len()
    );
    let (f1, mark) = many.split_once('…').unwrap();
    assert!(f1.starts_with("f1=\"xxx"));
    // f1's value less what it kept, and the whole of f2's `abc`.
    let lost = (big.len() - (f1.len() - "f1=\"".len())) + "abc".len();
    assert_eq!(mark, format!("\" typhon.cut={lost}"));
    let wide = last_fields(&r, "wide").1;
    let (kept, mark) = wide.strip_prefix("w=\"").unwrap().split_once('…').unwrap();
    assert!(kept.chars().all(|c| c == 'é'), "{wide}");
    let lost = 3_000 * 'é'.len_utf8() - kept.len();
    assert_eq!(mark, format!("\" typhon.cut={lost}"));
    // Entries of those spans, all recorded.
    assert_eq!(r.named("big").len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}
