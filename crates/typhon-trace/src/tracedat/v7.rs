//! Version 7 (trace-cmd ≥ 3.0's default): after the file header, a chain of options sections,
//! whose options point at the other sections and describe each buffer; the top buffer's
//! BUFFER option holds the clock and the per-CPU table.
//!
//! The chain and the sections come from the file, so they are bounded here: sections may not
//! share a byte, and each options section must start past the end of the one before (a chain
//! that nests, repeats or points back is refused), so what parsing copies out adds up to at
//! most the file's size. Sections are read through [`Src`]: from the bytes in memory, or with
//! `pread` from the open file (trace-cmd puts the BUFFER option after the page data, so a
//! streaming reader cannot parse a prefix).
//!
//! A zstd-compressed section (flag 1: `u32 compressed, u32 uncompressed, frame`) is
//! decompressed to exactly its declared size, at most [`MAX_SECTION`]; a file compressed with
//! anything but zstd (or "none") is refused with [`TraceDatError::Compressed`].

use super::cursor::{read_uint, Cur};
use super::error::{corrupt, Result, TraceDatError};
use super::layout::{text, Layout, TraceOption, MAX_CPUS};
use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;

/// trace-cmd option id of the CPU count (version 7).
const OPTION_CPUCOUNT: u16 = 8;

/// The largest metadata section accepted once decompressed (a fixed cap, SPEC §10): a kernel's
/// kallsyms is a few MiB.
pub(super) const MAX_SECTION: u32 = 64 << 20;

/// Where a file's bytes are read from while parsing.
#[derive(Clone, Copy)]
pub(super) enum Src<'a> {
    /// The whole file in memory.
    Mem(&'a [u8]),
    /// An open file of this length.
    File(&'a std::fs::File, u64),
}

impl Src<'_> {
    pub(super) fn len(&self) -> u64 {
        match self {
            Src::Mem(d) => d.len() as u64,
            Src::File(_, n) => *n,
        }
    }

    /// A copy of `n` bytes at `off`: they must be inside the file, so what is allocated is
    /// bounded by the bytes really there.
    pub(super) fn read(&self, off: u64, n: u64, what: &'static str) -> Result<Vec<u8>> {
        if off.checked_add(n).is_none_or(|e| e > self.len()) {
            return Err(TraceDatError::Truncated { what, at: off });
        }
        match self {
            Src::Mem(d) => Ok(d[off as usize..(off + n) as usize].to_vec()),
            Src::File(f, _) => {
                let mut v = vec![0u8; n as usize];
                f.read_exact_at(&mut v, off)?;
                Ok(v)
            }
        }
    }
}

/// Decompresses a compressed section's body `b` (`u32 compressed, u32 uncompressed, frame`).
pub(super) fn inflate(b: &[u8], big_endian: bool, at: u64) -> Result<Vec<u8>> {
    let mut c = Cur::at(b, 0, big_endian);
    let csize = c.u32("compressed size")?;
    let usize_ = c.u32("uncompressed size")?;
    let frame = c.bytes_u64(u64::from(csize), "compressed data")?;
    if usize_ > MAX_SECTION
        || u64::from(usize_)
            > (u64::from(csize) * typhon_recorder::tracedat::MAX_RATIO).max(64 << 10)
    {
        return corrupt(
            format!(
                "section of {csize} bytes compressed, {usize_} uncompressed (at most \
                 {MAX_SECTION}, and {} times the compressed size)",
                typhon_recorder::tracedat::MAX_RATIO
            ),
            at,
        );
    }
    let mut out = Vec::new();
    // `decompress_chunk` allocates no more than the declared size (capped above).
    typhon_recorder::tracedat::decompress_chunk(frame, usize_, &mut out).map_err(|e| {
        TraceDatError::Corrupt {
            what: e.to_string(),
            at,
        }
    })?;
    Ok(out)
}

impl Layout {
    /// Section `want` at `off`: its body (decompressed if it is compressed) and the offset of
    /// its end in the file.
    fn section(&self, src: Src<'_>, off: u64, want: u16) -> Result<(Vec<u8>, u64)> {
        let h = src.read(off, 16, "section header")?;
        let mut c = Cur::at(&h, 0, self.big_endian);
        let id = c.u16("section id")?;
        let flags = c.u16("section flags")?;
        let _desc = c.u32("section description")?;
        let size = c.u64("section size")?;
        if id != want {
            return corrupt(format!("section id {id}, expected {want}"), off);
        }
        let body = src.read(off + 16, size, "section body")?;
        let end = off + 16 + size;
        if flags & 1 != 0 {
            if self.compression.is_none() {
                return corrupt("compressed section in a file without compression", off);
            }
            return Ok((inflate(&body, self.big_endian, off)?, end));
        }
        Ok((body, end))
    }

