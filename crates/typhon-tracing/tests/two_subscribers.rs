//! Two subscribers recording on one thread, each a Registry with its own `TyphonLayer`: the
//! global one and a scoped one (`with_default`), as in the issue, and two scoped ones. Their
//! first spans have the same `tracing` id, so every hook that names a span by id (enter, exit,
//! close, record, follows_from, an event's current span) must tell them apart, nested and
//! interleaved. Only the first test makes spans in the global subscriber: its Registry is
//! fresh there, so its ids are the scoped one's (a Registry's later ids carry generations).

mod common;

use common::{read, scratch, Entry};
use std::sync::Once;
use std::thread::sleep;
use std::time::Duration;
use tracing::Dispatch;
use tracing_subscriber::prelude::*;
use typhon_recorder::{doc_lock, RecorderBuilder};
use typhon_tracing::TyphonLayer;

const MS: i64 = 1_000_000;
/// Ticks are converted to ns on their own for a record's start and its duration: an end
/// computed from both may be off by a rounding.
const ROUNDING_NS: i64 = 1_000;

fn global() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(TyphonLayer::new()),
        )
        .unwrap();
    });
}

fn scoped() -> Dispatch {
    Dispatch::new(tracing_subscriber::registry().with(TyphonLayer::new()))
}

fn ms(n: u64) {
    sleep(Duration::from_millis(n));
}

fn near(a: i64, b: i64) -> bool {
    (a - b).abs() <= ROUNDING_NS
}

