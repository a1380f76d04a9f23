//! Loom model of the slot registry: a thread claims a slot, writes and retires while the flusher
//! services the slot with the calls `flusher::service_slot` makes (`state_for_service`, take
//! the consumer, drain, release a RETIRING slot), and a second thread claims concurrently —
//! maybe the same slot once released.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{builder, put, tag_of};
use typhon_recorder::registry::{Registry, FREE, RETIRING};
use typhon_recorder::ring::Entry;

#[test]
fn claim_retire_reuse_against_flusher() {
    builder().check(|| {
        let reg = Arc::new(Registry::new(4096));

        // The first thread's claim happens before the others start, so it owns slot 1.
        let (slot, mut parked) = reg.claim().unwrap().unwrap();
        assert_eq!(slot, 1);
        let r = reg.clone();
        let a = thread::spawn(move || {
            assert!(put(&mut parked.producer, 100, 1));
            parked.span_counter = 7;
            r.retire(slot, parked);
        });

        let r = reg.clone();
        let flusher = thread::spawn(move || {
            // (slot, tag) of every record the flusher drained, in order.
            let mut seen = Vec::new();
            let mut cons = None;
            for _ in 0..2 {
                // The flusher's own read: RETIRING means every record of the thread is published.
                let state = r.state_for_service(1);
                if cons.is_none() && state != FREE {
                    cons = r.take_consumer(1);
                }
                if let Some(c) = cons.as_mut() {
                    c.drain(|e| match e {
                        Entry::Record(rec) => seen.push(tag_of(rec)),
                        Entry::Gap(_) => panic!("no drops"),
                    });
                }
                if state == RETIRING {
                    assert_eq!(
                        seen,
                        vec![1],
                        "a retired slot is released only when drained"
                    );
                    r.release(1);
                    break;
                }
                thread::yield_now();
            }
            (seen, cons)
        });

        let r = reg.clone();
        let b = thread::spawn(move || {
            let (slot, mut parked) = r.claim().unwrap().unwrap();
            if slot == 1 {
                // Reused: the parked state of the first thread came with it.
                assert_eq!(parked.span_counter, 7);
            }
            assert!(put(&mut parked.producer, 100, 2));
            (slot, parked)
        });

        a.join().unwrap();
        let (b_slot, _b_parked) = b.join().unwrap();
        let (mut seen, cons) = flusher.join().unwrap();
        // Final drain of every slot, as the flusher's last cycle.
        let rest = |c: &mut typhon_recorder::ring::Consumer, out: &mut Vec<u8>| {
            c.drain(|e| {
                if let Entry::Record(rec) = e {
                    out.push(tag_of(rec))
                }
            });
        };
        let mut slot1 = cons
            .or_else(|| reg.take_consumer(1))
            .expect("slot 1 has a ring");
        rest(&mut slot1, &mut seen);
        if b_slot != 1 {
            let mut other = reg.take_consumer(b_slot).expect("b's ring");
            let mut v = Vec::new();
            rest(&mut other, &mut v);
            assert_eq!(v, vec![2]);
            assert_eq!(seen, vec![1]);
        } else {
            // Same ring: the first thread's record strictly before the second's, once each.
            assert_eq!(seen, vec![1, 2]);
        }
    });
}

/// A thread's first claim races the flusher's `typhon-spares` helper topping up the spare pool
/// (`Registry::top_up_spares`: the same `try_make_spare` steps as the helper's loop, which also
/// stops at a refused ring or a finishing recorder): the claim gets a ring
/// either way (a spare, or its own when the pool is empty at that moment), the pool ends full,
/// and no ring is handed out twice (each side's records come back from its own ring only).
#[test]
fn first_claim_against_spare_top_up() {
    builder().check(|| {
        let reg = Arc::new(Registry::with_spares(4096, 1));
        let r = reg.clone();
        let helper = thread::spawn(move || r.top_up_spares());
        let r = reg.clone();
        let claimer = thread::spawn(move || {
            let (slot, mut parked) = r.claim().unwrap().unwrap();
            assert!(put(&mut parked.producer, 100, 5));
            (slot, parked)
        });
        let made = helper.join().unwrap();
        let (slot, _parked) = claimer.join().unwrap();
        assert_eq!(slot, 1);
        // The helper made one ring, or a second one if the claim took the first meanwhile.
        assert!((1..=2).contains(&made));
        reg.top_up_spares();
        assert_eq!(reg.spare_count(), 1, "the pool ends full");
        let mut seen = Vec::new();
        reg.take_consumer(1).unwrap().drain(|e| {
            if let Entry::Record(rec) = e {
                seen.push(tag_of(rec))
            }
        });
        assert_eq!(
            seen,
            vec![5],
            "the slot's consumer reads the claimer's ring"
        );
    });
}
