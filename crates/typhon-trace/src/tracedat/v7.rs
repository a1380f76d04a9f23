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
use super::layout::{known_option, text, Layout, TraceOption, MAX_CPUS};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::FileExt;
use typhon_recorder::tracedat::{OPTION_TRACECLOCK, OPTION_TYPHON_META, OPTION_VERSION};

/// trace-cmd option id of the CPU count (version 7).
const OPTION_CPUCOUNT: u16 = 8;
/// trace-cmd option id of a buffer (an instance's clock and per-CPU table); its flyrecord
/// section has this id too.
const OPTION_BUFFER: u16 = 3;
/// trace-cmd option id of a latency-format buffer (text, no per-CPU data).
const OPTION_BUFFER_TEXT: u16 = 22;

/// The largest metadata section accepted once decompressed (a fixed cap, SPEC §10): a kernel's
/// kallsyms is a few MiB.
pub(super) const MAX_SECTION: u32 = 64 << 20;

/// The most a file's compressed sections may decompress to in all (SPEC §10): a fixed cap, and
/// [`METADATA_RATIO`] times the file's size (or [`METADATA_FLOOR`], if more). Each section's
/// 1024× ratio alone would let a 4.6 MB file of options sections inflate to 4.6 GB.
pub(super) const MAX_METADATA: u64 = 256 << 20;
pub(super) const METADATA_RATIO: u64 = 32;
pub(super) const METADATA_FLOOR: u64 = 16 << 20;

/// The largest zstd window a compressed section may need to be read as a stream (2^23: zstd
/// level 19's; an options section's unknown options are skipped through it, not kept).
const WINDOW_LOG_MAX: u32 = 23;

/// Options a compressed options section keeps (the others' data is skipped, unread): those
/// this reader or its users read.
fn kept_from_compressed(id: u16) -> bool {
    matches!(id, OPTION_BUFFER | OPTION_CPUCOUNT | 16..=21)
        || [OPTION_TRACECLOCK, OPTION_VERSION, OPTION_TYPHON_META].contains(&id)
}

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

/// A compressed section's body `b` (`u32 compressed, u32 uncompressed, frame`): its frame and
/// declared uncompressed size, checked against the caps.
fn compressed_body(b: &[u8], big_endian: bool, at: u64) -> Result<(&[u8], u32)> {
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
    Ok((frame, usize_))
}

/// Decompresses a compressed section's body `b` whole.
pub(super) fn inflate(frame: &[u8], usize_: u32, at: u64) -> Result<Vec<u8>> {
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

/// A section's body as a stream: itself, or its frame decompressed as it is read (at most its
/// declared size, with a bounded window).
fn body_reader<'a>(body: &'a [u8], comp: Option<(&'a [u8], u32)>) -> Result<Box<dyn Read + 'a>> {
    Ok(match comp {
        None => Box::new(body),
        Some((frame, usize_)) => {
            let mut d = zstd::stream::read::Decoder::with_buffer(frame)?;
            d.window_log_max(WINDOW_LOG_MAX)?;
            Box::new(d.take(u64::from(usize_)))
        }
    })
}

/// Reads exactly `buf.len()` bytes of a section body, naming what was read on failure.
fn read_exact(r: &mut dyn Read, buf: &mut [u8], what: &'static str, at: u64) -> Result<()> {
    r.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => TraceDatError::Truncated { what, at },
        _ => TraceDatError::Corrupt {
            what: format!("{what}: {e}"),
            at,
        },
    })
}

/// A section's name, for errors.
fn section_name(id: u16) -> &'static str {
    match id {
        0 => "options",
        16 => "headers",
        17 => "ftrace events",
        18 => "event formats",
        19 => "kallsyms",
        20 => "printk",
        21 => "command lines",
        _ => "unknown",
    }
}

