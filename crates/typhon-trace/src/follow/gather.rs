//! What one poll gathers: each page's records, checked, with the slot's position (pages read,
//! damaged or skipped) kept across polls, and the newest `max_records` of them kept when more
//! are new.

use crate::defs::Definitions;
use crate::kbuffer::{Endian, LongSize};
use crate::tracedat::{CpuRecords, OwnedRecord};
use std::collections::{BTreeMap, VecDeque};
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::codec::TraceEventKind as K;

/// One page's records, kept until the poll ends (or skipped when the poll has too many).
struct PageRecs {
    first_ts: u64,
    seq: u64,
    recs: Vec<OwnedRecord>,
}

#[derive(Default)]
pub(super) struct Gather {
    max: usize,
    pages: BTreeMap<u8, VecDeque<PageRecs>>,
    kept: usize,
    seq: u64,
    positions: BTreeMap<u8, u64>,
    defs: Definitions,
    names: crate::span_names::SpanNames,
    pub(super) threads: BTreeMap<u32, String>,
    pub(super) skipped_pages: u64,
    pub(super) skipped_records: u64,
    /// Pages found damaged (not a page the recorder made; a chunk that does not decompress).
    pub(super) damaged_pages: u64,
    /// Records the pages say were lost before them (the rings' drops).
    pub(super) missed: u64,
    /// The recording's own counters, as its parts or its file's metadata give them.
    pub(super) recording: BTreeMap<String, u64>,
    /// The losses of the segments read before the current one (a rotating recording).
    earlier: BTreeMap<String, u64>,
}

impl Gather {
    pub(super) fn begin(&mut self, max: usize) {
        self.max = max;
    }

    /// Pages of each slot read so far (read, damaged or skipped): where each slot goes on.
    pub(super) fn positions(&self) -> &BTreeMap<u8, u64> {
        &self.positions
    }

    pub(super) fn position(&self, slot: u8) -> u64 {
        self.positions.get(&slot).copied().unwrap_or(0)
    }

    /// `pages` pages of `slot` that cannot be read: counted damaged, the slot goes on after.
    pub(super) fn damaged(&mut self, slot: u8, pages: u64) {
        self.damaged_pages += pages;
        *self.positions.entry(slot).or_default() += pages;
    }

    /// The next page of `slot` (its records' `at` are `at` + their offset in the page): checked
    /// as `recover` checks it, its records kept, its names and definitions learnt.
    pub(super) fn page(&mut self, slot: u8, at: u64, page: &[u8]) {
        *self.positions.entry(slot).or_default() += 1;
        match typhon_recorder::sink::page_fault(page) {
            // The records before the overrun are read; the reader stops at the damage.
            None | Some("data past the page's end") => {}
            Some(_) => {
                self.damaged_pages += 1;
                return;
            }
        }
        let mut recs = Vec::new();
        let base = page.as_ptr() as usize;
        let mut damaged = false;
        let it = CpuRecords::new(
            u32::from(slot),
            page,
            page.len(),
            at,
            LongSize::Eight,
            Endian::Little,
        );
        for r in it {
            match r {
                Ok(r) => {
                    if let Some(m) = r.missed_before.filter(|&m| m > 0) {
                        self.missed += m as u64;
                    }
                    let kind = r.data.get(2).copied();
                    if kind == Some(K::THREAD_INFO.0) {
                        if let Ok((_, Record::ThreadInfo { name, .. })) = records::decode(r.data) {
                            self.threads.insert(u32::from(slot), name.to_owned());
                        }
                    } else if kind == Some(K::TRACING_CALLSITE.0)
                        || kind == Some(K::NAME_DEFINITION.0)
                    {
                        // Callsites and a slot's static names (SPEC §15), learnt as read.
                        self.defs.learn(r.data);
                    }
                    recs.push(OwnedRecord {
                        cpu: r.cpu,
                        ts: r.ts,
                        at: at + (r.data.as_ptr() as usize - base) as u64,
                        data: r.data.to_vec(),
                        missed_before: r.missed_before,
                    });
                }
                Err(_) => damaged = true,
            }
        }
        self.damaged_pages += u64::from(damaged);
        if recs.is_empty() {
            return;
        }
        self.kept += recs.len();
        self.seq += 1;
        self.pages.entry(slot).or_default().push_back(PageRecs {
            first_ts: recs[0].ts,
            seq: self.seq,
            recs,
        });
        // Too many: the oldest pages go, whole, and are counted.
        while self.kept > self.max {
            let Some(oldest) = self
                .pages
                .iter()
                .filter_map(|(&s, q)| q.front().map(|p| ((p.first_ts, p.seq), s)))
                .min()
                .map(|x| x.1)
            else {
                break;
            };
            let Some(p) = self.pages.get_mut(&oldest).and_then(|q| q.pop_front()) else {
                break;
            };
            self.kept -= p.recs.len();
            self.skipped_pages += 1;
            self.skipped_records += p.recs.len() as u64;
        }
    }

