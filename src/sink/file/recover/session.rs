//! `session.json` as `recover` reads it: every field checked, named when it is wrong.

use crate::sink::tracedat::{Compression, DEFAULT_CHUNK_PAGES, MAX_CHUNK_BYTES};
use std::io;
use std::path::Path;

/// The fields a recorder writes to `session.json`.
const FIELDS: &[&str] = &[
    "page_size",
    "compression",
    "chunk_pages",
    "wall_anchor_ns",
    "monotonic_anchor_ns",
    "version",
];

/// What `recover` takes from `session.json`.
pub(super) struct Session {
    pub(super) page: u64,
    pub(super) compression: Compression,
    /// Pages per chunk of a compressed recording (a session written before it was noted: the
    /// default), at most what a reader takes in one chunk.
    pub(super) chunk_pages: u64,
    pub(super) wall_anchor_ns: i64,
    pub(super) mono_anchor_ns: i64,
}

/// Reads the session, refusing one with a field the recorder does not write (a renamed
/// `compression` would make compressed parts read as pages) or a value it cannot have written.
pub(super) fn read(v: &serde_json::Value, path: &Path) -> io::Result<Session> {
    let bad = |m: String| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {m}", path.display()),
        )
    };
    let Some(map) = v.as_object() else {
        return Err(bad("not a JSON object".into()));
    };
    if let Some(k) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(bad(format!(
            "unknown field {k:?} (the recorder writes {}): not a session the recorder wrote; fix it, then run recover again",
            FIELDS.join(", ")
        )));
    }
    let page = v["page_size"].as_u64().unwrap_or(0);
    crate::flush::page::validate_page_size(page as usize)
        .map_err(|e| bad(format!("page_size: {e}")))?;
    let compression = match &v["compression"] {
        serde_json::Value::Null => Compression::None,
        serde_json::Value::String(c) => {
            Compression::parse(c).map_err(|e| bad(format!("compression: {e}")))?
        }
        other => return Err(bad(format!("compression is {other}, not a string"))),
    };
    let max_pages = u64::from(MAX_CHUNK_BYTES) / page;
    let chunk_pages = match &v["chunk_pages"] {
        serde_json::Value::Null => DEFAULT_CHUNK_PAGES as u64,
        n => n
            .as_u64()
            .filter(|n| (1..=max_pages).contains(n))
            .ok_or_else(|| {
                bad(format!(
                    "chunk_pages is {n}, not a number of pages from 1 to {max_pages}"
                ))
            })?,
    };
    let anchor = |k: &str| match &v[k] {
        serde_json::Value::Null => Ok(0),
        n => n
            .as_i64()
            .ok_or_else(|| bad(format!("{k} is {n}, not a time in nanoseconds"))),
    };
    Ok(Session {
        page,
        compression,
        chunk_pages,
        wall_anchor_ns: anchor("wall_anchor_ns")?,
        mono_anchor_ns: anchor("monotonic_anchor_ns")?,
    })
}
