//! The sub-buffer page writer: Typhon records in, Linux ftrace ring-buffer pages out.
//!
//! Every slot's record stream becomes a sequence of fixed-size pages in exactly the layout the
//! kernel hands to `trace_pipe_raw` readers on a 64-bit little-endian host, so that libtraceevent's
//! `kbuffer` (and therefore `trace-cmd report`) reads them byte-compatibly. The format is described
//! here once; `typhon_trace::kbuffer` is the
//! reader with libtraceevent's semantics, [`PageRecords`] the recorder's own.
//!
//! ```text
//!  page (page_size bytes, all integers little-endian)
//!  0               8               16
//!  +---------------+---------------+----------------------------------+-------------+---------+
//!  | timestamp u64 |  commit u64   | records ...                      | missed u64  | zeros   |
//!  +---------------+---------------+----------------------------------+-------------+---------+
//!                                  |<---- commit & COMMIT_MASK ------>| iff STORED  | to end
//!
//!  commit: bits 0..26  number of record bytes (the exact end of the last record)
//!          bit 30      RB_MISSED_STORED: the lost-record count follows the records as a u64
//!          bit 31      RB_MISSED_EVENTS: records were lost before the first record of this page
//!
//!  record header (u32):
//!   31                                   5 4       0
//!  +--------------------------------------+---------+
//!  |            time_delta (27)           | type_len|
//!  +--------------------------------------+---------+
//!
//!  type_len 1..=28  data, short form: [hdr][payload: 4 * type_len bytes]           (≤ 112 bytes)
//!  type_len 0       data, long form:  [hdr][u32 len = payload + 4][payload]        (> 112 bytes)
//!  type_len 30      time extend:      [hdr: delta & 0x7FF_FFFF][u32 delta >> 27]
//!                   (followed by the record it extends, with time_delta 0)
//! ```
//!
//! Rules this writer keeps (each one matters to kbuffer, see `research/ftrace-kbuffer-format.md`):
//! - The page timestamp is the first record's time and that record has delta 0, so a page never
//!   starts with a time extend (an extend at the start would hide the missed count: kbuffer only
//!   reports it while its current record is at data offset 0).
//! - A payload is padded with zero bytes to a multiple of 4 (at least 4); readers get the padded
//!   length back, so the exact length must be in-band (Typhon records carry it in their header).
//! - A gap of 2^27 ns or more between consecutive records is carried by a time extend.
//! - A record earlier than the page's running time gets delta 0: page time never goes backwards.
//!   (The record keeps its own timestamp inside its payload; the writer never touches it.)
//! - No padding records and no zero words inside the commit: kbuffer would add a padding record's
//!   delta to its clock and decode zero words as bogus 4-byte records.
//! - Everything after the records (and the stored count) is zero: no stale bytes from an earlier
//!   page reach a file.
//!
//! ```
//! use typhon_recorder::page::{PageWriter, DEFAULT_PAGE_SIZE};
//!
//! let mut w = PageWriter::new(DEFAULT_PAGE_SIZE).unwrap();
//! w.try_push(1_000, &[1, 2, 3, 4, 5, 6]).unwrap(); // 6 bytes -> type_len 2 (8 bytes, padded)
//! w.try_push(1_010, &[7; 4]).unwrap();             // delta 10
//! let page = w.finish();
//! assert_eq!(page.len(), 4096);
//! assert_eq!(u64::from_le_bytes(page[0..8].try_into().unwrap()), 1_000); // page time
//! assert_eq!(u64::from_le_bytes(page[8..16].try_into().unwrap()), 12 + 8); // commit
//! assert_eq!(u32::from_le_bytes(page[16..20].try_into().unwrap()), 2); // type_len 2, delta 0
//! assert_eq!(&page[20..28], &[1, 2, 3, 4, 5, 6, 0, 0]);
//! assert_eq!(u32::from_le_bytes(page[28..32].try_into().unwrap()), 1 | 10 << 5);
//! assert!(page[36..].iter().all(|&b| b == 0));
//! ```

use crate::codec::copy_small;
use core::fmt;

/// Bytes before the first record: the u64 page timestamp and the u64 commit word.
pub const PAGE_HEADER_SIZE: usize = 16;
/// The default sub-buffer size, the kernel's on x86_64 and arm64 (one 4 KiB page).
pub const DEFAULT_PAGE_SIZE: usize = 4096;
/// Commit flag: records were lost before the first record of this page.
pub const RB_MISSED_EVENTS: u64 = 1 << 31;
/// Commit flag: the number of lost records is stored as a u64 right after the records.
pub const RB_MISSED_STORED: u64 = 1 << 30;
/// The bits of the commit word that hold the number of record bytes.
pub const COMMIT_MASK: u64 = (1 << 27) - 1;