/// The program: a global span of 20 ms, and a scoped span of 60 ms entered 10 ms into
/// it, whose exit comes last. The global span's exit ends it (not the scoped span, which had
/// the same id); the scoped span goes on past it, as a second entry.
#[test]
fn an_exit_ends_the_span_of_its_own_subscriber() {
    let _g = doc_lock();
    global();
    let dir = scratch("two-exits");
    let path = dir.join("exits.dat");
    let rec = RecorderBuilder::new().output(&path).start().unwrap();
    let sc = scoped();
    let g = tracing::info_span!("global");
    let s = tracing::dispatcher::with_default(&sc, || tracing::info_span!("scoped"));
    assert_eq!(g.id(), s.id(), "both Registries' first span");
    let eg = g.enter();
    ms(10);
    tracing::dispatcher::with_default(&sc, || {
        let es = s.enter();
        ms(10);
        drop(eg);
        ms(50);
        drop(es);
    });

    // The other way round: the scoped span outer, the global one entered inside it and
    // still entered when the scoped one exits.
    let s2 = tracing::dispatcher::with_default(&sc, || tracing::info_span!("scoped outer"));
    let g2 = tracing::info_span!("global inner");
    let es = s2.enter();
    ms(5);
    let eg = g2.enter();
    ms(5);
    drop(es);
    ms(20);
    drop(eg);
    drop((g, s, g2, s2));
    let stats = rec.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
    assert_eq!(stats.slots.iter().map(|x| x.unclosed).sum::<u64>(), 0);

    let r = read(&path);
    let global = r.one("global");
    let scoped: Vec<&Entry> = r.named("scoped");
    assert_eq!(scoped.len(), 2, "{:#?}", r.entries);
    assert!(global.dur >= 20 * MS, "{global:?}");
    assert_eq!(global.parent, 0);
    // The scoped span: entered inside the global one, so its first entry nests in it and
    // ends with it; its second entry starts there, at top level, and ends at its exit.
    let (s1, s2) = (scoped[0], scoped[1]);
    assert_eq!(s1.key, s2.key);
    assert!(s1.nests_in(global), "{s1:?} {global:?}");
    assert!(near(s1.end(), global.end()), "{s1:?} {global:?}");
    assert!(near(s2.ts, global.end()), "{s2:?} {global:?}");
    assert_eq!(s2.parent, 0);
    assert!(s1.dur >= 10 * MS, "{s1:?}");
    assert!(s2.dur >= 50 * MS, "{s2:?}");
    assert!(s1.dur + s2.dur >= 60 * MS);
    // The global span ended before the scoped one's 50 ms after it.
    assert!(global.end() + 50 * MS <= s2.end(), "{global:?} {s2:?}");

    let outer = r.one("scoped outer");
    let inner = r.named("global inner");
    assert_eq!(inner.len(), 2, "{:#?}", r.entries);
    assert!(outer.dur >= 10 * MS, "{outer:?}");
    assert!(inner[0].nests_in(outer), "{:?} {outer:?}", inner[0]);
    assert!(near(inner[0].end(), outer.end()));
    assert!(near(inner[1].ts, outer.end()));
    assert!(inner[1].dur >= 20 * MS, "{:?}", inner[1]);
    assert!(outer.end() + 20 * MS <= inner[1].end());
    assert_eq!(r.entries.len(), 6, "{:#?}", r.entries);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Nested in order, either way round, each span's exit ends its own entry: one entry each.
#[test]
fn nested_spans_of_two_subscribers_end_in_order() {
    let _g = doc_lock();
    let dir = scratch("two-nested");
    let path = dir.join("nested.dat");
    let rec = RecorderBuilder::new().output(&path).start().unwrap();
    let (sg, sc) = (scoped(), scoped());
    let g = tracing::dispatcher::with_default(&sg, || tracing::info_span!("g"));
    let s = tracing::dispatcher::with_default(&sc, || tracing::info_span!("s"));
    assert_eq!(g.id(), s.id());
    g.in_scope(|| {
        ms(2);
        tracing::dispatcher::with_default(&sc, || s.in_scope(|| ms(10)));
        ms(2);
    });
    tracing::dispatcher::with_default(&sc, || {
        s.in_scope(|| {
            ms(2);
            g.in_scope(|| ms(10));
            ms(2);
        })
    });
    drop((g, s));
    rec.finish().unwrap();
    let r = read(&path);
    let (g, s) = (r.named("g"), r.named("s"));
    assert_eq!(
        (g.len(), s.len(), r.entries.len()),
        (2, 2, 4),
        "{:#?}",
        r.entries
    );
    // First g around s, then s around g.
    assert!(s[0].nests_in(g[0]), "{:?}", r.entries);
    assert!(g[1].nests_in(s[1]), "{:?}", r.entries);
    assert!(s[0].dur >= 10 * MS && g[0].dur >= s[0].dur + 4 * MS);
    assert!(g[1].dur >= 10 * MS && s[1].dur >= g[1].dur + 4 * MS);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Close (and an id reused after it), record, follows_from and events, with the spans of both
/// subscribers live under the same ids.
#[test]
fn every_hook_names_the_span_of_its_own_subscriber() {
    let _g = doc_lock();
    let dir = scratch("two-hooks");
    let path = dir.join("hooks.dat");
    let rec = RecorderBuilder::new().output(&path).start().unwrap();
    let (sg, sc) = (scoped(), scoped());
    let in_g = |f: &mut dyn FnMut()| tracing::dispatcher::with_default(&sg, f);
    let in_s = |f: &mut dyn FnMut()| tracing::dispatcher::with_default(&sc, f);
    let (g1, g2) = tracing::dispatcher::with_default(&sg, || {
        (
            tracing::info_span!("g1", v = tracing::field::Empty),
            tracing::info_span!("g2"),
        )
    });
    let (s1, s2) = tracing::dispatcher::with_default(&sc, || {
        (
            tracing::info_span!("s1", v = tracing::field::Empty),
            tracing::info_span!("s2"),
        )
    });
    assert_eq!((g1.id(), g2.id()), (s1.id(), s2.id()));
    g1.record("v", 1);
    s1.record("v", 2);
    g2.follows_from(&g1);
    s2.follows_from(&s1);
    // An event's span is the current span of its own subscriber, whatever else is entered.
    in_g(&mut || {
        let _eg = g1.enter();
        in_s(&mut || s2.in_scope(|| tracing::info!("in s2")));
        tracing::info!("in g1");
    });
    // g1 closes beside s1 (same id), whose entries the enter cache holds: s1's stay good.
    s1.in_scope(|| {});
    drop(g1);
    let g3 = tracing::dispatcher::with_default(&sg, || tracing::info_span!("g3"));
    for _ in 0..2 {
        g3.in_scope(|| {});
        s1.in_scope(|| {});
    }
    // And the other way: s1 closes, g3 stays.
    drop(s1);
    let s3 = tracing::dispatcher::with_default(&sc, || tracing::info_span!("s3"));
    for _ in 0..2 {
        s3.in_scope(|| {});
        g3.in_scope(|| {});
    }
    drop((g2, s2, g3, s3));
    rec.finish().unwrap();

    let r = read(&path);
    let key = |name: &str| r.named(name)[0].key;
    let info = r.last_infos();
    let by_name = |name: &str| -> u64 {
        *info
            .iter()
            .find(|(_, (n, _))| n == name)
            .unwrap_or_else(|| panic!("no info of {name}: {info:?}"))
            .0
    };
    let (kg1, kg2, ks1, ks2) = (by_name("g1"), by_name("g2"), by_name("s1"), by_name("s2"));
    assert_eq!(info[&kg1].1, "v=1");
    assert_eq!(info[&ks1].1, "v=2");
    assert_eq!(r.follows, [(kg2, kg1), (ks2, ks1)]);
    assert_eq!(
        r.events,
        [
            (ks2, "in s2".into(), String::new()),
            (kg1, "in g1".into(), String::new())
        ]
    );
    let names: Vec<&str> = r.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["s2", "g1", "s1", "g3", "s1", "g3", "s1", "s3", "g3", "s3", "g3"]
    );
    assert_eq!(key("s1"), ks1);
    assert_eq!(key("g1"), kg1);
    std::fs::remove_dir_all(&dir).unwrap();
}
