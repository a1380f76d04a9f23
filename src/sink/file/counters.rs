//! `OUT.parts/counters`: the session's counters that no page carries (threads without a slot,
//! filtered and refused writes, clamped times, records the sink lost), kept while recording so
//! that `recover` can put them in a killed recording's metadata.
//!
//! The file is written whole at its full size when the recording starts and afterwards only
//! overwritten in place, so a full disk cannot stop it (like `losses.json`). It holds two
//! halves of [`HALF`] bytes; each update goes to the half its sequence number picks, with
//! `pwrite` and no sync (a kill of the process leaves the page cache to the kernel): a kill in
//! the middle of an update tears at most that half, and the other still holds the previous
//! counts. Each half is a JSON object padded with spaces:
//! `{"seq":N,"no_slot":..,"filtered_no_slot":..,"slots":[[slot,filtered,refused,sink_lost,clamped],..],"chunks":[[slot,n],..]}`
//! listing only slots with a non-zero counter (256 slots of five u64 fit in a half). A compressed
//! recording's `chunks` are the chunks each slot has handed to the compressor: `recover` counts
//! those that neither the part file nor a pending file holds as missing (a part file cut short).

use super::paths::at;
use crate::sink::SessionSummary;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Bytes of one half of the counters file.
pub(super) const HALF: usize = 32 * 1024;

/// Counters of one slot that no page carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SlotCounts {
    pub(super) slot: u8,
    pub(super) filtered: u64,
    pub(super) refused: u64,
    pub(super) sink_lost: u64,
    pub(super) clamped: u64,
}

/// What a counters file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub(super) seq: u64,
    pub(super) no_slot: u64,
    pub(super) filtered_no_slot: u64,
    pub(super) slots: Vec<SlotCounts>,
    /// (slot, chunks handed to the compressor), compressed recordings only.
    pub(super) chunks: Vec<(u8, u64)>,
}

/// One half: the counters of `now` as JSON, padded with spaces to [`HALF`] bytes.
fn half_bytes(seq: u64, now: &SessionSummary, chunks: &[(u8, u64)]) -> Vec<u8> {
    let slots: Vec<[u64; 5]> = now
        .slots
        .iter()
        .filter(|s| s.filtered + s.refused + s.sink_lost + s.clamped > 0)
        .map(|s| {
            [
                u64::from(s.slot),
                s.filtered,
                s.refused,
                s.sink_lost,
                s.clamped,
            ]
        })
        .collect();
    let j = serde_json::json!({
        "seq": seq, "no_slot": now.no_slot, "filtered_no_slot": now.filtered_no_slot,
        "slots": slots, "chunks": chunks,
    })
    .to_string();
    let mut b = vec![b' '; HALF];
    // 256 entries of at most 5 × 20 digits and punctuation: well under a half.
    let n = j.len().min(HALF - 1);
    b[..n].copy_from_slice(&j.as_bytes()[..n]);
    b[HALF - 1] = b'\n';
    b
}

/// The counters file of a recording, open for updates in place.
pub(super) struct CountersFile {
    file: File,
    seq: u64,
    /// The last counters written, to write again with new chunk counts.
    last: SessionSummary,
    chunks: Vec<(u8, u64)>,
}

impl CountersFile {
    /// Writes a new counters file at full size (both halves), all counters zero.
    pub(super) fn init(file: File, path: &Path) -> io::Result<Self> {
        let mut b = half_bytes(0, &SessionSummary::default(), &[]);
        b.extend_from_slice(&half_bytes(0, &SessionSummary::default(), &[]));
        file.write_all_at(&b, 0)
            .map_err(|e| at(path, "writing", e))?;
        Ok(Self {
            file,
            seq: 0,
            last: SessionSummary::default(),
            chunks: Vec::new(),
        })
    }

    /// Overwrites the older half with the counters of `now`.
    pub(super) fn update(&mut self, now: &SessionSummary) -> io::Result<()> {
        self.last = now.clone();
        self.write()
    }

    /// Overwrites the older half with new chunk counts, if they changed.
    pub(super) fn chunks(&mut self, chunks: Vec<(u8, u64)>) -> io::Result<()> {
        if chunks == self.chunks {
            return Ok(());
        }
        self.chunks = chunks;
        self.write()
    }

    fn write(&mut self) -> io::Result<()> {
        self.seq += 1;
        let b = half_bytes(self.seq, &self.last, &self.chunks);
        self.file.write_all_at(&b, (self.seq % 2) * HALF as u64)
    }
}

/// Reads a counters file's text: the newer of its halves that parses, `None` if neither does.
pub(super) fn parse(text: &[u8]) -> Option<Counts> {
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64();
    text.chunks(HALF)
        .filter_map(|h| {
            let v: serde_json::Value =
                serde_json::from_str(std::str::from_utf8(h).ok()?.trim()).ok()?;
            let mut c = Counts {
                seq: n(&v, "seq")?,
                no_slot: n(&v, "no_slot")?,
                filtered_no_slot: n(&v, "filtered_no_slot")?,
                slots: Vec::new(),
                chunks: Vec::new(),
            };
            // (Absent in an uncompressed recording's file, and in one made before they were.)
            for s in v["chunks"].as_array().into_iter().flatten() {
                let [slot, n] = &s.as_array()?[..] else {
                    return None;
                };
                c.chunks
                    .push((u8::try_from(slot.as_u64()?).ok()?, n.as_u64()?));
            }
            for s in v["slots"].as_array()? {
                let s: Vec<u64> = s
                    .as_array()?
                    .iter()
                    .map(|x| x.as_u64())
                    .collect::<Option<_>>()?;
                let [slot, filtered, refused, sink_lost, clamped] = s[..] else {
                    return None;
                };
                c.slots.push(SlotCounts {
                    slot: u8::try_from(slot).ok()?,
                    filtered,
                    refused,
                    sink_lost,
                    clamped,
                });
            }
            Some(c)
        })
        .max_by_key(|c| c.seq)
}