impl Layout {
    /// Section `want` at `off`: its body as stored and the offset of its end in the file,
    /// with whether it is compressed. A compressed one's declared size is charged to the
    /// file's metadata budget before anything is decompressed.
    fn section_raw(&mut self, src: Src<'_>, off: u64, want: u16) -> Result<(Vec<u8>, bool, u64)> {
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
        let compressed = flags & 1 != 0;
        if compressed {
            if self.compression.is_none() {
                return corrupt("compressed section in a file without compression", off);
            }
            let (_, usize_) = compressed_body(&body, self.big_endian, off)?;
            self.charge(u64::from(usize_), id, off, src.len())?;
        }
        Ok((body, compressed, end))
    }

    /// Counts `n` more bytes of decompressed metadata (section `id` at `off`) against the
    /// caps for a `len`-byte file.
    fn charge(&mut self, n: u64, id: u16, off: u64, len: u64) -> Result<()> {
        let cap = MAX_METADATA.min(len.saturating_mul(METADATA_RATIO).max(METADATA_FLOOR));
        let total = self.inflated.saturating_add(n);
        if total > cap {
            return corrupt(
                format!(
                    "compressed section {id} (\"{}\") declares {n} bytes: the file's \
                     decompressed metadata would reach {total} bytes, over the {cap} a \
                     {len}-byte file may have (at most {MAX_METADATA}, and {METADATA_RATIO} \
                     times the file's size)",
                    section_name(id)
                ),
                off,
            );
        }
        self.inflated = total;
        Ok(())
    }

    /// Section `want` at `off`: its body (decompressed if it is compressed) and the offset of
    /// its end in the file.
    fn section(&mut self, src: Src<'_>, off: u64, want: u16) -> Result<(Vec<u8>, u64)> {
        let (body, compressed, end) = self.section_raw(src, off, want)?;
        if compressed {
            let (frame, usize_) = compressed_body(&body, self.big_endian, off)?;
            return Ok((inflate(frame, usize_, off)?, end));
        }
        Ok((body, end))
    }