/// The smallest supported page size (the kernel's page size on x86_64).
pub const MIN_PAGE_SIZE: usize = 4096;
/// The largest supported page size: the kernel refuses sub-buffers above `RB_WRITE_MASK + 1`.
pub const MAX_PAGE_SIZE: usize = 1 << 20;

/// The largest count a page can carry: `kbuffer_missed_events()` returns a C `int`.
const MAX_STORED_MISSED: u64 = i32::MAX as u64;
/// Payloads up to this padded size use the short record form (`RB_MAX_SMALL_DATA`).
const MAX_SMALL_DATA: usize = 112;
/// Type of a time-extend record.
const TYPE_TIME_EXTEND: u32 = 30;
/// Deltas are 27 bits wide (`TS_SHIFT`).
const TS_SHIFT: u32 = 27;
const TS_MASK: u64 = (1 << TS_SHIFT) - 1;
/// A time extend carries at most 32 + 27 bits of delta.
const MAX_EXTEND_DELTA: u64 = (1 << (32 + TS_SHIFT)) - 1;

/// The largest payload (a whole Typhon record) that fits in one page of `page_size` bytes:
/// the page header (16), a long-form record header (4 + 4) and the payload.
///
/// ```
/// use typhon_recorder::page::max_record_size;
/// assert_eq!(max_record_size(4096), 4072);
/// assert_eq!(max_record_size(8192), 8168);
/// ```
pub fn max_record_size(page_size: usize) -> usize {
    page_size.saturating_sub(PAGE_HEADER_SIZE + 8)
}

/// Checks that `page_size` is a sub-buffer size the kernel could use: a power of two from
/// 4096 to 1 MiB.
///
/// ```
/// use typhon_recorder::page::validate_page_size;
/// assert!(validate_page_size(4096).is_ok());
/// assert!(validate_page_size(1 << 20).is_ok());
/// assert!(validate_page_size(2048).is_err());
/// assert!(validate_page_size(6000).is_err());
/// assert!(validate_page_size(2 << 20).is_err());
/// ```
pub fn validate_page_size(page_size: usize) -> Result<(), PageError> {
    if page_size.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) {
        Ok(())
    } else {
        Err(PageError::InvalidPageSize(page_size))
    }
}

/// Errors of page setup and of [`PageWriter::set_missed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageError {
    /// The page size is not a power of two in 4096..=1 MiB.
    InvalidPageSize(usize),
    /// [`PageWriter::set_missed`] was called on a page that already holds records: a lost count
    /// describes the gap *before* a page's first record.
    NotEmpty,
}

impl fmt::Display for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PageError::InvalidPageSize(n) => write!(
                f,
                "invalid page size {n}: must be a power of two from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE}"
            ),
            PageError::NotEmpty => {
                f.write_str("missed-record count set on a page that already holds records")
            }
        }
    }
}

impl std::error::Error for PageError {}

/// Why [`PageWriter::try_push`] did not write a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushError {
    /// The record does not fit in what is left of this page: finish the page and push it again
    /// on the next one.
    Full,
    /// The record is larger than [`max_record_size`]: it can never fit in a page of this size.
    TooLarge,
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Full => f.write_str("page full"),
            PushError::TooLarge => {
                f.write_str("record larger than the largest record a page holds")
            }
        }
    }
}

impl std::error::Error for PushError {}

/// Builds sub-buffer pages one at a time in a single reused buffer.
///
/// Push records with [`try_push`](Self::try_push) until it returns [`PushError::Full`], then take
/// the page with [`finish`](Self::finish) (which also starts the next one) and push again.
/// Allocation happens only in [`new`](Self::new).
///
/// ```
/// use typhon_recorder::page::{PageWriter, PushError};
///
/// let mut w = PageWriter::new(4096).unwrap();
/// let mut pages = Vec::new();
/// for i in 0..1000u64 {
///     let rec = [i as u8; 40];
///     match w.try_push(i * 100, &rec) {
///         Ok(_) => {}
///         Err(PushError::Full) => {
///             pages.push(w.finish().to_vec());
///             w.try_push(i * 100, &rec).unwrap();
///         }
///         Err(PushError::TooLarge) => unreachable!(),
///     }
/// }
/// pages.push(w.finish().to_vec());
/// assert_eq!(pages.len(), 1000 / (4080 / 44) + 1);
/// ```
pub struct PageWriter {
    buf: Box<[u8]>,
    /// Bytes of records written so far (the future commit size).
    len: usize,
    /// Most record bytes this page can take: page size minus header minus a reserved count slot.
    cap: usize,
    records: u32,
    page_ts: u64,
    last_ts: u64,
    /// Lost-record count stored on this page (0 = none).
    missed: u64,
    /// Bytes at and past this offset are known to be zero.
    dirty_end: usize,
}

