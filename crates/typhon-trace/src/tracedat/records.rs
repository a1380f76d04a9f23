//! Reading records: [`Record`], [`CpuRecords`] (one CPU's pages, walked with the
//! [`crate::kbuffer`] port) and [`MergedRecords`] (every CPU's, merged in time order).
//!
//! Damage is per page: an iterator yields one [`TraceDatError::DamagedPage`] for a page and
//! goes on with the next, so a damaged file is read as far as it can be, and the damage is
//! counted where it is.

use super::error::{Result, TraceDatError};
use crate::kbuffer::{Endian, KBuffer, LongSize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One record read from a file.
///
/// ```
/// use typhon_trace::tracedat::Record;
/// let r = Record { cpu: 1, ts: 5, data: &[1, 2, 3, 4], missed_before: None };
/// assert_eq!(r.data.len(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// CPU number (for Typhon files: the thread slot).
    pub cpu: u32,
    /// Timestamp in the file's clock units (ns for Typhon files).
    pub ts: u64,
    /// The payload as kbuffer returns it: padded to 4 bytes.
    pub data: &'a [u8],
    /// Events lost right before this record, as libtraceevent's `kbuffer_missed_events`
    /// reports them for the first record of a page: `Some(n)` counted, `Some(-1)` lost but
    /// uncounted, `None` nothing lost.
    pub missed_before: Option<i64>,
}

/// Iterator over one CPU's records; see
/// [`TraceFile::cpu_records`](super::TraceFile::cpu_records). Pages are walked with the
/// [`KBuffer`] port, so timestamps and missed counts are what libtraceevent (and therefore
/// `trace-cmd report`) sees.
///
/// Where kbuffer would hand out bogus records (zero words inside the commit) or stop on a page
/// that runs past its end, this iterator yields one [`TraceDatError::DamagedPage`] in place of
/// the page's remaining records and goes on with the next page. (`trace-cmd report` 3.1.6
/// exits 0 either way: it prints bogus records for zero words, and after a commit past the
/// page's end it dropped the rest of that CPU's data.)
///
/// ```
/// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
/// # let mut out = std::io::Cursor::new(Vec::new());
/// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
/// let f = TraceFile::parse(out.into_inner()).unwrap();
/// let mut it = f.cpu_records(0);
/// assert!(it.next().is_none());
/// ```
#[derive(Debug)]
pub struct CpuRecords<'a> {
    cpu: u32,
    pages: std::slice::Chunks<'a, u8>,
    page_size: usize,
    /// File offset of the CPU data and of the loaded page.
    base: u64,
    page_at: u64,
    kb: KBuffer<'a>,
    /// A page is loaded and `kb` is on (or before, if `fresh`) a record.
    loaded: bool,
    /// The next call reads the current record instead of advancing.
    fresh: bool,
    /// Records handed out from the loaded page.
    on_page: u32,
    done: bool,
}

impl<'a> CpuRecords<'a> {
    /// A CPU's records from its page data `bytes`, found at file offset `base`, in pages of
    /// `page_size` bytes whose commit word is `long` wide.
    pub(crate) fn new(
        cpu: u32,
        bytes: &'a [u8],
        page_size: usize,
        base: u64,
        long: LongSize,
        endian: Endian,
    ) -> Self {
        CpuRecords {
            cpu,
            pages: bytes.chunks(page_size),
            page_size,
            base,
            page_at: 0,
            kb: KBuffer::new(long, endian),
            loaded: false,
            fresh: false,
            on_page: 0,
            done: false,
        }
    }

    /// The loaded page is damaged at `at`: its other records are skipped and the next call
    /// goes on with the next page.
    fn damaged(&mut self, what: String, at: u64) -> Option<Result<Record<'a>>> {
        self.loaded = false;
        Some(Err(TraceDatError::DamagedPage {
            cpu: self.cpu,
            page_at: self.page_at,
            at,
            records_before: std::mem::take(&mut self.on_page),
            pages: 1,
            what,
        }))
    }
}

