//! Loom model of a thread's span stack (`typhon_recorder::stack::SpanStack`) against the
//! flusher's read at finish: each entry is a seqlock whose sequence word is the span id, so a
//! read racing with the owner's pop and next push must return a span exactly as it was pushed,
//! or nothing, never a mix of two spans' fields or names.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::builder;
use typhon_recorder::codec::records::{decode, Record};
use typhon_recorder::stack::SpanStack;
use typhon_recorder::TraceContext;

/// (id, start, parent, trace context, name) of a span as the model pushes it.
type Span = (u64, u64, u64, Option<(u64, u64)>, &'static str);

const A: Span = (0x0100_0000_0000_0001, 10, 0, None, "alpha");
const B: Span = (
    0x0100_0000_0000_0002,
    20,
    7,
    Some((3, 4)),
    "bravo-is-longer-than-16",
);

fn push(s: &SpanStack, (id, start, parent, ctx, name): Span) {
    let ctx = ctx.map(|(hi, lo)| TraceContext { hi, lo });
    s.push(0, 0, id, start, parent, ctx, name.as_bytes());
}

/// The spans in what `open_records` returned, as the model pushed them.
fn read(s: &SpanStack) -> Vec<Span> {
    s.open_records(1, 100)
        .iter()
        .map(|r| match decode(r).expect("a whole record").1 {
            Record::NamedSpan { span, name } => {
                let name = [A.4, B.4].into_iter().find(|n| *n == name);
                let s = (
                    span.span_id,
                    100 - span.duration_ns as u64,
                    span.parent_span_id,
                );
                (s.0, s.1, s.2, None, name.expect("a name that was pushed"))
            }
            Record::TracedSpan {
                span,
                context,
                name,
            } => {
                let name = [A.4, B.4].into_iter().find(|n| *n == name);
                let s = (
                    span.span_id,
                    100 - span.duration_ns as u64,
                    span.parent_span_id,
                );
                let c = Some((context.hi, context.lo));
                (s.0, s.1, s.2, c, name.expect("a name that was pushed"))
            }
            other => panic!("not a span: {other:?}"),
        })
        .collect()
}

/// The owner pops span A (invalidating its entry) and pushes span B into the same entry and
/// the same name words while the flusher reads: the read gets A, B or nothing, whole.
#[test]
fn a_read_racing_a_pop_and_push_gets_one_whole_span_or_none() {
    builder().check(|| {
        let s = Arc::new(SpanStack::new());
        push(&s, A);
        let owner = {
            let s = s.clone();
            thread::spawn(move || {
                s.entries().invalidate(0);
                push(&s, B);
            })
        };
        let seen = read(&s);
        assert!(seen.len() <= 1, "{seen:?}");
        if let Some(span) = seen.first() {
            assert!(*span == A || *span == B, "a torn span: {span:?}");
        }
        owner.join().unwrap();
        assert_eq!(read(&s), vec![B], "once the owner is done, B is open");
    });
}

/// As above, with B a static name (`push_static`: the entry points at the `&'static str`, no
/// words are copied) replacing a copied A, and the reverse: a read gets A, B or nothing,
/// whole, never A's fields with B's name or a static pointer read before its span was whole.
#[test]
fn a_read_racing_a_static_push_gets_one_whole_span_or_none() {
    const S: Span = (0x0100_0000_0000_0003, 30, 9, None, "static-name");
    for (first, second) in [(A, S), (S, A)] {
        builder().check(move || {
            let s = Arc::new(SpanStack::new());
            let put = |s: &SpanStack, span: Span| {
                if span == S {
                    s.entries()
                        .push_static(0, 0, span.0, span.1, span.2, span.4);
                } else {
                    push(s, span);
                }
            };
            put(&s, first);
            let owner = {
                let s = s.clone();
                thread::spawn(move || {
                    s.entries().invalidate(0);
                    put(&s, second);
                })
            };
            let seen = read_named(&s, &[first.4, second.4]);
            assert!(seen.len() <= 1, "{seen:?}");
            if let Some(span) = seen.first() {
                assert!(*span == first || *span == second, "a torn span: {span:?}");
            }
            owner.join().unwrap();
            assert_eq!(read_named(&s, &[first.4, second.4]), vec![second]);
        });
    }
}

/// The owner ends A and begins B in its entry and C inside B while the flusher reads, which
/// stops at the first entry it finds free or changing: the read may get A, B, A then C (a span
/// begun while `finish` reads, the race it documents) or B then C, each whole, but never C
/// alone, which a read that went on past A's freed or changing entry finds once B and C are
/// pushed (it did, with `continue` for `break` in `open_records`).
#[test]
fn a_read_stops_at_a_freed_entry_and_never_returns_what_lies_above_it_alone() {
    const B2: Span = (0x0100_0000_0000_0002, 20, 0, None, "bravo");
    const C: Span = (0x0100_0000_0000_0003, 30, B2.0, None, "static-name");
    builder().check(|| {
        let s = Arc::new(SpanStack::new());
        push(&s, A);
        let owner = {
            let s = s.clone();
            thread::spawn(move || {
                s.entries().invalidate(0);
                push(&s, B2);
                s.entries()
                    .push_static(1, s.entries().names_end(1), C.0, C.1, C.2, C.4);
            })
        };
        let seen = read_named(&s, &[A.4, B2.4, C.4]);
        let ok: [&[Span]; 5] = [&[], &[A], &[B2], &[A, C], &[B2, C]];
        assert!(ok.contains(&seen.as_slice()), "{seen:?}");
        owner.join().unwrap();
        assert_eq!(read_named(&s, &[A.4, B2.4, C.4]), vec![B2, C]);
    });
}

/// The NamedSpans in what `open_records` returned, their names among `names`.
fn read_named(s: &SpanStack, names: &[&'static str]) -> Vec<Span> {
    s.open_records(1, 100)
        .iter()
        .map(|r| match decode(r).expect("a whole record").1 {
            Record::NamedSpan { span, name } => {
                let name = names.iter().find(|n| **n == name);
                (
                    span.span_id,
                    100 - span.duration_ns as u64,
                    span.parent_span_id,
                    None,
                    *name.expect("a name that was pushed"),
                )
            }
            other => panic!("not a named span: {other:?}"),
        })
        .collect()
}
