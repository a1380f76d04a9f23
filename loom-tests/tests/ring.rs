//! Loom models of the slot ring: the real `ring::Producer::write`/`passed_half` against
//! `ring::Consumer::drain`, on loom's atomics. Loom explores the interleavings and weak-memory
//! outcomes of `head`/`tail`/`dropped` and of the cached copies. The ring declares its byte
//! accesses to loom (one `UnsafeCell` per two bytes under `--cfg loom`), so an ordering too weak
//! to order the bytes fails as a causality violation; the models also check the bytes by content
//! (each record intact, in order).
#![cfg(loom)]

use loom::thread;
use loom_tests::{builder, put, tag_of};
use typhon_recorder::ring::{ring, Entry};

/// Reserve and publish against a concurrent drain: three records published by the producer are
/// all seen by the consumer, once each, in order and intact, whatever the interleaving.
#[test]
fn publish_against_drain() {
    builder().check(|| {
        let (mut p, mut c) = ring(4096).unwrap();
        let prod = thread::spawn(move || {
            for tag in 1..=3u8 {
                assert!(put(&mut p, 1000, tag), "3000 bytes fit in 4096");
                let _ = p.passed_half();
            }
            p
        });
        let mut seen = Vec::new();
        c.drain(|e| match e {
            Entry::Record(r) => seen.push(tag_of(r)),
            Entry::Gap(_) => panic!("no drops in this model"),
        });
        let p = prod.join().unwrap();
        c.drain(|e| match e {
            Entry::Record(r) => seen.push(tag_of(r)),
            Entry::Gap(_) => panic!("no drops in this model"),
        });
        assert_eq!(seen, vec![1, 2, 3]);
        assert_eq!(p.dropped(), 0);
        assert!(c.is_empty());
    });
}

/// Wrap, full and drop: records of 1800 bytes in a 4096-byte ring. The third needs the consumer
/// to have freed the first (then it wraps: a wrap marker fills the end) or it is dropped and a gap
/// entry goes before the next record that fits. Checks, for every interleaving: records come out
/// in order and intact (the producer never overwrote unread bytes — this exercises its cached
/// tail), and records read + gap counts + drops still pending = records attempted.
#[test]
fn wrap_full_and_gap() {
    builder().check(|| {
        let (mut p, mut c) = ring(4096).unwrap();
        const N: u8 = 4;
        let prod = thread::spawn(move || {
            for tag in 1..=N {
                put(&mut p, 1800, tag);
            }
            p
        });
        let mut seen = Vec::new();
        let mut gaps = 0u64;
        let mut take = |c: &mut typhon_recorder::ring::Consumer| {
            c.drain(|e| match e {
                Entry::Record(r) => seen.push(tag_of(r)),
                Entry::Gap(n) => {
                    assert!(n > 0);
                    gaps += n
                }
            });
        };
        take(&mut c);
        take(&mut c);
        let p = prod.join().unwrap();
        take(&mut c);
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "order: {seen:?}");
        assert!(seen.len() >= 2, "the first two always fit: {seen:?}");
        assert_eq!(
            seen.len() as u64 + gaps + p.pending_gap(),
            N as u64,
            "records {seen:?}, gaps {gaps}, pending {}",
            p.pending_gap()
        );
        assert_eq!(p.dropped(), gaps + p.pending_gap());
        assert_eq!(c.producer_dropped(), p.dropped());
    });
}

/// The drop counter the flusher uses at a slot's end (`producer_dropped`, Relaxed) read after a
/// drain that saw a gap entry covers that gap: the gap's records were dropped before the
/// producer published the entry, and `drain`'s Acquire load of `head` orders the counter's
/// earlier store.
#[test]
fn dropped_counter_covers_drained_gaps() {
    builder().check(|| {
        let (mut p, mut c) = ring(4096).unwrap();
        let prod = thread::spawn(move || {
            for (tag, size) in [(1u8, 2000usize), (2, 2000), (3, 2000), (4, 40)] {
                put(&mut p, size, tag);
            }
            p
        });
        let mut gaps = 0u64;
        let mut recs = 0u64;
        for _ in 0..2 {
            c.drain(|e| match e {
                Entry::Gap(k) => gaps += k,
                Entry::Record(r) => {
                    tag_of(r);
                    recs += 1
                }
            });
            assert!(
                c.producer_dropped() >= gaps,
                "a drained gap is in the counter"
            );
        }
        let p = prod.join().unwrap();
        c.drain(|e| match e {
            Entry::Gap(k) => gaps += k,
            Entry::Record(_) => recs += 1,
        });
        assert_eq!(recs + gaps + p.pending_gap(), 4);
        assert_eq!(c.producer_dropped(), gaps + p.pending_gap());
    });
}
