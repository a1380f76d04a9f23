//! Loom model of the snapshot request protocol (`typhon_recorder::window::Shared`, the type
//! `request_snapshot`, `Recorder::snapshot` and the flusher call): requests from any thread race
//! each other and the flusher's cycles; at most one is in flight, none is lost, and the next is
//! taken once the snapshot in flight is done.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::builder;
use typhon_recorder::window::{Pending, Shared};

/// Two threads ask at once while the flusher runs a cycle: exactly one request is accepted
/// (at most one in flight), and the flusher takes it, in this cycle or the next.
#[test]
fn racing_requests_one_is_taken_none_is_lost() {
    builder().check(|| {
        let s = Arc::new(Shared::new());
        let asks: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|r| {
                let s = s.clone();
                thread::spawn(move || s.request(Pending::new(r, 0, 0)))
            })
            .collect();
        // A cycle racing the requests may or may not see one.
        let early = s.take_due(0);
        let accepted: Vec<bool> = asks.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(accepted.iter().filter(|&&a| a).count(), 1, "{accepted:?}");
        let taken = early
            .or_else(|| s.take_due(0))
            .expect("the accepted request is taken");
        let winner = if accepted[0] { "a" } else { "b" };
        assert_eq!(taken.reason(), winner);
        assert!(s.take_due(0).is_none(), "taken once");
        // In flight until done: a request now is refused, after `done` it is accepted.
        assert!(!s.request(Pending::new("c", 0, 0)));
        s.done();
        assert!(s.request(Pending::new("d", 0, 0)));
    });
}

/// The snapshot thread's `done` races a new request: the request is accepted only after
/// `done`, and then the flusher takes it.
#[test]
fn a_request_after_done_is_taken() {
    builder().check(|| {
        let s = Arc::new(Shared::new());
        assert!(s.request(Pending::new("first", 0, 0)));
        assert!(s.take_due(0).is_some());
        let w = s.clone();
        let writer = thread::spawn(move || w.done());
        let r = s.clone();
        let asker = thread::spawn(move || r.request(Pending::new("second", 0, 0)));
        writer.join().unwrap();
        let accepted = asker.join().unwrap();
        let taken = s.take_due(0);
        assert_eq!(
            accepted,
            taken.is_some(),
            "accepted iff it is there to take"
        );
        if let Some(p) = taken {
            assert_eq!(p.reason(), "second");
        }
    });
}

/// A request due later (a trigger's time kept after it) is not taken before its time.
#[test]
fn a_request_is_taken_only_when_due() {
    builder().check(|| {
        let s = Arc::new(Shared::new());
        let r = s.clone();
        let asker = thread::spawn(move || assert!(r.request(Pending::new("later", 0, 100))));
        assert!(s.take_due(50).is_none());
        asker.join().unwrap();
        assert!(s.take_due(99).is_none());
        assert!(s.take_due(100).is_some());
    });
}
