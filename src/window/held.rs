//! What the window holds: a finished page or a chunk of a slot's pages, with what the flusher
//! knew of them (times, records, missed counts) and what each costs in the budget.

/// A held item's bytes.
#[derive(Debug)]
pub(crate) enum Data {
    /// One finished page, as the flusher made it.
    Page(Box<[u8]>),
    /// `pages` whole pages compressed as one chunk, in the v7 file's own form (`u32 compressed
    /// size, u32 uncompressed size, zstd frame`), which a snapshot copies as it is.
    Chunk { bytes: Box<[u8]>, pages: u32 },
}

/// One finished page, or a chunk of a slot's consecutive pages, and what the flusher knew of
/// its pages when it emitted them.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) data: Data,
    /// Page time of its first and last records (ns): of a chunk, the least and the greatest
    /// over its pages.
    pub(crate) first_ts: u64,
    pub(crate) last_ts: u64,
    pub(crate) records: u64,
    /// The missed counts its pages carry (drops before their first records).
    pub(crate) missed: u64,
    /// Its (first) page's number in its slot's stream, given by `Store::push`.
    pub(crate) seq: u64,
}

impl Held {
    pub(crate) fn page(data: Box<[u8]>, last_ts: u64, records: u64, missed: u64) -> Self {
        let first_ts = data
            .get(..8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
        Self {
            data: Data::Page(data),
            first_ts,
            last_ts,
            records,
            missed,
            seq: 0,
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match &self.data {
            Data::Page(b) | Data::Chunk { bytes: b, .. } => b,
        }
    }

    /// Pages it holds.
    pub(crate) fn pages(&self) -> u64 {
        match self.data {
            Data::Page(_) => 1,
            Data::Chunk { pages, .. } => u64::from(pages),
        }
    }

    /// What it counts in the budget.
    pub(crate) fn cost(&self) -> u64 {
        self.bytes().len() as u64 + PAGE_OVERHEAD
    }
}

/// Bytes a held page or chunk costs beyond its data: its header, the `Arc`'s counts, its place
/// in its slot's queue and in the heap, and the allocator's own header of its bytes.
pub(crate) const PAGE_OVERHEAD: u64 = (std::mem::size_of::<Held>() + 16 + 8 + 16 + 16) as u64;
