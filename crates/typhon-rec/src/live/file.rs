//! `typhon-rec live FILE` on a finished (or recovered) file: its records streamed through the
//! model a batch at a time, so that every tick gets its summary while the memory stays the
//! model's. (The follower reads a finished file in one poll and keeps the newest records of
//! it, which is what a viewer of a running recording needs, not one of a whole file.)

use super::{Shared, BATCH};
use std::path::Path;
use typhon_trace::tracedat::{TraceDatError, TraceFile};

/// Reads the finished file at `path` to its end into the model; the state becomes finished.
pub(super) fn read(path: &Path, shared: &Shared) {
    let f = match TraceFile::open_streaming(path) {
        Ok(f) => f,
        Err(e) => {
            let mut m = shared.model();
            m.message = Some(format!("{}: {e}", path.display()));
            m.version += 1;
            return;
        }
    };
    let mut losses = typhon_trace::follow::meta_losses(&f);
    if let Some(Ok(meta)) = f.typhon_meta() {
        let mut m = shared.model();
        for sm in &meta.slots {
            if !sm.name.is_empty() {
                m.threads.insert(u32::from(sm.slot), sm.name.clone());
            }
        }
    }
    let (mut missed, mut damaged) = (0u64, 0u64);
    let mut batch = Vec::with_capacity(BATCH);
    let mut it = f.stream_records();
    loop {
        let next = it.next();
        let end = next.is_none();
        match next {
            Some(Ok(r)) => {
                missed += r.missed_before.filter(|&m| m > 0).unwrap_or(0) as u64;
                batch.push(r);
            }
            Some(Err(TraceDatError::DamagedPage { pages, .. })) => damaged += pages,
            Some(Err(e)) => {
                let mut m = shared.model();
                m.message = Some(format!("{}: {e}", path.display()));
                m.version += 1;
            }
            None => {}
        }
        if end || batch.len() >= BATCH {
            let mut m = shared.model();
            for r in batch.drain(..) {
                m.add(r);
            }
            losses.insert("missed".into(), missed);
            losses.insert("damaged_pages".into(), damaged);
            m.losses = losses.clone();
            m.state = if end { "finished" } else { "reading" }.into();
            m.version += 1;
            if end {
                m.settle_worst_now();
                return;
            }
        }
    }
}
