//! Helpers shared by the integration tests: reading pages back with the project's kbuffer port.
#![allow(dead_code)]

use typhon_recorder::codec::CommonHeader;
use typhon_trace::kbuffer::{Endian, KBuffer, LongSize};

/// One page as a reader sees it.
#[derive(Debug)]
pub struct PageView {
    /// kbuffer_missed_events of the first record.
    pub missed: i32,
    /// (page time, whole record bytes) in order.
    pub records: Vec<(u64, Vec<u8>)>,
}

/// Reads and checks a page: every record is a whole Typhon record whose padded length is what
/// kbuffer returns; the commit ends exactly at the last record; bytes past the data are zero.
pub fn read_page(page: &[u8]) -> PageView {
    let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    kb.load_subbuffer(page).expect("page loads");
    let missed = kb.missed_events();
    let commit = u64::from_le_bytes(page[8..16].try_into().unwrap());
    let size = (commit & ((1 << 27) - 1)) as usize;
    let mut end = 16 + size;
    if commit & (1 << 30) != 0 {
        end += 8;
    }
    assert!(
        page[end..].iter().all(|&b| b == 0),
        "stale bytes after the data"
    );
    let mut records = Vec::new();
    let mut ev = kb.read_event();
    while let Some(e) = ev {
        let (h, rec) = CommonHeader::read_record(e.data).expect("whole record");
        assert_eq!(
            (h.size as usize).max(4).div_ceil(4) * 4,
            e.data.len(),
            "padded length"
        );
        assert!(
            e.data[h.size as usize..].iter().all(|&b| b == 0),
            "zero padding"
        );
        records.push((e.timestamp, rec.to_vec()));
        ev = kb.next_event();
    }
    assert!(
        !records.is_empty() || missed == 0,
        "a missed count needs a record on its page"
    );
    assert!(!records.is_empty(), "no empty pages");
    PageView { missed, records }
}

/// All pages of one slot, checked, with page time never going backwards across the stream.
pub fn read_stream(pages: &[Vec<u8>]) -> Vec<PageView> {
    let mut last = 0u64;
    pages
        .iter()
        .map(|p| {
            let v = read_page(p);
            for (ts, _) in &v.records {
                assert!(*ts >= last, "page time went backwards: {ts} < {last}");
                last = *ts;
            }
            v
        })
        .collect()
}

/// Records read as the readers read them (SPEC §15): definitions learnt, and each record that
/// names one by id handed out as the record it stands for.
#[derive(Default)]
pub struct Names(typhon_trace::defs::Definitions);

impl Names {
    /// `r` as the readers see it; `None` for a definition (no event of its own).
    pub fn read<'a>(&mut self, r: &'a [u8]) -> Option<std::borrow::Cow<'a, [u8]>> {
        if self.0.learn(r) {
            return None;
        }
        Some(match self.0.resolve(r) {
            Some(d) => std::borrow::Cow::Owned(d),
            None => std::borrow::Cow::Borrowed(r),
        })
    }
}
