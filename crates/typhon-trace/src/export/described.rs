//! The fields of the `tracing` spans the export has met, by span key: each span's latest
//! description (TracingSpanInfo, written at its creation and again for each `Span::record`,
//! with every field's last value), which its slices show as arguments. Bounded: the spans used
//! least recently go first once more than [`CAP`] are kept or their text passes [`MAX_BYTES`]
//! (counted; a slice of a forgotten span shows no fields).

use super::fnv::FnvMap;
use std::collections::VecDeque;

/// Spans whose fields are kept at most.
pub(super) const CAP: usize = 1 << 16;
/// Bytes of field text kept at most.
pub(super) const MAX_BYTES: usize = 16 << 20;

#[derive(Default)]
pub(super) struct Described {
    /// Key → (its latest touch, its fields).
    by_key: FnvMap<u64, (u64, String)>,
    /// Touches in order (key, touch); an entry whose key was touched since is stale.
    order: VecDeque<(u64, u64)>,
    bytes: usize,
    touch: u64,
    /// Spans forgotten to keep the bounds.
    pub(super) forgotten: u64,
}

impl Described {
    /// Span `key`'s description, replacing the one before.
    pub(super) fn describe(&mut self, key: u64, fields: &str) {
        self.touch += 1;
        let t = self.touch;
        let old = self.by_key.insert(key, (t, fields.to_string()));
        self.bytes = self.bytes + fields.len() - old.map_or(0, |o| o.1.len());
        self.order.push_back((key, t));
        self.trim();
    }

    /// Span `key`'s fields (marking it used), if they are known.
    pub(super) fn fields(&mut self, key: u64) -> Option<&str> {
        self.touch += 1;
        let t = self.touch;
        let e = self.by_key.get_mut(&key)?;
        e.0 = t;
        self.order.push_back((key, t));
        if self.order.len() > 2 * CAP {
            self.trim();
        }
        self.by_key.get(&key).map(|e| e.1.as_str())
    }

    /// Forgets the least recently used spans beyond the bounds, and stale touches.
    fn trim(&mut self) {
        while self.by_key.len() > CAP || self.bytes > MAX_BYTES || self.order.len() > 2 * CAP {
            let Some((key, t)) = self.order.pop_front() else {
                return;
            };
            if self.by_key.get(&key).is_some_and(|e| e.0 == t) {
                if let Some((_, f)) = self.by_key.remove(&key) {
                    self.bytes -= f.len();
                    self.forgotten += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The latest description wins; beyond the cap the least recently used span goes, counted,
    /// and memory stays at the cap however many spans pass.
    #[test]
    fn latest_wins_and_least_recently_used_goes() {
        let mut d = Described::default();
        d.describe(1, "a=1");
        d.describe(1, "a=2");
        assert_eq!(d.fields(1), Some("a=2"));
        for k in 2..=CAP as u64 {
            d.describe(k, "b=1");
        }
        // 1 is used again, so 2 is the least recently used when one more comes.
        assert_eq!(d.fields(1), Some("a=2"));
        d.describe(CAP as u64 + 1, "c=1");
        assert_eq!(d.fields(2), None);
        assert_eq!(d.forgotten, 1);
        assert_eq!(d.fields(1), Some("a=2"));
        for k in 0..4 * CAP as u64 {
            d.describe(1_000_000 + k, "x");
            let _ = d.fields(1);
        }
        assert!(d.by_key.len() <= CAP && d.order.len() <= 2 * CAP);
        assert_eq!(d.fields(1), Some("a=2"));
    }
}
