//! The model's detail: the last records, back to back in a few large chunks instead of one
//! allocation per record, so that the memory it takes is its bytes (plus at most two chunks),
//! however small the records are.
//!
//! Each record is a 16-byte header (time, slot, payload length; little-endian) and its
//! payload, whole inside one chunk. Records are taken from the front and added at the back;
//! a chunk whose records all left is kept as the spare for the next one, so a steady stream
//! allocates nothing. The rare `missed_before` counts are kept apart, by record number.

use std::collections::VecDeque;
use typhon_trace::tracedat::OwnedRecord;

/// A chunk's size: large enough that the chunks' count stays small, small against the cap.
const CHUNK: usize = 64 * 1024;
/// Time (8), slot (4), payload length (4).
const HEADER: usize = 16;

/// A record in the detail, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rec<'a> {
    pub cpu: u32,
    pub ts: u64,
    pub data: &'a [u8],
    pub missed_before: Option<i64>,
}

impl Rec<'_> {
    /// As an [`OwnedRecord`] (its `at`, the offset in the followed files, is not kept: 0).
    pub fn to_owned(self) -> OwnedRecord {
        OwnedRecord {
            cpu: self.cpu,
            ts: self.ts,
            at: 0,
            data: self.data.to_vec(),
            missed_before: self.missed_before,
        }
    }
}

#[derive(Default)]
pub struct Detail {
    chunks: VecDeque<Vec<u8>>,
    /// Offset of the first record in the front chunk.
    front: usize,
    /// Header and payload bytes of the records held.
    bytes: usize,
    /// Records held.
    len: usize,
    /// The number of the front record among all records added.
    first: u64,
    /// `(record number, missed_before)` of the records held that have one, in order.
    missed: VecDeque<(u64, i64)>,
    spare: Option<Vec<u8>>,
}

fn header(c: &[u8], at: usize) -> (u64, u32, usize) {
    let h = &c[at..at + HEADER];
    let ts = u64::from_le_bytes(h[..8].try_into().unwrap_or_default());
    let cpu = u32::from_le_bytes(h[8..12].try_into().unwrap_or_default());
    let len = u32::from_le_bytes(h[12..].try_into().unwrap_or_default()) as usize;
    (ts, cpu, len)
}

impl Detail {
    /// Header and payload bytes held (what the cap is on).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    #[cfg(test)]
    /// Bytes of the chunks allocated (the detail's memory, but for the index of the chunks).
    pub fn allocated(&self) -> usize {
        self.chunks
            .iter()
            .chain(&self.spare)
            .map(Vec::capacity)
            .sum()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn push(&mut self, cpu: u32, ts: u64, data: &[u8], missed_before: Option<i64>) {
        let need = HEADER + data.len();
        let fits = self
            .chunks
            .back()
            .is_some_and(|c| c.capacity() - c.len() >= need);
        if !fits {
            let c = match self.spare.take() {
                Some(c) if c.capacity() >= need => c,
                s => {
                    self.spare = s;
                    Vec::with_capacity(need.max(CHUNK))
                }
            };
            self.chunks.push_back(c);
        }
        let Some(c) = self.chunks.back_mut() else {
            return;
        };
        c.extend_from_slice(&ts.to_le_bytes());
        c.extend_from_slice(&cpu.to_le_bytes());
        c.extend_from_slice(&(data.len() as u32).to_le_bytes());
        c.extend_from_slice(data);
        if let Some(m) = missed_before {
            self.missed.push_back((self.first + self.len as u64, m));
        }
        self.bytes += need;
        self.len += 1;
    }

    /// The time of the oldest record.
    pub fn front_ts(&self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        self.chunks.front().map(|c| header(c, self.front).0)
    }

    /// Drops the oldest record.
    pub fn pop_front(&mut self) {
        if self.len == 0 {
            return;
        }
        let n = self.chunks.len();
        let Some(c) = self.chunks.front_mut() else {
            return;
        };
        let (_, _, len) = header(c, self.front);
        self.front += HEADER + len;
        self.bytes -= HEADER + len;
        self.len -= 1;
        self.first += 1;
        while self.missed.front().is_some_and(|&(k, _)| k < self.first) {
            self.missed.pop_front();
        }
        if self.front < c.len() {
            return;
        }
        self.front = 0;
        if n == 1 {
            // The only chunk is the back one too: records go on in it from its start.
            c.clear();
        } else if let Some(mut done) = self.chunks.pop_front() {
            done.clear();
            // A standard chunk is kept for reuse; one made for a large record only if none is.
            if done.capacity() == CHUNK || self.spare.is_none() {
                self.spare = Some(done);
            }
        }
    }

    /// The records, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = Rec<'_>> + '_ {
        let mut missed = self.missed.iter().peekable();
        let mut n = self.first;
        self.chunks
            .iter()
            .enumerate()
            .flat_map(move |(i, c)| {
                let mut at = if i == 0 { self.front } else { 0 };
                std::iter::from_fn(move || {
                    if at >= c.len() {
                        return None;
                    }
                    let (ts, cpu, len) = header(c, at);
                    let data = &c[at + HEADER..at + HEADER + len];
                    at += HEADER + len;
                    Some((cpu, ts, data))
                })
            })
            .map(move |(cpu, ts, data)| {
                let m = missed.next_if(|&&(k, _)| k == n).map(|&(_, m)| m);
                n += 1;
                Rec {
                    cpu,
                    ts,
                    data,
                    missed_before: m,
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_whole_in_order_and_chunks_are_reused() {
        let mut d = Detail::default();
        let big = vec![7u8; CHUNK + 10];
        let mut want: VecDeque<(u32, u64, Vec<u8>, Option<i64>)> = VecDeque::new();
        for i in 0..20_000u64 {
            let data: Vec<u8> = if i == 5_000 {
                big.clone()
            } else {
                vec![i as u8; (i % 61) as usize]
            };
            let m = (i % 1000 == 3).then_some(i as i64);
            d.push(i as u32 % 5, i * 10, &data, m);
            want.push_back((i as u32 % 5, i * 10, data, m));
            if i % 3 == 0 && i > 6_000 {
                d.pop_front();
                want.pop_front();
            }
        }
        let got: Vec<(u32, u64, Vec<u8>, Option<i64>)> = d
            .iter()
            .map(|r| (r.cpu, r.ts, r.data.to_vec(), r.missed_before))
            .collect();
        assert_eq!(got, Vec::from(want.clone()));
        assert_eq!(d.len(), want.len());
        let bytes: usize = want.iter().map(|w| HEADER + w.2.len()).sum();
        assert_eq!(d.bytes(), bytes);
        assert_eq!(d.front_ts(), want.front().map(|w| w.1));
        // The memory is the bytes held and at most two chunks more (the front one's records
        // already gone, the back one's room, the spare).
        assert!(
            d.allocated() <= bytes + 3 * CHUNK,
            "{} {bytes}",
            d.allocated()
        );
        while d.len() > 0 {
            d.pop_front();
        }
        assert_eq!((d.bytes(), d.front_ts(), d.iter().count()), (0, None, 0));
        assert!(d.allocated() <= 2 * CHUNK);
        d.push(1, 2, b"abc", Some(4));
        let r = d.iter().next().unwrap();
        assert_eq!(
            (r.cpu, r.ts, r.data, r.missed_before),
            (1, 2, &b"abc"[..], Some(4))
        );
    }
}
