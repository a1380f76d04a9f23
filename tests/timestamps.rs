//! Caller timestamps far from the clock (issue 19, class 10): one far in the future is clamped
//! and counted instead of pinning its slot's page time; ones in the past are kept.

mod recording;

use recording::read_stream;
use typhon_recorder::clock::monotonic_ns;
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::sink::MemorySink;
use typhon_recorder::{doc_lock, RecorderBuilder};

/// (page time, header time, name id) of every Instant of slot 1, in stream order.
fn instants(sink: &MemorySink) -> Vec<(u64, i64, i32)> {
    let pages = sink.pages();
    let pages = pages.lock();
    let mut v = Vec::new();
    for p in read_stream(&pages.slots[1]) {
        for (page_ts, r) in &p.records {
            if let (h, Record::Instant { name_id, .. }) = records::decode(r).unwrap() {
                v.push((*page_ts, h.timestamp, name_id));
            }
        }
    }
    v
}

#[test]
fn a_far_future_time_is_clamped_and_later_records_keep_their_times() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
    let hour = rec.ns_to_ticks(monotonic_ns() + 3_600_000_000_000);
    let near = rec.ns_to_ticks(monotonic_ns() + 1_000_000); // 1 ms ahead: within the bound
                                                            // Half a second before the session. Not raw tick 0: the clock maps that to its time base's
                                                            // zero only up to its calibration over the whole uptime, which is tens of ms here.
    let past_ns = monotonic_ns().saturating_sub(500_000_000).max(1);
    let past = rec.ns_to_ticks(past_ns);
    let start = monotonic_ns();
    std::thread::spawn(move || {
        typhon_recorder::instant(1, 0);
        typhon_recorder::instant_at(hour, 2, 0);
        for i in 3..100 {
            typhon_recorder::instant(i, 0);
        }
        typhon_recorder::instant_at(u64::MAX, 100, 0); // past any time base
        typhon_recorder::instant_at(past, 101, 0); // before the session: kept
        typhon_recorder::instant(102, 0);
        typhon_recorder::instant_at(near, 103, 0);
    })
    .join()
    .unwrap();
    let stats = rec.finish().unwrap();
    let end = monotonic_ns();
    let s = stats.slot(1).unwrap();
    assert_eq!(s.clamped, 2, "the hour-ahead and the u64::MAX times");
    assert_eq!(
        (s.written, s.missed),
        (104, 0),
        "ThreadInfo and 103 instants"
    );
    let v = instants(&sink);
    assert_eq!(v.len(), 103);
    for &(page_ts, ts, id) in &v {
        // The near-future one is kept, 1 ms ahead: the one page time after `end` allowed.
        let limit = if id == 103 { end + 1_000_000 } else { end };
        assert!(
            page_ts >= start && page_ts <= limit,
            "instant {id} at page time {page_ts}, outside [{start}, {limit}]"
        );
        match id {
            101 => assert!(
                (ts as u64).abs_diff(past_ns) < 1_000 && (ts as u64) < start,
                "a past time stays in its header: {ts}, written as {past_ns}"
            ),
            // 1 ms after the test's start: maybe behind the clock time of the one before it.
            103 => assert!(ts as u64 <= page_ts),
            _ => assert_eq!(
                ts as u64, page_ts,
                "instant {id}: its header and page time agree"
            ),
        }
    }
    // Page time never goes backwards, and the records after the clamped ones are at their own
    // (clock) times, not pinned at the clamped ones'.
    assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
    let t3 = v.iter().find(|r| r.2 == 3).unwrap().0;
    let t99 = v.iter().find(|r| r.2 == 99).unwrap().0;
    assert!(t99 >= t3);
}

#[test]
fn a_span_ending_far_ahead_is_clamped_once() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
    let hour = rec.ns_to_ticks(monotonic_ns() + 3_600_000_000_000);
    let now = rec.now();
    std::thread::spawn(move || {
        typhon_recorder::span_at("ends-late", now).end_at(hour);
        typhon_recorder::span_at("starts-late", hour).end_at(hour + 10);
        typhon_recorder::instant(1, 0);
    })
    .join()
    .unwrap();
    let stats = rec.finish().unwrap();
    let end = monotonic_ns();
    assert_eq!(stats.slot(1).unwrap().clamped, 2, "one count per record");
    let v = instants(&sink);
    assert!(v[0].0 <= end, "the instant after them is at its own time");
}
