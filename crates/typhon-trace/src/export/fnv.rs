//! The FNV-1a hasher of the export's maps, and [`FnvMap`], a `HashMap` that uses it.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a, for the export's maps (slots, flows, interned names): their keys are small and
/// come from the file, looked up once or more per event, where SipHash's resistance to chosen
/// keys buys nothing and cost a tenth of the export's time.
#[derive(Default)]
pub(super) struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with [`Fnv`].
pub(super) type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;
