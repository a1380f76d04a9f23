//! Round trip: random record sequences → PageWriter → KBuffer give back every payload (zero-padded
//! to 4 bytes, at least 4) with its page time, in order, and the missed counts.

mod common;

use common::generate_pages;
use proptest::prelude::*;
use typhon_recorder::page::{PageWriter, PushError};
use typhon_trace::kbuffer::{Endian, KBuffer, LongSize};

fn padded(p: &[u8]) -> Vec<u8> {
    let mut v = p.to_vec();
    v.resize(((p.len() + 3) & !3).max(4), 0);
    v
}

/// The time the writer gives a record: never before the running time.
fn expected_times(recs: &[(u64, Vec<u8>)]) -> Vec<u64> {
    let mut run = 0;
    recs.iter()
        .map(|r| {
            run = r.0.max(run);
            run
        })
        .collect()
}

fn read_all(pages: &[Vec<u8>]) -> (Vec<(u64, Vec<u8>)>, i64) {
    let mut out = Vec::new();
    let mut missed = 0i64;
    let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    for p in pages {
        kb.load_subbuffer(p).unwrap();
        missed += i64::from(kb.missed_events());
        while let Some(ev) = kb.read_event() {
            out.push((ev.timestamp, ev.data.to_vec()));
            kb.next_event();
        }
        assert_eq!(kb.error(), None);
    }
    (out, missed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]
    #[test]
    fn pages_read_back(
        page_shift in 0u32..3,
        recs in prop::collection::vec(
            (prop_oneof![0u64..2000, (1u64 << 27)..(1u64 << 40), Just(0u64)], any::<bool>(),
             prop_oneof![prop::collection::vec(any::<u8>(), 0..130), prop::collection::vec(any::<u8>(), 100..2000)]),
            1..300),
        missed_at in prop::collection::vec((0usize..300, 1u64..5_000_000_000), 0..4),
    ) {
        let page_size = 4096usize << page_shift;
        let mut ts = 1_000_000u64;
        let recs: Vec<(u64, Vec<u8>)> = recs.into_iter().map(|(d, back, p)| {
            ts = if back { ts.saturating_sub(d % 5000) } else { ts + d };
            (ts, p)
        }).collect();
        let mut w = PageWriter::new(page_size).unwrap();
        let mut pages = Vec::new();
        let mut pending = 0u64;
        let mut total_missed = 0u64;
        for (i, (t, p)) in recs.iter().enumerate() {
            for &(at, n) in &missed_at {
                if at == i {
                    pending += n;
                    total_missed += n;
                }
            }
            loop {
                if pending != 0 && w.is_empty() {
                    pending = w.set_missed(pending).unwrap();
                }
                match w.try_push(*t, p) {
                    Ok(written) => {
                        prop_assert_eq!(&*written, &p[..]);
                        break;
                    }
                    Err(PushError::Full) => pages.push(w.finish().to_vec()),
                    Err(PushError::TooLarge) => unreachable!(),
                }
            }
        }
        if w.missed() != 0 || !w.is_empty() {
            pages.push(w.finish().to_vec());
        }
        while pending != 0 {
            pending = w.set_missed(pending).unwrap();
            pages.push(w.finish().to_vec());
        }
        let (got, missed) = read_all(&pages);
        let want: Vec<(u64, Vec<u8>)> =
            expected_times(&recs).into_iter().zip(&recs).map(|(t, r)| (t, padded(&r.1))).collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(missed as u64, total_missed);
    }
}

#[test]
fn generated_streams_read_back() {
    for (seed, page_size) in [(1u64, 4096usize), (2, 8192), (3, 65536)] {
        let (pages, per_page) = generate_pages(seed, page_size, 5000);
        let (got, _) = read_all(&pages);
        let recs: Vec<(u64, Vec<u8>)> = per_page.into_iter().flatten().collect();
        let mut run = 0;
        let want: Vec<(u64, Vec<u8>)> = recs
            .iter()
            .map(|(t, p)| {
                run = run.max(*t);
                (run, padded(p))
            })
            .collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "seed {seed}: records differ");
        for p in &pages {
            assert_eq!(p.len(), page_size);
        }
    }
}