impl fmt::Debug for PageWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageWriter")
            .field("page_size", &self.buf.len())
            .field("data_len", &self.len)
            .field("records", &self.records)
            .field("page_ts", &self.page_ts)
            .field("last_ts", &self.last_ts)
            .field("missed", &self.missed)
            .finish()
    }
}

impl PageWriter {
    /// A writer for pages of `page_size` bytes (see [`validate_page_size`]).
    ///
    /// ```
    /// use typhon_recorder::page::PageWriter;
    /// assert!(PageWriter::new(8192).is_ok());
    /// assert!(PageWriter::new(1000).is_err());
    /// ```
    pub fn new(page_size: usize) -> Result<Self, PageError> {
        validate_page_size(page_size)?;
        Ok(PageWriter {
            buf: vec![0u8; page_size].into_boxed_slice(),
            len: 0,
            cap: page_size - PAGE_HEADER_SIZE,
            records: 0,
            page_ts: 0,
            last_ts: 0,
            missed: 0,
            dirty_end: PAGE_HEADER_SIZE,
        })
    }

    /// The page size in bytes.
    ///
    /// ```
    /// # use typhon_recorder::page::PageWriter;
    /// assert_eq!(PageWriter::new(4096).unwrap().page_size(), 4096);
    /// ```
    pub fn page_size(&self) -> usize {
        self.buf.len()
    }

    /// True while the current page holds no record (it may still carry a missed count).
    ///
    /// ```
    /// # use typhon_recorder::page::PageWriter;
    /// let mut w = PageWriter::new(4096).unwrap();
    /// assert!(w.is_empty());
    /// w.try_push(5, &[1; 12]).unwrap();
    /// assert!(!w.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Number of data records on the current page (time extends not counted).
    ///
    /// ```
    /// # use typhon_recorder::page::PageWriter;
    /// let mut w = PageWriter::new(4096).unwrap();
    /// w.try_push(5, &[1; 12]).unwrap();
    /// w.try_push(1 << 30, &[1; 12]).unwrap(); // needs a time extend
    /// assert_eq!(w.records(), 2);
    /// ```
    pub fn records(&self) -> u32 {
        self.records
    }

    /// Record bytes on the current page so far, time extends included: the commit size the page
    /// will get.
    ///
    /// ```
    /// # use typhon_recorder::page::PageWriter;
    /// let mut w = PageWriter::new(4096).unwrap();
    /// w.try_push(5, &[1; 13]).unwrap(); // 4 + 16
    /// w.try_push(1 << 30, &[1; 200]).unwrap(); // 8 (extend) + 4 + 4 + 200
    /// assert_eq!(w.data_len(), 20 + 216);
    /// ```
    pub fn data_len(&self) -> usize {
        self.len
    }

    /// The running page time: the latest timestamp pushed so far. It never goes back, also across
    /// pages: a page whose first record is earlier than the previous page's running time starts
    /// at that running time instead (the record keeps its own timestamp inside).
    ///
    /// ```
    /// # use typhon_recorder::page::PageWriter;
    /// let mut w = PageWriter::new(4096).unwrap();
    /// w.try_push(500, &[1; 12]).unwrap();
    /// w.try_push(400, &[1; 12]).unwrap(); // earlier: written with delta 0
    /// assert_eq!(w.last_ts(), 500);
    /// ```
    pub fn last_ts(&self) -> u64 {
        self.last_ts
    }

    /// Mark this (empty) page as following a gap of `count` lost records: the page gets
    /// `RB_MISSED_EVENTS | RB_MISSED_STORED` and the count is stored as a u64 after the records,
    /// which reserves 8 bytes of the page.
    ///
    /// Calls add up. The stored count is clamped to `i32::MAX` because `kbuffer_missed_events()`
    /// returns a C `int`; the part of `count` that did not fit is returned, for the caller to carry
    /// to the next page. Errors with [`PageError::NotEmpty`] if the page already has records.
    ///
    /// A page with a count should also get a record: a page with no record shows its count to
    /// `kbuffer_missed_events()` but not to `trace-cmd report`.
    ///
    /// ```
    /// # use typhon_recorder::page::{PageWriter, PageError};
    /// let mut w = PageWriter::new(4096).unwrap();
    /// assert_eq!(w.set_missed(17), Ok(0));
    /// assert_eq!(w.missed(), 17);
    /// assert_eq!(w.set_missed(u64::from(u32::MAX)), Ok(u64::from(u32::MAX) + 17 - i32::MAX as u64));
    /// assert_eq!(w.missed(), i32::MAX as u64);
    /// w.try_push(1, &[1; 12]).unwrap();
    /// assert_eq!(w.set_missed(1), Err(PageError::NotEmpty));
    /// ```
    pub fn set_missed(&mut self, count: u64) -> Result<u64, PageError> {
        if self.records != 0 {
            return Err(PageError::NotEmpty);
        }
        let total = self.missed.saturating_add(count);
        let stored = total.min(MAX_STORED_MISSED);
        self.missed = stored;
        self.cap = self.page_size() - PAGE_HEADER_SIZE - if stored != 0 { 8 } else { 0 };
        Ok(total - stored)
    }

