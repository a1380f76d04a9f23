//! Loom models of the recorder's lock-free parts; run with
//! `RUSTFLAGS="--cfg loom" cargo test -p loom-tests --release` (see VERIFY.md).
//!
//! The models in `tests/` drive the crate's real code (the slot ring, the slot registry and the
//! flusher's wake-up protocol), compiled against loom's atomics, mutexes and condition variables
//! through `typhon_recorder`'s `sync` shim. Without `--cfg loom` this crate has no tests.

/// Model-checker settings shared by the models: the preemption bound is
/// `LOOM_MAX_PREEMPTIONS` when set, else 3, which keeps every model to seconds in release builds.
#[cfg(loom)]
pub fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b
}

/// Writes a record of `size` bytes whose payload bytes all equal `tag` (after its u16 size).
#[cfg(loom)]
pub fn put(p: &mut typhon_recorder::ring::Producer, size: usize, tag: u8) -> bool {
    p.write(size, |r| {
        r[..2].copy_from_slice(&(size as u16).to_le_bytes());
        r[2..].fill(tag);
    })
}

/// Checks a drained record is intact (its size field and every payload byte agree) and returns
/// its tag.
#[cfg(loom)]
pub fn tag_of(r: &[u8]) -> u8 {
    assert_eq!(
        u16::from_le_bytes([r[0], r[1]]) as usize,
        r.len(),
        "size field"
    );
    let t = r[2];
    assert!(
        r[2..].iter().all(|&b| b == t),
        "record bytes torn or overwritten"
    );
    t
}