    /// The options of an options section's body, read as a stream: kept in `self.options`
    /// (from a compressed section, only those [`kept_from_compressed`]: the others' data is
    /// skipped as it is decompressed, never held). Returns the next section's offset (DONE's).
    fn parse_options(
        &mut self,
        body: &[u8],
        compressed: bool,
        off: u64,
        sections: &mut BTreeMap<u16, u64>,
        buffers: &mut Vec<(String, usize)>,
    ) -> Result<u64> {
        let comp = if compressed {
            Some(compressed_body(body, self.big_endian, off)?)
        } else {
            None
        };
        let left = comp.map_or(body.len() as u64, |c| u64::from(c.1));
        let mut r = body_reader(body, comp)?;
        let mut left = left;
        loop {
            let mut h = [0u8; 6];
            read_exact(&mut r, &mut h, "option header", off)?;
            left = left.saturating_sub(6);
            let id = read_uint(&h[..2], self.big_endian) as u16;
            let n = read_uint(&h[2..], self.big_endian);
            if n > left {
                return Err(TraceDatError::Truncated {
                    what: "option data",
                    at: off,
                });
            }
            left -= n;
            if id != 0 && !known_option(id) {
                self.unknown_option(id, n, off, &format!("in the options section at {off}"));
            }
            if compressed && id != 0 && !kept_from_compressed(id) {
                let skipped =
                    std::io::copy(&mut (&mut r).take(n), &mut std::io::sink()).map_err(|e| {
                        TraceDatError::Corrupt {
                            what: format!("option {id}: {e}"),
                            at: off,
                        }
                    })?;
                if skipped != n {
                    return Err(TraceDatError::Truncated {
                        what: "option data",
                        at: off,
                    });
                }
                continue;
            }
            // At most what the section holds (its bytes, or its declared and charged size).
            let mut data = vec![0u8; n as usize];
            read_exact(&mut r, &mut data, "option data", off)?;
            if id == 0 {
                return Ok(if data.len() >= 8 {
                    read_uint(&data[..8], self.big_endian)
                } else {
                    0
                });
            }
            match id {
                16..=21 if data.len() >= 8 => {
                    sections.insert(id, read_uint(&data[..8], self.big_endian));
                }
                OPTION_BUFFER => {
                    let mut bc = Cur::at(&data, 8, self.big_endian);
                    let name = text(bc.cstr("buffer name")?);
                    buffers.push((name, self.options.len()));
                }
                _ => {}
            }
            self.options.push(TraceOption { id, data });
        }
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
            let (body, compressed, end) = self.section_raw(src, next, 0)?;
            spans.push((next, end));
            min_next = end;
            next = self.parse_options(&body, compressed, next, &mut sections, &mut buffers)?;
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
            if id == 19 || id == 20 {
                // Kallsyms and printk are only checked: read as a stream, not kept.
                let (body, compressed, end) = self.section_raw(src, off, id)?;
                spans.push((off, end));
                self.skip_symbols(&body, compressed, off, id)?;
                continue;
            }
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
                _ => self.parse_cmdlines(&mut sc)?,
            }
        }
        self.pick_buffer(src, &buffers)
    }

    /// Reads the top buffer's BUFFER option (name ""), which holds the records. Other
    /// instances are left alone, each with a reader warning; so is a file without a top
    /// buffer (its options damaged, or a chain that ends early: no records would be read
    /// without a word), and a flyrecord section that is not one.
    fn pick_buffer(&mut self, src: Src<'_>, buffers: &[(String, usize)]) -> Result<()> {
        for (name, _) in buffers.iter().filter(|(n, _)| !n.is_empty()) {
            let shown: String = name.chars().take(40).collect();
            self.warn(
                0,
                format!(
                    "buffer instance {shown:?}: its records are not read (only the top \
                     instance's are; a damaged name hides them too)"
                ),
            );
        }
        let Some(&(_, bi)) = buffers.iter().find(|(n, _)| n.is_empty()) else {
            // trace-cmd's latency files have text (BUFFER_TEXT), no per-CPU data.
            if !self.options.iter().any(|o| o.id == OPTION_BUFFER_TEXT) {
                self.warn(
                    0,
                    "no BUFFER option for the top instance: no per-CPU data is read (the \
                     options that say where it is are missing or damaged)"
                        .into(),
                );
            }
            return Ok(());
        };
        let b = std::mem::take(&mut self.options[bi].data);
        let r = self.parse_buffer(&b);
        self.options[bi].data = b;
        r?;
        let at = read_uint(&self.options[bi].data[..8], self.big_endian);
        let h = match src.read(at, 4, "buffer section header") {
            Ok(h) => h,
            // The flyrecord section's flag says whether the pages are in chunks.
            Err(e) if self.compression.is_some() => return Err(e),
            // Uncompressed pages are found by the table alone.
            Err(_) => {
                self.warn(
                    at,
                    format!("the top buffer's flyrecord section at {at} is outside the file"),
                );
                return Ok(());
            }
        };
        let id = read_uint(&h[..2], self.big_endian);
        if id != u64::from(OPTION_BUFFER) {
            self.warn(
                at,
                format!(
                    "the top buffer's flyrecord section at {at} has section id {id}, not \
                     {OPTION_BUFFER}"
                ),
            );
        }
        if self.compression.is_some() {
            let flags = read_uint(&h[2..4], self.big_endian);
            self.chunked = flags & 1 != 0;
        }
        Ok(())
    }

    /// Kallsyms or printk (`id` 19, 20): `u32 size`, then that many bytes, checked and
    /// skipped as they are read.
    fn skip_symbols(&self, body: &[u8], compressed: bool, off: u64, id: u16) -> Result<()> {
        let what = if id == 19 { "kallsyms" } else { "printk" };
        let comp = if compressed {
            Some(compressed_body(body, self.big_endian, off)?)
        } else {
            None
        };
        let mut r = body_reader(body, comp)?;
        let mut n = [0u8; 4];
        read_exact(&mut r, &mut n, what, off)?;
        let n = read_uint(&n, self.big_endian);
        let got = std::io::copy(&mut (&mut r).take(n), &mut std::io::sink()).map_err(|e| {
            TraceDatError::Corrupt {
                what: format!("{what}: {e}"),
                at: off,
            }
        })?;
        if got != n {
            return Err(TraceDatError::Truncated { what, at: off });
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