    /// The lost-record count the current page will carry (0 if none).
    ///
    /// ```
    /// # use typhon_recorder::page::PageWriter;
    /// let mut w = PageWriter::new(4096).unwrap();
    /// assert_eq!(w.missed(), 0);
    /// w.set_missed(3).unwrap();
    /// assert_eq!(w.missed(), 3);
    /// ```
    pub fn missed(&self) -> u64 {
        self.missed
    }

    /// Append one data record (a whole Typhon record) at time `ts_ns`.
    ///
    /// - The first record of a page sets the page timestamp (`max(ts_ns, last_ts())`) and gets
    ///   delta 0.
    /// - If `ts_ns` is earlier than the running page time, delta 0 is used (page time never goes
    ///   backwards; the record keeps its own timestamp inside).
    /// - A delta of 2^27 or more is written as a time extend followed by the record with delta 0.
    ///   A gap too large even for an extend (2^59 ns, 18 years) ends the page ([`PushError::Full`]).
    ///
    /// Returns the payload bytes as written in the page (exactly `payload.len()` bytes, the zero
    /// padding excluded) so the caller can patch fields in place. Returns
    /// [`PushError::Full`] when the record does not fit in what is left of the page (finish the
    /// page and push it again on the next one), or [`PushError::TooLarge`] when it could never fit
    /// (`payload.len() > max_record_size(page_size)`).
    ///
    /// A page with a missed count has 8 bytes fewer for records. A record that fits an empty
    /// page but not beside the count gets [`PushError::Full`] on the empty page: the count must
    /// stay in front of the records that followed the gap, so the caller first pushes a smaller
    /// record (the flusher writes a ThreadInfo) and puts the big record on the next page.
    ///
    /// ```
    /// # use typhon_recorder::page::{PageWriter, PushError};
    /// let mut w = PageWriter::new(4096).unwrap();
    /// let p = w.try_push(7, &[0xAA; 10]).unwrap();
    /// p[0] = 0xBB; // patch in place
    /// assert_eq!(w.try_push(8, &[0; 4073]), Err(PushError::TooLarge));
    /// assert_eq!(w.try_push(8, &[0; 4072]), Err(PushError::Full));
    /// let page = w.finish();
    /// assert_eq!(&page[20..32], &[0xBB, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0, 0]);
    /// ```
    #[inline(always)]
    pub fn try_push(&mut self, ts_ns: u64, payload: &[u8]) -> Result<&mut [u8], PushError> {
        // The common case, kept short: a page that has records, a small non-empty payload,
        // a time that moves forward by less than 2^27 ns (no time extend) and room. Everything
        // else (first record, empty payload, long form, time extend or going back, full) takes
        // the general path below, which writes the same bytes for the cases both handle.
        let n = payload.len();
        let padded = (n + 3) & !3;
        let need = padded + 4;
        let delta = ts_ns.wrapping_sub(self.last_ts);
        if self.records != 0
            && n != 0
            && padded <= MAX_SMALL_DATA
            && delta <= TS_MASK
            && self.len + need <= self.cap
        {
            let base = PAGE_HEADER_SIZE + self.len;
            let rec = &mut self.buf[base..base + need];
            let word = (padded / 4) as u32 | (delta as u32) << 5;
            rec[..4].copy_from_slice(&word.to_le_bytes());
            rec[need - 4..].copy_from_slice(&[0; 4]);
            let data = &mut rec[4..4 + n];
            copy_small(data, payload);
            self.last_ts = ts_ns;
            self.records += 1;
            self.len += need;
            return Ok(&mut self.buf[base + 4..base + 4 + n]);
        }
        self.try_push_general(ts_ns, payload)
    }

