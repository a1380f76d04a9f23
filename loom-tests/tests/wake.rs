//! Loom models of the flusher's wake-up protocol (`typhon_recorder::wake::Wake`, the type the
//! recorder and the flusher call) together with the real ring.
//!
//! Under loom a timed `wait` returns at once (the timeout elapsed) and an untimed one blocks until
//! notified, so a lost wake-up makes the model deadlock, which loom reports as a failure.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{builder, put, tag_of};
use typhon_recorder::ring::{ring, Consumer, Entry};
use typhon_recorder::wake::Wake;

fn drain(c: &mut Consumer, seen: &mut Vec<u8>) {
    c.drain(|e| match e {
        Entry::Record(r) => seen.push(tag_of(r)),
        Entry::Gap(_) => panic!("no drops"),
    });
}

/// No lost wake-up: a producer publishes a record and notifies; the flusher runs a cycle, a
/// wait that times out, a cycle, and then sleeps without a timeout until the record shows up.
/// If a notify could be erased unseen (the old `store(false)` clear), the flusher would sleep
/// forever here.
#[test]
fn notify_is_never_lost() {
    builder().check(|| {
        let wake = Arc::new(Wake::new());
        let (mut p, mut c) = ring(4096).unwrap();
        let w = wake.clone();
        let prod = thread::spawn(move || {
            assert!(put(&mut p, 100, 1));
            w.notify();
            p
        });
        let mut seen = Vec::new();
        let mut timeout = Some(std::time::Duration::from_millis(10));
        loop {
            drain(&mut c, &mut seen);
            if !seen.is_empty() {
                break;
            }
            wake.wait(timeout.take());
        }
        assert_eq!(seen, vec![1]);
        prod.join().unwrap();
    });
}

/// Final drain: everything written before `finish()` is in the flusher's last cycle, with a
/// second producer notifying concurrently; the flusher never sleeps through `finish()`.
#[test]
fn finish_drains_everything_written_before() {
    builder().check(|| {
        let wake = Arc::new(Wake::new());
        let (mut p1, mut c1) = ring(4096).unwrap();
        let (mut p2, mut c2) = ring(4096).unwrap();
        let w = wake.clone();
        let finisher = thread::spawn(move || {
            assert!(put(&mut p1, 100, 1));
            assert!(put(&mut p1, 100, 2));
            // The recorder handle's finish(), after these writes (same thread: happens-before).
            w.finish();
            p1
        });
        let w = wake.clone();
        let other = thread::spawn(move || {
            assert!(put(&mut p2, 100, 3));
            w.notify();
            p2
        });
        let (mut s1, mut s2) = (Vec::new(), Vec::new());
        loop {
            let fin = wake.is_finishing();
            drain(&mut c1, &mut s1);
            drain(&mut c2, &mut s2);
            if fin {
                break;
            }
            wake.wait(None);
        }
        assert_eq!(s1, vec![1, 2], "written before finish(): in the last cycle");
        finisher.join().unwrap();
        other.join().unwrap();
        // The concurrent writer's record is either drained or still in its ring, never lost.
        drain(&mut c2, &mut s2);
        assert_eq!(s2, vec![3]);
    });
}

/// `Recorder::drain`: once a drain ticket is served, the flusher's cycle drained every record the
/// requester published before asking, and the requester sees the counters that cycle published.
/// The request also wakes a flusher sleeping without a timeout (else the model deadlocks).
#[test]
fn a_served_drain_ticket_covers_every_earlier_record() {
    use loom::sync::atomic::{AtomicU64, Ordering};
    builder().check(|| {
        let wake = Arc::new(Wake::new());
        let written = Arc::new(AtomicU64::new(0));
        let (mut p, mut c) = ring(4096).unwrap();
        let (w, n) = (wake.clone(), written.clone());
        let requester = thread::spawn(move || {
            assert!(put(&mut p, 100, 1));
            let ticket = w.request_drain();
            while !w.is_served(ticket) {
                thread::yield_now();
            }
            // Relaxed: the Acquire in `is_served` orders it after the cycle's publish.
            assert_eq!(
                n.load(Ordering::Relaxed),
                1,
                "served before its record was counted"
            );
            p
        });
        let mut seen = Vec::new();
        loop {
            let t = wake.cycle_start();
            drain(&mut c, &mut seen);
            // The cycle's counters (the flusher publishes them under a lock; Relaxed here is
            // weaker, so the model is the stricter check).
            written.store(seen.len() as u64, Ordering::Relaxed);
            wake.cycle_done(t);
            if t >= 1 {
                assert_eq!(
                    seen,
                    vec![1],
                    "a cycle serving the ticket drained the record"
                );
                break;
            }
            wake.wait(None);
        }
        requester.join().unwrap();
    });
}