impl<'a> Iterator for CpuRecords<'a> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            if self.loaded {
                let ev = if std::mem::take(&mut self.fresh) {
                    self.kb.read_event()
                } else {
                    self.kb.next_event()
                };
                match ev {
                    Some(ev) => {
                        if self.kb.event_size() <= 0 {
                            let n = self.kb.event_size();
                            // The record's header, where the damage shows.
                            let at = self.page_at + self.kb.curr_offset().max(0) as u64;
                            return self
                                .damaged(format!("record of size {n} (zero bytes in commit)"), at);
                        }
                        self.on_page += 1;
                        let missed = self.kb.missed_events();
                        return Some(Ok(Record {
                            cpu: self.cpu,
                            ts: ev.timestamp,
                            data: ev.data,
                            missed_before: (missed != 0).then_some(i64::from(missed)),
                        }));
                    }
                    None => {
                        if let Some(e) = self.kb.error() {
                            let at = self.page_at + e.offset().unwrap_or(0) as u64;
                            return self.damaged(e.to_string(), at);
                        }
                        self.loaded = false;
                    }
                }
            }
            let Some(page) = self.pages.next() else {
                self.done = true;
                return None;
            };
            self.page_at = self.base;
            self.base = self.base.saturating_add(page.len() as u64);
            self.on_page = 0;
            if page.len() != self.page_size {
                // Only the last chunk can be short, so this is also the end.
                self.done = true;
                return self.damaged("partial page at the end of its data".into(), self.page_at);
            }
            if let Err(e) = self.kb.load_subbuffer(page) {
                let at = self.page_at + e.offset().unwrap_or(0) as u64;
                return self.damaged(e.to_string(), at);
            }
            self.loaded = true;
            self.fresh = true;
        }
    }
}

/// An item with a time the merge orders by.
pub trait Timed {
    /// Its time.
    fn time(&self) -> u64;
}

impl Timed for Record<'_> {
    fn time(&self) -> u64 {
        self.ts
    }
}

impl Timed for super::stream::OwnedRecord {
    fn time(&self) -> u64 {
        self.ts
    }
}

/// Iterator over all CPUs' records in time order; see
/// [`TraceFile::records`](super::TraceFile::records) and
/// [`TraceFile::stream_records`](super::TraceFile::stream_records).
///
/// A damaged page is yielded as one [`TraceDatError::DamagedPage`] at about the place of its
/// records, and every CPU goes on, the damaged one with its next page.
///
/// ```
/// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
/// # let mut out = std::io::Cursor::new(Vec::new());
/// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
/// let f = TraceFile::parse(out.into_inner()).unwrap();
/// assert_eq!(f.records().count(), 0);
/// ```
#[derive(Debug)]
pub struct Merge<I: Iterator> {
    its: Vec<I>,
    heads: Vec<Option<I::Item>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// A damaged page read by `advance`, handed out before anything else: at most one is ever
    /// held, since the CPU behind it is read again only after it is handed out.
    pending: Option<TraceDatError>,
    /// CPUs to read before the next record is chosen: all of them at first, then each one
    /// whose last item was an error.
    stalled: Vec<usize>,
}

/// The merge of the in-memory per-CPU iterators.
pub type MergedRecords<'a> = Merge<CpuRecords<'a>>;

impl<T: Timed, I: Iterator<Item = Result<T>>> Merge<I> {
    /// The merge of `its`, one iterator per CPU in CPU order (ties go to the lower index).
    pub(super) fn new(its: Vec<I>) -> Self {
        Merge {
            heads: its.iter().map(|_| None).collect(),
            stalled: (0..its.len()).rev().collect(),
            its,
            heap: BinaryHeap::new(),
            pending: None,
        }
    }

    /// Reads CPU `i`'s next item: a record becomes its head; a damaged page becomes `pending`
    /// (called only when none is), and the CPU is read again only after that error has been
    /// handed out, so a file of damaged pages costs no memory in proportion.
    fn advance(&mut self, i: usize) {
        match self.its[i].next() {
            Some(Ok(n)) => {
                self.heap.push(Reverse((n.time(), i)));
                self.heads[i] = Some(Ok(n));
            }
            Some(Err(e)) => {
                self.pending = Some(e);
                self.stalled.push(i);
            }
            None => {}
        }
    }
}

impl<T: Timed, I: Iterator<Item = Result<T>>> Iterator for Merge<I> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Self::Item> {
        // Ends: each pass hands out an error or reads a CPU that owes an item, and every read
        // consumes a record or a page of that CPU's finite data.
        loop {
            if let Some(e) = self.pending.take() {
                return Some(Err(e));
            }
            match self.stalled.pop() {
                Some(i) => self.advance(i),
                None => break,
            }
        }
        let Reverse((_, i)) = self.heap.pop()?;
        let r = self.heads[i].take()?;
        self.advance(i);
        Some(r)
    }
}