    #[inline(never)]
    fn try_push_general(&mut self, ts_ns: u64, payload: &[u8]) -> Result<&mut [u8], PushError> {
        let n = payload.len();
        let page_data = self.buf.len() - PAGE_HEADER_SIZE;
        if n > page_data - 8 {
            return Err(PushError::TooLarge);
        }
        let padded = if n == 0 { 4 } else { (n + 3) & !3 };
        let long_form = padded > MAX_SMALL_DATA;
        let rec_len = padded + if long_form { 8 } else { 4 };

        let (delta, extend) = if self.records == 0 {
            (0, false)
        } else {
            let d = ts_ns.saturating_sub(self.last_ts);
            if d > MAX_EXTEND_DELTA {
                return Err(PushError::Full);
            }
            (d, d > TS_MASK)
        };
        let need = rec_len + if extend { 8 } else { 0 };
        if self.len + need > self.cap {
            // On an empty page this means the record fits a page but not beside the reserved
            // missed count. The count must stay right before the records that followed the gap,
            // so the caller puts it on a page of its own with a smaller record first (the
            // flusher uses a ThreadInfo record) and pushes this record on the next page.
            return Err(PushError::Full);
        }

        let base = PAGE_HEADER_SIZE + self.len;
        // One bounds check for the whole record; the writes below index inside `rec`.
        let rec = &mut self.buf[base..base + need];
        let mut at = 0;
        let rec_delta = if extend {
            let lo = TYPE_TIME_EXTEND | (((delta & TS_MASK) as u32) << 5);
            let hi = (delta >> TS_SHIFT) as u32;
            rec[0..4].copy_from_slice(&lo.to_le_bytes());
            rec[4..8].copy_from_slice(&hi.to_le_bytes());
            at = 8;
            0
        } else {
            delta as u32
        };
        if long_form {
            rec[at..at + 4].copy_from_slice(&(rec_delta << 5).to_le_bytes());
            rec[at + 4..at + 8].copy_from_slice(&((padded + 4) as u32).to_le_bytes());
            at += 8;
        } else {
            let word = (padded / 4) as u32 | rec_delta << 5;
            rec[at..at + 4].copy_from_slice(&word.to_le_bytes());
            at += 4;
        }
        // The padding may hold stale bytes of an earlier page: zero the last word (it covers the
        // at most 3 padding bytes, or the 4 bytes of an empty payload), then copy the payload.
        rec[need - 4..need].copy_from_slice(&[0; 4]);
        copy_small(&mut rec[at..at + n], payload);
        let at = base + at;

        if self.records == 0 {
            // The page time continues the previous page's: it never goes back.
            self.page_ts = ts_ns.max(self.last_ts);
            self.last_ts = self.page_ts;
        } else if ts_ns > self.last_ts {
            self.last_ts = ts_ns;
        }
        self.records += 1;
        self.len += need;
        Ok(&mut self.buf[at..at + n])
    }

    /// Complete the page: writes the page timestamp and the commit word (size, plus the missed
    /// flags and the stored count if [`set_missed`](Self::set_missed) was used), zeroes everything
    /// after the data, returns the whole `page_size` bytes and resets the writer for the next page.
    ///
    /// An empty page finishes as all zeros (or with only its missed count). The running time
    /// ([`last_ts`](Self::last_ts)) carries over to the next page.
    ///
    /// ```
    /// # use typhon_recorder::page::*;
    /// let mut w = PageWriter::new(4096).unwrap();
    /// w.set_missed(5).unwrap();
    /// w.try_push(100, &[9; 8]).unwrap();
    /// let page = w.finish();
    /// let commit = u64::from_le_bytes(page[8..16].try_into().unwrap());
    /// assert_eq!(commit, 12 | RB_MISSED_EVENTS | RB_MISSED_STORED);
    /// assert_eq!(u64::from_le_bytes(page[28..36].try_into().unwrap()), 5);
    /// assert!(w.is_empty() && w.missed() == 0);
    /// ```
    pub fn finish(&mut self) -> &[u8] {
        let mut end = PAGE_HEADER_SIZE + self.len;
        let mut commit = self.len as u64;
        if self.missed != 0 {
            commit |= RB_MISSED_EVENTS | RB_MISSED_STORED;
            self.buf[end..end + 8].copy_from_slice(&self.missed.to_le_bytes());
            end += 8;
        }
        let page_ts = if self.records == 0 { 0 } else { self.page_ts };
        self.buf[0..8].copy_from_slice(&page_ts.to_le_bytes());
        self.buf[8..16].copy_from_slice(&commit.to_le_bytes());
        if self.dirty_end > end {
            self.buf[end..self.dirty_end].fill(0);
        }
        self.dirty_end = end;

        self.len = 0;
        self.records = 0;
        self.page_ts = 0;
        self.missed = 0;
        self.cap = self.buf.len() - PAGE_HEADER_SIZE;
        &self.buf[..]
    }
}

