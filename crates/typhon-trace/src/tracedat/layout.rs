//! [`Layout`], everything parsing takes from a file besides its bytes, and the parsers of the
//! sections versions 6 and 7 share (headers, formats, kallsyms, printk, cmdlines): version 6
//! reads them one after the other, version 7 from the sections its options point at.
//!
//! [`TraceOption`] lives here as both versions fill the option list; so does the check that
//! each CPU's data is inside the file, the same whichever version's table gave it.

use super::cursor::Cur;
use super::error::{corrupt, Result};
use super::formats::EventFormat;
use std::collections::BTreeMap;
use typhon_recorder::tracedat::{OPTION_TRACECLOCK, OPTION_TYPHON_META};

/// Largest CPU count accepted (Linux's NR_CPUS tops out at 8192): bounds the per-CPU table.
pub(super) const MAX_CPUS: u32 = 1 << 16;

/// A named option `{id, data}` of the file.
///
/// ```
/// use typhon_trace::tracedat::TraceOption;
/// let o = TraceOption { id: 4, data: b"[mono]\n\0".to_vec() };
/// assert_eq!(o.text(), "[mono]\n");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceOption {
    /// Option id (trace-cmd's enum, or a private id such as 0x5459).
    pub id: u16,
    /// Raw option data.
    pub data: Vec<u8>,
}

impl TraceOption {
    /// The data as text, up to the first NUL, lossily decoded.
    ///
    /// ```
    /// use typhon_trace::tracedat::TraceOption;
    /// assert_eq!(TraceOption { id: 9, data: b"v1\0junk".to_vec() }.text(), "v1");
    /// ```
    pub fn text(&self) -> String {
        let end = self
            .data
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.data.len());
        String::from_utf8_lossy(&self.data[..end]).into_owned()
    }
}

/// Whether `id` is an option id a writer is known to use: trace-cmd's (1..=25 in trace-cmd
/// 3.4) or Typhon's metadata. Another is skipped with a reader warning: a writer newer than
/// this reader, or a damaged id (a BUFFER option whose id is damaged hides the file's
/// records).
pub(super) fn known_option(id: u16) -> bool {
    matches!(id, 1..=25) || id == OPTION_TYPHON_META
}

/// Bytes of the file as text, lossily decoded.
pub(super) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The clock name in `[...]` of a trace_clock text, or the trimmed text itself.
pub(super) fn clock_name(t: &str) -> Option<String> {
    if let (Some(a), Some(b)) = (t.find('['), t.find(']')) {
        if a < b {
            return Some(t[a + 1..b].to_owned());
        }
    }
    let t = t.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    (!t.is_empty()).then(|| t.to_owned())
}

/// What a file's header and sections say, as parsing fills it in.
#[derive(Debug)]
pub(super) struct Layout {
    pub(super) version: u32,
    pub(super) big_endian: bool,
    pub(super) long_size: u8,
    pub(super) page_size: u32,
    pub(super) page_header_size: usize,
    pub(super) commit_size: usize,
    pub(super) header_page: String,
    pub(super) header_event: String,
    pub(super) formats: Vec<EventFormat>,
    pub(super) cmdlines: BTreeMap<i64, String>,
    pub(super) cpus: u32,
    pub(super) options: Vec<TraceOption>,
    pub(super) clock: Option<String>,
    /// (cpu, file offset, size) of the top buffer's page data, sorted by cpu, for the CPUs the
    /// file's table lists with a non-zero entry: a file may declare up to [`MAX_CPUS`] CPUs in
    /// a few bytes (v7's CPUCOUNT option), so nothing is held per declared CPU.
    pub(super) cpu_data: Vec<(u32, u64, u64)>,
    /// The compression of a version 7 file ("zstd"), `None` for an uncompressed one.
    pub(super) compression: Option<String>,
    /// The page data is in compressed chunks (`u32 count`, then `u32 compressed size, u32
    /// uncompressed size, frame` each) rather than pages.
    pub(super) chunked: bool,
    /// The file's length.
    pub(super) file_len: u64,
    /// Bytes of metadata decompressed so far (version 7), against the caps.
    pub(super) inflated: u64,
    /// What parsing found that a reader should hear of though the file parses (an option
    /// this reader does not know, a buffer instance it does not read, a top buffer missing):
    /// (file offset, what), made reader warnings of the file.
    pub(super) warnings: Vec<(u64, String)>,
    /// Warnings past the first [`MAX_LAYOUT_WARNINGS`], counted, not kept.
    pub(super) warnings_left_out: u64,
}

/// The most parse warnings kept (a file of a million unknown options has a million).
pub(super) const MAX_LAYOUT_WARNINGS: usize = 32;

impl Layout {
    /// A reader warning found parsing, about the structure at `at`.
    pub(super) fn warn(&mut self, at: u64, what: String) {
        if self.warnings.len() < MAX_LAYOUT_WARNINGS {
            self.warnings.push((at, what));
        } else {
            self.warnings_left_out += 1;
        }
    }

    /// A reader warning about an option of id `id` this reader does not know, found at `at`
    /// (`where_` says where, for the message).
    pub(super) fn unknown_option(&mut self, id: u16, len: u64, at: u64, where_: &str) {
        self.warn(
            at,
            format!(
                "option id {id} ({len} bytes) {where_} is not one this reader knows: skipped \
                 (a newer writer's, or a damaged id)"
            ),
        );
    }
}