    /// The current segment of a rotating recording is read: the next one is read as its own
    /// recording (its pages from the first, its definitions and counters its own). The records
    /// kept for this poll are resolved now, with this segment's definitions; its losses are
    /// added to the earlier segments'.
    pub(super) fn end_segment(&mut self) {
        for q in self.pages.values_mut() {
            for r in q.iter_mut().flat_map(|p| p.recs.iter_mut()) {
                resolve(&mut self.defs, &mut self.names, r);
            }
        }
        let mine = self.segment_losses();
        for (k, v) in mine {
            *self.earlier.entry(k).or_default() += v;
        }
        self.positions.clear();
        self.defs = Definitions::default();
        self.names = Default::default();
        self.damaged_pages = 0;
        self.missed = 0;
        self.recording.clear();
    }

    /// The poll's records: each slot's in order, merged by time; definitions resolved as
    /// [`crate::tracedat::TraceFile::stream_records`] resolves them.
    pub(super) fn take(&mut self) -> Vec<OwnedRecord> {
        let n = self.kept;
        self.kept = 0;
        // Each slot's records are moved out of its pages as the merge takes them: no second
        // copy of the batch.
        let mut per: Vec<_> = std::mem::take(&mut self.pages)
            .into_values()
            .map(|q| q.into_iter().flat_map(|p| p.recs).peekable())
            .collect();
        let mut out = Vec::with_capacity(n);
        while let Some(i) = (0..per.len())
            .filter_map(|i| per[i].peek().map(|r| (r.ts, i)))
            .min()
            .map(|x| x.1)
        {
            let Some(mut r) = per[i].next() else {
                break;
            };
            resolve(&mut self.defs, &mut self.names, &mut r);
            out.push(r);
        }
        out
    }

    /// The current recording's (segment's) losses and those the follower found in its pages.
    fn segment_losses(&self) -> BTreeMap<String, u64> {
        let mut m = self.recording.clone();
        m.entry("missed".into()).or_insert(self.missed);
        let d = m.entry("damaged_pages".into()).or_insert(0);
        *d = (*d).max(self.damaged_pages);
        m
    }

    /// The recording's losses and those the follower found in its pages (a rotating
    /// recording's: those of every segment read so far).
    pub(super) fn losses(&self) -> BTreeMap<String, u64> {
        let mut m = self.segment_losses();
        for (k, v) in &self.earlier {
            *m.entry(k.clone()).or_default() += v;
        }
        m
    }
}

/// A record as the reader shows it ([`crate::defs::resolve_use`]): static names and callsites
/// by id resolved, nameless `tracing` entries named (once: the resolved record is of another
/// kind or has its name).
fn resolve(defs: &mut Definitions, names: &mut crate::span_names::SpanNames, r: &mut OwnedRecord) {
    if let Some(d) = crate::defs::resolve_use(defs, names, &r.data) {
        r.data = d;
    }
}