/// The records of one page as this writer lays them out, read back: what [`crate::sink::recover`]
/// recovery walks to count a leftover page's records and missed count. It follows the format
/// above strictly (only the record types this writer makes), so a page that any rule above does
/// not hold for is damaged. (The full reader, with libtraceevent's semantics for pages of any
/// writer, is `typhon_trace::kbuffer`.)
///
/// ```
/// use typhon_recorder::page::{PageRecords, PageWriter};
/// let mut w = PageWriter::new(4096).unwrap();
/// w.set_missed(3).unwrap();
/// w.try_push(1_000, &[1; 6]).unwrap();
/// w.try_push(1_000 + (1 << 30), &[2; 200]).unwrap(); // a time extend, then the long form
/// let page = w.finish().to_vec();
/// let mut r = PageRecords::new(&page).unwrap();
/// assert_eq!(r.missed(), 3);
/// assert_eq!(r.next(), Some(Ok((1_000, &[1, 1, 1, 1, 1, 1, 0, 0][..]))));
/// let (ts, data) = r.next().unwrap().unwrap();
/// assert_eq!((ts, data.len()), (1_000 + (1 << 30), 200));
/// assert_eq!(r.next(), None);
/// ```
#[derive(Debug, Clone)]
pub struct PageRecords<'a> {
    data: &'a [u8],
    pos: usize,
    ts: u64,
    missed: u64,
    /// The commit (with its stored count) reaches past the page: the end of the page is damage.
    overrun: bool,
    failed: bool,
}

/// Why [`PageRecords`] stopped: the page breaks a rule of the format at `offset` (from the
/// start of the page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DamagedPage {
    /// Where the damage starts, in bytes from the start of the page.
    pub offset: usize,
}

impl fmt::Display for DamagedPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "damaged page: bad record at byte {}", self.offset)
    }
}

impl std::error::Error for DamagedPage {}

impl<'a> PageRecords<'a> {
    /// Reads a page's header: an error only for a buffer shorter than the header. A commit
    /// past the end of the page is damage found where the page ends: the records before it
    /// still count, as kbuffer reads them.
    ///
    /// ```
    /// use typhon_recorder::page::PageRecords;
    /// let mut page = vec![0u8; 4096];
    /// page[8..16].copy_from_slice(&5000u64.to_le_bytes());
    /// let mut r = PageRecords::new(&page).unwrap();
    /// assert!(r.next().unwrap().is_err()); // a zero word: no record this writer made
    /// assert!(PageRecords::new(&page[..8]).is_err());
    /// ```
    pub fn new(page: &'a [u8]) -> Result<Self, DamagedPage> {
        if page.len() < PAGE_HEADER_SIZE {
            return Err(DamagedPage { offset: 0 });
        }
        let word = |at: usize| u64::from_le_bytes(page[at..at + 8].try_into().unwrap());
        let commit = word(8);
        let end = PAGE_HEADER_SIZE.saturating_add((commit & COMMIT_MASK) as usize);
        let stored = commit & RB_MISSED_STORED != 0;
        let fits = end.saturating_add(if stored { 8 } else { 0 }) <= page.len();
        Ok(Self {
            data: &page[..end.min(page.len())],
            pos: PAGE_HEADER_SIZE,
            ts: word(0),
            missed: if stored && fits { word(end) } else { 0 },
            overrun: !fits,
            failed: false,
        })
    }

    /// The count of records lost before this page's first record (0 if none is stored).
    pub fn missed(&self) -> u64 {
        self.missed
    }

    fn word(&self, at: usize) -> Option<u32> {
        let b = self.data.get(at..at + 4)?;
        Some(u32::from_le_bytes(b.try_into().unwrap()))
    }

    fn step(&mut self) -> Option<Result<(u64, &'a [u8]), DamagedPage>> {
        let damaged = |offset| Some(Err(DamagedPage { offset }));
        loop {
            if self.pos == self.data.len() {
                return if self.overrun {
                    damaged(self.pos)
                } else {
                    None
                };
            }
            let at = self.pos;
            let Some(hdr) = self.word(at) else {
                return damaged(at);
            };
            let (type_len, delta) = (hdr & 0x1f, u64::from(hdr >> 5));
            let (payload, len) = match type_len {
                1..=28 => (at + 4, 4 * type_len as usize),
                0 => match self.word(at + 4) {
                    // The length word counts itself; a zero word is no record this writer made.
                    Some(n) if n >= 8 => (at + 8, n as usize - 4),
                    _ => return damaged(at),
                },
                TYPE_TIME_EXTEND => {
                    let Some(high) = self.word(at + 4) else {
                        return damaged(at);
                    };
                    self.ts = self.ts.wrapping_add(delta | u64::from(high) << TS_SHIFT);
                    self.pos = at + 8;
                    continue;
                }
                _ => return damaged(at),
            };
            let Some(bytes) = self.data.get(payload..payload + len) else {
                return damaged(at);
            };
            self.ts = self.ts.wrapping_add(delta);
            self.pos = payload + len;
            return Some(Ok((self.ts, bytes)));
        }
    }
}