impl Default for Layout {
    /// Before `header_page` says otherwise: a 64-bit writer's page (8-byte commit, 16-byte
    /// page header).
    fn default() -> Self {
        Layout {
            version: 0,
            big_endian: false,
            long_size: 8,
            page_size: 0,
            page_header_size: 16,
            commit_size: 8,
            header_page: String::new(),
            header_event: String::new(),
            formats: Vec::new(),
            cmdlines: BTreeMap::new(),
            cpus: 0,
            options: Vec::new(),
            clock: None,
            cpu_data: Vec::new(),
            compression: None,
            chunked: false,
            file_len: 0,
            inflated: 0,
            warnings: Vec::new(),
            warnings_left_out: 0,
        }
    }
}

impl Layout {
    /// The `header_page` and `header_event` texts, and the page layout `header_page` gives.
    pub(super) fn parse_headers(&mut self, c: &mut Cur<'_>) -> Result<()> {
        c.expect(b"header_page\0", "\"header_page\"")?;
        let n = c.u64("header_page size")?;
        self.header_page = text(c.bytes_u64(n, "header_page")?);
        c.expect(b"header_event\0", "\"header_event\"")?;
        let n = c.u64("header_event size")?;
        self.header_event = text(c.bytes_u64(n, "header_event")?);
        // kbuffer's long size and the data start come from header_page, as in trace-cmd.
        let hp = EventFormat::parse(
            "",
            &format!("name: h\nID: 0\nformat:\n{}", self.header_page),
        );
        if let Some(hp) = hp {
            if let Some(commit) = hp.field("commit") {
                if commit.size == 4 || commit.size == 8 {
                    self.commit_size = commit.size;
                }
            }
            if let Some(data) = hp.field("data") {
                if data.offset == 12 || data.offset == 16 {
                    self.page_header_size = data.offset;
                }
            } else {
                self.page_header_size = 8 + self.commit_size;
            }
        }
        if self.header_page.is_empty() {
            return corrupt("empty header_page (pre-2.6.31 page format)", c.off());
        }
        Ok(())
    }

    /// The ftrace events' formats.
    pub(super) fn parse_ftrace(&mut self, c: &mut Cur<'_>) -> Result<()> {
        let count = c.u32("ftrace format count")?;
        for _ in 0..count {
            let n = c.u64("ftrace format size")?;
            let t = text(c.bytes_u64(n, "ftrace format")?);
            if let Some(e) = EventFormat::parse("ftrace", &t) {
                self.formats.push(e);
            }
        }
        Ok(())
    }

    /// Every event system's formats.
    pub(super) fn parse_events(&mut self, c: &mut Cur<'_>) -> Result<()> {
        let nsys = c.u32("event system count")?;
        for _ in 0..nsys {
            let sys = text(c.cstr("event system name")?);
            let count = c.u32("event count")?;
            for _ in 0..count {
                let n = c.u64("event format size")?;
                let t = text(c.bytes_u64(n, "event format")?);
                if let Some(e) = EventFormat::parse(&sys, &t) {
                    self.formats.push(e);
                }
            }
        }
        Ok(())
    }

    /// Kallsyms (`which` 0) or printk formats (1): skipped, bounds checked.
    pub(super) fn parse_kallsyms_printk(&mut self, c: &mut Cur<'_>, which: u8) -> Result<()> {
        let what = if which == 0 { "kallsyms" } else { "printk" };
        let n = c.u32(what)?;
        c.bytes_u64(u64::from(n), what)?;
        Ok(())
    }

    /// The pid → command name lines.
    pub(super) fn parse_cmdlines(&mut self, c: &mut Cur<'_>) -> Result<()> {
        let n = c.u64("cmdlines size")?;
        let t = text(c.bytes_u64(n, "cmdlines")?);
        for line in t.lines() {
            let line = line.trim_start();
            if let Some((pid, comm)) = line.split_once(' ') {
                if let Ok(pid) = pid.parse::<i64>() {
                    self.cmdlines.insert(pid, comm.to_owned());
                }
            }
        }
        Ok(())
    }

    /// The clock the TRACECLOCK option names, if any.
    pub(super) fn take_clock_option(&mut self) {
        if let Some(o) = self.options.iter().find(|o| o.id == OPTION_TRACECLOCK) {
            if let Some(n) = clock_name(&o.text()) {
                self.clock = Some(n);
            }
        }
    }

    /// Refuses per-CPU data that overlaps, is not page-aligned or runs past the `len`-byte
    /// file: what the record iterators walk is then inside the file, and each byte once.
    pub(super) fn check_cpu_data(&self, len: u64) -> Result<()> {
        // Each CPU's data is its own: overlapping regions (no writer makes them) would let a
        // small file hold any number of copies of its pages for the readers to walk.
        let mut regions: Vec<(u64, u64, u32)> = Vec::new();
        for &(cpu, off, size) in &self.cpu_data {
            if size > 0 {
                regions.push((off, off.saturating_add(size), cpu));
            }
        }
        regions.sort_unstable();
        for w in regions.windows(2) {
            if w[1].0 < w[0].1 {
                return corrupt(
                    format!("cpu {} data overlaps cpu {}'s", w[1].2, w[0].2),
                    w[1].0,
                );
            }
        }
        for &(cpu, off, size) in &self.cpu_data {
            if size == 0 {
                continue;
            }
            // Writers put each CPU's pages at page-aligned offsets, and trace-cmd maps them by
            // page (it refuses a file where they are not); data elsewhere is a damaged table.
            if off % u64::from(self.page_size) != 0 {
                return corrupt(
                    format!(
                        "cpu {cpu} data at {off} is not aligned to the {}-byte page size",
                        self.page_size
                    ),
                    off,
                );
            }
            let end = off.checked_add(size);
            if end.is_none_or(|e| e > len) {
                return corrupt(
                    format!("cpu {cpu} data {off}+{size} runs past the end of the file ({len})"),
                    off,
                );
            }
        }
        Ok(())
    }
}
