//! The ticks a user selects, exported to a `.pftrace` by the export engine: their records go
//! into a small trace.dat in memory (pages written as the recorder writes them), which
//! [`typhon_trace::export::export_named`] reads like any file.

use std::collections::BTreeMap;
use typhon_recorder::page::{PageWriter, PushError};
use typhon_recorder::tracedat::{write_tracedat, FileMeta, SlotMeta, SlotPages};
use typhon_trace::export::{export_named, Format, TimelineStats};
use typhon_trace::tracedat::{OwnedRecord, TraceFile};

/// Large enough for the largest record (65 534 bytes) and its header.
const PAGE: usize = 128 * 1024;

/// The records (in time order per slot) as a Perfetto trace, and what went into it.
pub fn pftrace(
    records: &[OwnedRecord],
    threads: &BTreeMap<u32, String>,
) -> Result<(Vec<u8>, TimelineStats), String> {
    let mut by_slot: BTreeMap<u32, Vec<&OwnedRecord>> = BTreeMap::new();
    for r in records {
        by_slot.entry(r.cpu).or_default().push(r);
    }
    let mut pages: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    for (&slot, rs) in &mut by_slot {
        // Description records come first; each slot's records go in by time.
        rs.sort_by_key(|r| r.ts);
        let mut w = PageWriter::new(PAGE).map_err(|e| e.to_string())?;
        let out = pages.entry(slot).or_default();
        for r in rs.iter() {
            if let Some(m) = r.missed_before.filter(|&m| m > 0) {
                if !w.is_empty() {
                    out.extend_from_slice(w.finish());
                }
                w.set_missed(m as u64).map_err(|e| e.to_string())?;
            }
            match w.try_push(r.ts, &r.data) {
                Ok(_) => {}
                Err(PushError::Full) => {
                    out.extend_from_slice(w.finish());
                    w.try_push(r.ts, &r.data)
                        .map_err(|e| format!("a record of slot {slot}: {e}"))?;
                }
                Err(e) => return Err(format!("a record of slot {slot}: {e}")),
            }
        }
        if !w.is_empty() || w.missed() != 0 {
            out.extend_from_slice(w.finish());
        }
    }
    let mut meta = FileMeta::new(PAGE as u32);
    for &slot in pages.keys() {
        meta.slots.push(SlotMeta {
            slot: u8::try_from(slot).map_err(|_| format!("slot {slot} is out of range"))?,
            name: threads.get(&slot).cloned().unwrap_or_default(),
            ..SlotMeta::default()
        });
    }
    let mut slots: Vec<SlotPages<'_>> = pages
        .iter()
        .map(|(&s, p)| SlotPages::from_bytes(s as u8, p))
        .collect();
    let mut dat = std::io::Cursor::new(Vec::new());
    write_tracedat(&mut dat, &meta, &mut slots).map_err(|e| e.to_string())?;
    let file = TraceFile::parse(dat.into_inner()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let stats = export_named(&file, Format::Perfetto, "typhon-rec live", &mut out)
        .map_err(|e| e.to_string())?;
    Ok((out, stats))
}