impl<'a> Iterator for PageRecords<'a> {
    /// A record's page time and its padded payload, or where the page is damaged (after which
    /// the iterator ends).
    type Item = Result<(u64, &'a [u8]), DamagedPage>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = self.step();
        self.failed = matches!(r, Some(Err(_)));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(p: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(p[at..at + 4].try_into().unwrap())
    }
    fn u64_at(p: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(p[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn first_record_has_delta_zero_and_sets_page_time() {
        let mut w = PageWriter::new(4096).unwrap();
        w.try_push(123_456_789, &[0x11; 12]).unwrap();
        let p = w.finish();
        assert_eq!(u64_at(p, 0), 123_456_789);
        assert_eq!(u64_at(p, 8), 16);
        assert_eq!(u32_at(p, 16), 3); // type_len 3, delta 0
        assert_eq!(&p[20..32], &[0x11; 12]);
        assert!(p[32..].iter().all(|&b| b == 0));
    }

    #[test]
    fn short_and_long_forms_at_the_112_byte_boundary() {
        let mut w = PageWriter::new(4096).unwrap();
        w.try_push(10, &[1; 112]).unwrap(); // type 28
        w.try_push(11, &[2; 113]).unwrap(); // padded 116 > 112: type 0, len word 120
        w.try_push(13, &[3; 109]).unwrap(); // padded 112: type 28
        w.try_push(13, &[]).unwrap(); // empty payload -> 4 zero bytes, type 1
        let p = w.finish().to_vec();
        let mut at = 16;
        assert_eq!(u32_at(&p, at), 28);
        assert_eq!(&p[at + 4..at + 116], &[1; 112]);
        at += 116;
        assert_eq!(u32_at(&p, at), 1 << 5); // type 0, delta 1
        assert_eq!(u32_at(&p, at + 4), 120);
        assert_eq!(&p[at + 8..at + 8 + 113], &[2; 113]);
        assert_eq!(&p[at + 8 + 113..at + 8 + 116], &[0; 3]);
        at += 124;
        assert_eq!(u32_at(&p, at), 28 | 2 << 5);
        assert_eq!(&p[at + 4..at + 113], &[3; 109]);
        assert_eq!(&p[at + 113..at + 116], &[0; 3]);
        at += 116;
        assert_eq!(u32_at(&p, at), 1);
        assert_eq!(u32_at(&p, at + 4), 0);
        at += 8;
        assert_eq!(u64_at(&p, 8), (at - 16) as u64);
        assert!(p[at..].iter().all(|&b| b == 0));
    }

    #[test]
    fn time_extend_for_large_gaps() {
        let mut w = PageWriter::new(4096).unwrap();
        let t0 = 1_000_000;
        let gap = (5u64 << 27) + 7;
        w.try_push(t0, &[1; 4]).unwrap();
        w.try_push(t0 + (1 << 27) - 1, &[2; 4]).unwrap(); // largest plain delta
        w.try_push(t0 + (1 << 27) - 1 + gap, &[3; 4]).unwrap();
        w.try_push(t0 + (1 << 27) - 1 + gap + (1 << 27), &[4; 4])
            .unwrap(); // exactly 2^27
        assert_eq!(w.records(), 4);
        let p = w.finish().to_vec();
        assert_eq!(u32_at(&p, 16), 1);
        assert_eq!(u32_at(&p, 24), 1 | ((1 << 27) - 1) << 5);
        assert_eq!(u32_at(&p, 32), 30 | 7 << 5);
        assert_eq!(u32_at(&p, 36), 5);
        assert_eq!(u32_at(&p, 40), 1); // delta 0 after the extend
        assert_eq!(u32_at(&p, 48), 30);
        assert_eq!(u32_at(&p, 52), 1);
        assert_eq!(u32_at(&p, 56), 1);
        assert_eq!(u64_at(&p, 8), 48);
    }

    #[test]
    fn gap_beyond_an_extend_ends_the_page() {
        let mut w = PageWriter::new(4096).unwrap();
        w.try_push(0, &[1; 4]).unwrap();
        w.try_push(MAX_EXTEND_DELTA, &[1; 4]).unwrap();
        assert_eq!(
            w.try_push(2 * MAX_EXTEND_DELTA + 1, &[1; 4]),
            Err(PushError::Full)
        );
        w.finish();
        w.try_push(2 * MAX_EXTEND_DELTA + 1, &[1; 4]).unwrap();
    }

    #[test]
    fn backwards_time_gets_delta_zero_and_page_time_never_goes_back() {
        let mut w = PageWriter::new(4096).unwrap();
        w.try_push(1000, &[1; 4]).unwrap();
        w.try_push(900, &[2; 4]).unwrap();
        w.try_push(1003, &[3; 4]).unwrap();
        let p = w.finish().to_vec();
        assert_eq!(u32_at(&p, 24), 1);
        assert_eq!(u32_at(&p, 32), 1 | 3 << 5);
        w.try_push(500, &[4; 4]).unwrap(); // next page starts at the running time
        let p = w.finish();
        assert_eq!(u64_at(p, 0), 1003);
        assert_eq!(u32_at(p, 16), 1);
    }

    #[test]
    fn missed_count_stored_after_the_data() {
        let mut w = PageWriter::new(4096).unwrap();
        assert_eq!(w.set_missed(12345), Ok(0));
        w.try_push(50, &[7; 8]).unwrap();
        let p = w.finish();
        assert_eq!(u64_at(p, 8), 12 | RB_MISSED_EVENTS | RB_MISSED_STORED);
        assert_eq!(u64_at(p, 28), 12345);
        assert!(p[36..].iter().all(|&b| b == 0));
        assert_eq!(w.missed(), 0);
    }

    #[test]
    fn missed_count_reserves_room() {
        let mut w = PageWriter::new(4096).unwrap();
        w.set_missed(3).unwrap();
        w.try_push(0, &[1; 4000]).unwrap(); // 4008 bytes
        assert_eq!(w.try_push(0, &[1; 64]), Err(PushError::Full)); // 4076 > 4080 - 8
        w.try_push(0, &[1; 60]).unwrap(); // 4072: exactly room for the count
        let p = w.finish();
        assert_eq!(u64_at(p, 8) & COMMIT_MASK, 4072);
        assert_eq!(u64_at(p, 16 + 4072), 3);
    }

    #[test]
    fn a_record_that_fits_only_without_the_count_is_full_on_an_empty_page() {
        let mut w = PageWriter::new(4096).unwrap();
        w.set_missed(9).unwrap();
        assert_eq!(w.try_push(1, &[1; 4072]), Err(PushError::Full));
        w.try_push(1, &[1; 4]).unwrap();
        let p = w.finish();
        assert_eq!(u64_at(p, 8), 8 | RB_MISSED_EVENTS | RB_MISSED_STORED);
        assert_eq!(u64_at(p, 24), 9);
        assert_eq!(w.missed(), 0);
        w.try_push(2, &[1; 4072]).unwrap();
        assert_eq!(u64_at(w.finish(), 8), 4080);
    }

    #[test]
    fn missed_count_clamped_and_rejected_on_non_empty_page() {
        let mut w = PageWriter::new(4096).unwrap();
        assert_eq!(w.set_missed(u64::MAX), Ok(u64::MAX - i32::MAX as u64));
        assert_eq!(w.missed(), i32::MAX as u64);
        w.try_push(0, &[1; 4]).unwrap();
        assert_eq!(w.set_missed(1), Err(PageError::NotEmpty));
    }

    #[test]
    fn full_and_too_large() {
        let mut w = PageWriter::new(4096).unwrap();
        assert_eq!(w.try_push(0, &[0; 4073]), Err(PushError::TooLarge));
        w.try_push(0, &[0; 4072]).unwrap();
        assert_eq!(w.data_len(), 4080);
        assert_eq!(w.try_push(0, &[0; 1]), Err(PushError::Full));
        let p = w.finish();
        assert_eq!(u64_at(p, 8), 4080);
        assert_eq!(u32_at(p, 16), 0);
        assert_eq!(u32_at(p, 20), 4076);
        let mut w = PageWriter::new(8192).unwrap();
        w.try_push(0, &[0; 8168]).unwrap();
        assert_eq!(w.try_push(0, &[0; 8169]), Err(PushError::TooLarge));
    }

    #[test]
    fn no_stale_bytes_from_earlier_pages() {
        let mut w = PageWriter::new(4096).unwrap();
        w.set_missed(0xFFFF_FFFF).unwrap();
        for i in 0..30 {
            w.try_push(i, &[0xEE; 101]).unwrap();
        }
        w.finish();
        w.try_push(5, &[0xAB; 5]).unwrap();
        let p = w.finish();
        assert_eq!(&p[20..28], &[0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0, 0, 0]);
        assert!(p[28..].iter().all(|&b| b == 0));
        let p = w.finish(); // empty page
        assert!(p.iter().all(|&b| b == 0));
    }
}
