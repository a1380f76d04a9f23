//! A span's description carries its `tracing` parent's key (issue 36): the current span where
//! it was created, an explicit `parent:` (from another thread too), none for `parent: None`,
//! so that exports know the real parent of a span entered on other threads.

mod common;

use std::collections::BTreeMap;
use tracing_subscriber::prelude::*;
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::RecorderBuilder;
use typhon_trace::tracedat::TraceFile;

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
    let names: BTreeMap<u64, String> = common::read(&dat)
        .infos
        .into_iter()
        .map(|(k, n, _)| (k, n))
        .collect();
    let f = TraceFile::open(&dat).unwrap();
    let mut parent = BTreeMap::new();
    for c in 0..f.cpus() {
        for r in f.stream_cpu(c) {
            let r = r.unwrap();
            if let Record::TracingSpanValues {
                key, parent_key, ..
            } = records::decode(&r.data).unwrap().1
            {
                let p = names.get(&parent_key).cloned().unwrap_or_default();
                parent.insert(names[&key].clone(), p);
            }
        }
    }
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