    /// The rest of a version 7 file, from just after its page size.
    pub(super) fn parse_v7(&mut self, mut c: Cur<'_>, src: Src<'_>) -> Result<()> {
        let comp = text(c.cstr("compression name")?);
        let _comp_ver = c.cstr("compression version")?;
        match comp.as_str() {
            "" | "none" => {}
            "zstd" => self.compression = Some(comp),
            _ => return Err(TraceDatError::Compressed(comp)),
        }
        let mut next = c.u64("options offset")?;
        let mut sections: BTreeMap<u16, u64> = BTreeMap::new();
        // Indexes into `options` of the BUFFER options (their data is not copied twice).
        let mut buffers: Vec<(String, usize)> = Vec::new();
        // Every section read, as (header offset, body end): no two may share a byte, so the
        // bytes parsed (and copied into options) add up to at most the file's size.
        let mut spans: Vec<(u64, u64)> = Vec::new();
        // Follow the options chain. Each options section must start after the end of the one
        // before: a chain that points back, repeats or nests (a section inside an option of
        // the one before, which would be parsed, and copied, once per level: memory growing
        // with the square of the file) is refused, and the chain ends.
        let mut min_next = c.off();
        while next != 0 {
            if next < min_next {
                return corrupt(
                    format!(
                        "options chain points back, repeats or nests (section at {next}, \
                         the previous one ends at {min_next})"
                    ),
                    next,
                );
            }
            let (body, end) = self.section(src, next, 0)?;
            spans.push((next, end));
            min_next = end;
            let mut oc = Cur::at(&body, 0, self.big_endian);
            next = 0;
            loop {
                let id = oc.u16("option id")?;
                let n = oc.u32("option size")?;
                let data = oc.bytes_u64(u64::from(n), "option data")?;
                if id == 0 {
                    if data.len() >= 8 {
                        next = read_uint(&data[..8], self.big_endian);
                    }
                    break;
                }
                match id {
                    16..=21 if data.len() >= 8 => {
                        sections.insert(id, read_uint(&data[..8], self.big_endian));
                    }
                    3 => {
                        let mut bc = Cur::at(data, 8, self.big_endian);
                        let name = text(bc.cstr("buffer name")?);
                        buffers.push((name, self.options.len()));
                    }
                    _ => {}
                }
                self.options.push(TraceOption {
                    id,
                    data: data.to_vec(),
                });
            }
        }
        self.take_clock_option();
        let mut bodies = Vec::new();
        for id in 16..=21u16 {
            let Some(&off) = sections.get(&id) else {
                if id == 16 {
                    return corrupt("no HEADER_INFO section", 0);
                }
                continue;
            };
            let (body, end) = self.section(src, off, id)?;
            spans.push((off, end));
            bodies.push((id, body));
        }
        spans.sort_unstable();
        for w in spans.windows(2) {
            if w[1].0 < w[0].1 {
                return corrupt(
                    format!(
                        "section at {} overlaps the section at {} (ends at {})",
                        w[1].0, w[0].0, w[0].1
                    ),
                    w[1].0,
                );
            }
        }
        for (id, body) in bodies {
            let mut sc = Cur::at(&body, 0, self.big_endian);
            match id {
                16 => self.parse_headers(&mut sc)?,
                17 => self.parse_ftrace(&mut sc)?,
                18 => self.parse_events(&mut sc)?,
                19 => self.parse_kallsyms_printk(&mut sc, 0)?,
                20 => self.parse_kallsyms_printk(&mut sc, 1)?,
                _ => self.parse_cmdlines(&mut sc)?,
            }
        }
        // The top buffer (name "") holds the records; other instances are left alone.
        let Some(&(_, bi)) = buffers.iter().find(|(n, _)| n.is_empty()) else {
            return Ok(());
        };
        let b = std::mem::take(&mut self.options[bi].data);
        let r = self.parse_buffer(&b);
        self.options[bi].data = b;
        r?;
        // The flyrecord section's flag says whether the pages are in chunks.
        if self.compression.is_some() {
            let at = read_uint(&self.options[bi].data[..8], self.big_endian);
            let h = src.read(at, 4, "buffer section header")?;
            let flags = read_uint(&h[2..4], self.big_endian);
            self.chunked = flags & 1 != 0;
        }
        Ok(())
    }

    /// The top buffer's BUFFER option: clock, page size and the per-CPU table.
    fn parse_buffer(&mut self, b: &[u8]) -> Result<()> {
        let mut bc = Cur::at(b, 0, self.big_endian);
        let _sec = bc.u64("buffer section offset")?;
        let _name = bc.cstr("buffer name")?;
        let clock = text(bc.cstr("buffer clock")?);
        if !clock.is_empty() {
            self.clock = Some(clock);
        }
        let at = bc.off();
        let ps = bc.u32("buffer page size")?;
        if ps != self.page_size {
            return corrupt(
                format!(
                    "buffer page size {ps} differs from file page size {}",
                    self.page_size
                ),
                at,
            );
        }
        // The table lists only CPUs with data (`n` entries with their ids); the CPU count is the
        // CPUCOUNT option's, or the highest id + 1. Entries are bounded by the option's bytes;
        // the count is only a number (nothing is allocated per CPU it declares).
        let n = bc.u32("buffer cpu count")?;
        let table = bc.bytes_u64(u64::from(n) * 20, "buffer cpu table")?;
        let mut tc = Cur::at(table, 0, self.big_endian);
        // A CPU listed twice: the last entry wins.
        let mut entries: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for _ in 0..n {
            let cpu = tc.u32("cpu id")?;
            let off = tc.u64("cpu offset")?;
            let size = tc.u64("cpu size")?;
            entries.insert(cpu, (off, size));
        }
        let counted = self
            .options
            .iter()
            .find(|o| o.id == OPTION_CPUCOUNT && o.data.len() >= 4)
            .map_or(0, |o| read_uint(&o.data[..4], self.big_endian) as u32);
        let top = entries
            .keys()
            .next_back()
            .map_or(0, |&c| c.saturating_add(1));
        self.cpus = counted.max(top);
        if self.cpus > MAX_CPUS {
            return corrupt(
                format!("{} cpus (at most {MAX_CPUS} supported)", self.cpus),
                at,
            );
        }
        self.cpu_data = entries
            .into_iter()
            .filter(|&(_, e)| e != (0, 0))
            .map(|(cpu, (off, size))| (cpu, off, size))
            .collect();
        Ok(())
    }
}
