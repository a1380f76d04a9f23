//! What the layer keeps of each live span, in a table of its own keyed by the layer's stack
//! and the span's `tracing` id, instead of the Registry's extensions: an extension is a box
//! per span (the Registry's map holds `Box<dyn Any>`), and the table allocates only while it
//! grows to the most spans the program has had open at once.
//!
//! The table is sharded by the key's hash, each shard a mutex over a map. A shard's lock is
//! held only to put, copy out or take an entry, never while user code runs (a field's `Debug`
//! may log, or record into a span): that would deadlock on the thread's own lock. Maps keep
//! their room when entries leave, so a program at a steady number of open spans allocates
//! nothing here.

use crate::fields::SpanFields;
use crate::names::Display;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, MutexGuard, OnceLock};
use tracing_core::Metadata;

/// What the layer keeps of a span: written once at its creation.
pub(crate) struct SpanData {
    pub(crate) key: u64,
    /// Its `tracing` parent's key (0: a root), which its description carries.
    pub(crate) parent_key: u64,
    /// Enters the thread caches did not count: each thread's first of this span (and one
    /// after its cache slot went to another span), but the creating thread's first, which the
    /// slot its creation filled serves and [`crate::cache::retire`] reports. Not 1 at close,
    /// with that one: it was entered on several threads, or never, and its close is written
    /// (`retire` says the rest).
    pub(crate) slow_enters: u32,
    /// Its token in the enter cache ([`crate::cache`]): replaced when it is renamed.
    pub(crate) token: u64,
    /// Its callsite.
    pub(crate) meta: &'static Metadata<'static>,
    /// The name its entries carry: empty when its TracingSpanValues say it (readers take it
    /// from there, SPEC §15); the name itself when its description went out inline.
    pub(crate) display: Display,
    /// Its fields, each with its last value, encoded.
    pub(crate) fields: SpanFields,
}

const SHARDS: usize = 64;

/// Hashes the (stack, id) pair: ids of a Registry put a slab index in the low bits, so mix.
#[derive(Default)]
struct Mix(u64);

impl Hasher for Mix {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(23) ^ n).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }
}

type Map = HashMap<(u64, u64), SpanData, BuildHasherDefault<Mix>>;

static TABLE: OnceLock<Box<[Mutex<Map>]>> = OnceLock::new();

fn shard(stack: u64, id: u64) -> MutexGuard<'static, Map> {
    let t = TABLE.get_or_init(|| (0..SHARDS).map(|_| Mutex::default()).collect());
    let mut h = Mix::default();
    h.write_u64(stack);
    h.write_u64(id);
    // The map takes the hash's low bits: the shard its high ones.
    let s = &t[(h.finish() >> 58) as usize % SHARDS];
    // A panic elsewhere while it was held (in this module: none can) leaves the map whole.
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps `data` for span `id` of `stack`.
pub(crate) fn insert(stack: u64, id: u64, data: SpanData) {
    shard(stack, id).insert((stack, id), data);
}

/// `f` of span `id`'s data, under its shard's lock: `f` must not call out to user code.
pub(crate) fn with<R>(stack: u64, id: u64, f: impl FnOnce(&mut SpanData) -> R) -> Option<R> {
    shard(stack, id).get_mut(&(stack, id)).map(f)
}

/// Takes span `id`'s data out (it closed).
pub(crate) fn remove(stack: u64, id: u64) -> Option<SpanData> {
    shard(stack, id).remove(&(stack, id))
}
