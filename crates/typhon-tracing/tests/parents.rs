//! A span's description carries its `tracing` parent's key (issue 36): the current span where
//! it was created, an explicit `parent:` (from another thread too), none for `parent: None`,
//! so that exports know the real parent of a span entered on other threads.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use tracing_subscriber::prelude::*;
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::RecorderBuilder;
use typhon_trace::tracedat::TraceFile;

/// The span names of `dat` by key (the readers' descriptions), and each of its records, decoded
/// as written, given to `f`.
fn names_and_records(dat: &Path, mut f: impl FnMut(&BTreeMap<u64, String>, Record)) {
    let names: BTreeMap<u64, String> = common::read(dat)
        .infos
        .into_iter()
        .map(|(k, n, _)| (k, n))
        .collect();
    let file = TraceFile::open(dat).unwrap();
    for c in 0..file.cpus() {
        for r in file.stream_cpu(c) {
            let r = r.unwrap();
            f(&names, records::decode(&r.data).unwrap().1);
        }
    }
}

#[test]
fn a_description_carries_its_tracing_parent() {
    let _g = typhon_recorder::doc_lock();
    let dir = common::scratch("parents");
    let dat = dir.join("parents.dat");
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    let d = tracing::Dispatch::new(
        tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new()),
    );
    tracing::dispatcher::with_default(&d, || {
        let root = tracing::info_span!("root");
        let contextual = root.in_scope(|| tracing::info_span!("contextual"));
        let (d2, root2) = (d.clone(), root.clone());
        let explicit = std::thread::spawn(move || {
            tracing::dispatcher::with_default(
                &d2,
                || tracing::info_span!(parent: &root2, "explicit"),
            )
        })
        .join()
        .unwrap();
        let none = root.in_scope(|| tracing::info_span!(parent: None, "none"));
        drop((contextual, explicit, none, root));
    });
    rec.finish().unwrap();

    // Names by key from the readers' descriptions, parents from the records as written.
    let mut parent = BTreeMap::new();
    names_and_records(&dat, |names, r| {
        if let Record::TracingSpanValues {
            key, parent_key, ..
        } = r
        {
            let p = names.get(&parent_key).cloned().unwrap_or_default();
            parent.insert(names[&key].clone(), p);
        }
    });
    let want: BTreeMap<String, String> = [
        ("root", ""),
        ("contextual", "root"),
        ("explicit", "root"),
        ("none", ""),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(parent, want);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An event carries the key of the span it is in, as the Registry's `event_span` says it: the
/// current span, an explicit `parent:`, none for a root event or outside every span, and under
/// a per-layer filter that hides the current span, the nearest one the layer sees.
#[test]
fn an_event_carries_the_key_of_its_span() {
    use tracing_subscriber::filter::filter_fn;
    use tracing_subscriber::Layer as _;
    let _g = typhon_recorder::doc_lock();
    let dir = common::scratch("event-parents");
    let dat = dir.join("event-parents.dat");
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    let layer = typhon_tracing::TyphonLayer::new().with_filter(filter_fn(|m| m.name() != "hidden"));
    let d = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    tracing::dispatcher::with_default(&d, || {
        tracing::info!(n = 0u64, "outside every span");
        let outer = tracing::info_span!("outer");
        let other = tracing::info_span!("other");
        outer.in_scope(|| {
            tracing::info!(n = 1u64, "in outer");
            tracing::info!(parent: &other, n = 2u64, "explicit");
            tracing::info!(parent: None, n = 3u64, "root");
            tracing::info_span!("hidden").in_scope(|| {
                tracing::info!(n = 4u64, "in hidden, which the layer does not see");
                tracing::info_span!("inner").in_scope(|| tracing::info!(n = 5u64, "in inner"));
            });
        });
        drop((outer, other));
    });
    rec.finish().unwrap();

    let mut span_of = BTreeMap::new();
    names_and_records(&dat, |names, r| {
        if let Record::TracingEventValues {
            span_key, values, ..
        } = r
        {
            let n = records::Values::new(values)
                .filter_map(Result::ok)
                .find_map(|(_, v)| match v {
                    records::Value::U64(n) => Some(n),
                    _ => None,
                })
                .unwrap();
            let span = names.get(&span_key).cloned().unwrap_or_default();
            span_of.insert(n, (span_key != 0, span));
        }
    });
    let want: BTreeMap<u64, (bool, String)> = [
        (0, ""),
        (1, "outer"),
        (2, "other"),
        (3, ""),
        (4, "outer"),
        (5, "inner"),
    ]
    .into_iter()
    .map(|(n, s)| (n, (!s.is_empty(), s.to_string())))
    .collect();
    assert_eq!(span_of, want);
    std::fs::remove_dir_all(&dir).unwrap();
}
