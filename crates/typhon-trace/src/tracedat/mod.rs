//! A trace.dat reader: version 6, and version 7 (the sectioned format trace-cmd ≥ 3.0 writes by
//! default) when uncompressed; a compressed file gives [`TraceDatError::Compressed`]. It reads files from any writer (kernel events included) far enough to list event
//! formats, cmdlines, options and per-CPU page data, and to iterate records per CPU or merged
//! across CPUs in time order.
//!
//! Every length and offset read from the file is checked against the file: corrupt or
//! truncated input gives a [`TraceDatError`], never a panic or an allocation sized by the file.
//! Version 7 sections may not share a byte and the options chain must move past each section
//! it leaves (one that nests, repeats or points back is refused), so what parsing copies out
//! adds up to at most the file's size; a declared CPU count costs nothing per CPU.
//! Pages are walked with the [`crate::kbuffer`] port (libtraceevent kbuffer semantics).

use crate::kbuffer::{Endian, KBuffer, LongSize};
use core::fmt;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use typhon_recorder::tracedat::MAGIC;
pub use typhon_recorder::tracedat::{
    format, write_tracedat, write_tracedat_with, FileMeta, SlotMeta, SlotPages, META_FORMAT,
    OPTION_TRACECLOCK, OPTION_TYPHON_META, OPTION_VERSION,
};

/// Why a trace.dat file could not be read.
///
/// ```
/// use typhon_trace::tracedat::{TraceFile, TraceDatError};
/// assert!(matches!(TraceFile::parse(b"nope".to_vec()), Err(TraceDatError::Truncated { .. })));
/// assert!(matches!(TraceFile::parse(vec![0u8; 64]), Err(TraceDatError::BadMagic)));
/// ```
#[derive(Debug)]
pub enum TraceDatError {
    /// The file could not be read.
    Io(std::io::Error),
    /// The file does not start with the trace.dat magic.
    BadMagic,
    /// A file version this reader does not handle (not 6 or 7).
    UnsupportedVersion(String),
    /// A version 7 file whose sections are compressed (the algorithm's name).
    Compressed(String),
    /// The file ends inside a structure.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// File offset where it starts.
        at: u64,
    },
    /// A structure holds an impossible value.
    Corrupt {
        /// What is wrong.
        what: String,
        /// File offset of the structure.
        at: u64,
    },
    /// One page of a CPU's record data is damaged. The record iterators yield this once for the
    /// page, in place of the records from the damage to the page's end, and go on with the
    /// next page: the error is counted, not the end of the reading.
    DamagedPage {
        /// The CPU (thread slot) whose data holds the page.
        cpu: u32,
        /// File offset of the page.
        page_at: u64,
        /// File offset where the damage was found (the page's, or the bad record's).
        at: u64,
        /// Good records read from the page before the damage.
        records_before: u32,
        /// What is wrong.
        what: String,
    },
}

impl fmt::Display for TraceDatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceDatError::Io(e) => write!(f, "cannot read trace.dat: {e}"),
            TraceDatError::BadMagic => f.write_str("not a trace.dat file (bad magic)"),
            TraceDatError::UnsupportedVersion(v) => {
                write!(f, "trace.dat version {v:?} is not supported (6 and 7 are)")
            }
            TraceDatError::Compressed(c) => write!(
                f,
                "trace.dat is compressed with {c:?}; only uncompressed files are supported \
                 (convert with `trace-cmd convert --compression none`)"
            ),
            TraceDatError::Truncated { what, at } => {
                write!(f, "trace.dat truncated: {what} at offset {at}")
            }
            TraceDatError::Corrupt { what, at } => {
                write!(f, "trace.dat corrupt at offset {at}: {what}")
            }
            TraceDatError::DamagedPage {
                cpu,
                page_at,
                at,
                records_before,
                what,
            } => write!(
                f,
                "cpu {cpu}: page at offset {page_at} damaged at offset {at} ({what}); \
                 skipped after its first {records_before} records"
            ),
        }
    }
}

impl std::error::Error for TraceDatError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceDatError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for TraceDatError {
    fn from(e: std::io::Error) -> Self {
        TraceDatError::Io(e)
    }
}

type Result<T> = std::result::Result<T, TraceDatError>;

/// trace-cmd option id of the CPU count (version 7).
const OPTION_CPUCOUNT: u16 = 8;
/// Largest CPU count accepted (Linux's NR_CPUS tops out at 8192): bounds the per-CPU table.
const MAX_CPUS: u32 = 1 << 16;

fn corrupt<T>(what: impl Into<String>, at: u64) -> Result<T> {
    Err(TraceDatError::Corrupt {
        what: what.into(),
        at,
    })
}

/// A bounds-checked cursor over the file bytes.
struct Cur<'a> {
    d: &'a [u8],
    pos: usize,
    be: bool,
}

impl<'a> Cur<'a> {
    fn at(d: &'a [u8], pos: usize, be: bool) -> Self {
        Self { d, pos, be }
    }
    fn off(&self) -> u64 {
        self.pos as u64
    }
    fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.d.len());
        match end {
            Some(e) => {
                let s = &self.d[self.pos..e];
                self.pos = e;
                Ok(s)
            }
            None => Err(TraceDatError::Truncated {
                what,
                at: self.off(),
            }),
        }
    }
    fn bytes_u64(&mut self, n: u64, what: &'static str) -> Result<&'a [u8]> {
        let n = usize::try_from(n).map_err(|_| TraceDatError::Truncated {
            what,
            at: self.off(),
        })?;
        self.bytes(n, what)
    }
    fn num(&mut self, n: usize, what: &'static str) -> Result<u64> {
        let b = self.bytes(n, what)?;
        Ok(read_uint(b, self.be))
    }
    fn u16(&mut self, what: &'static str) -> Result<u16> {
        Ok(self.num(2, what)? as u16)
    }
    fn u32(&mut self, what: &'static str) -> Result<u32> {
        Ok(self.num(4, what)? as u32)
    }
    fn u64(&mut self, what: &'static str) -> Result<u64> {
        self.num(8, what)
    }
    fn cstr(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let rest = self.d.get(self.pos..).unwrap_or(&[]);
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                let s = &rest[..n];
                self.pos += n + 1;
                Ok(s)
            }
            None => Err(TraceDatError::Truncated {
                what,
                at: self.off(),
            }),
        }
    }
    fn expect(&mut self, lit: &[u8], what: &'static str) -> Result<()> {
        let at = self.off();
        if self.bytes(lit.len(), what)? != lit {
            return corrupt(format!("expected {what}"), at);
        }
        Ok(())
    }
}

/// Reads an unsigned integer of 1..=8 bytes in the given byte order.
fn read_uint(b: &[u8], be: bool) -> u64 {
    let mut v = 0u64;
    if be {
        for &x in b.iter().take(8) {
            v = (v << 8) | u64::from(x);
        }
    } else {
        for &x in b.iter().take(8).rev() {
            v = (v << 8) | u64::from(x);
        }
    }
    v
}

/// One field of an event format, as parsed from the `format` text.
///
/// ```
/// use typhon_trace::tracedat::FieldFormat;
/// let f = FieldFormat { ty: "u16".into(), name: "seq".into(), array: None, offset: 16,
///                       size: 2, signed: false, common: false };
/// assert_eq!(f.read(&[0u8; 16].iter().chain(&[0x34, 0x12]).copied().collect::<Vec<_>>()),
///            Some(0x1234));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldFormat {
    /// C type as written (`unsigned char`, `u64`, `__data_loc char[]`, ...).
    pub ty: String,
    /// Field name without array brackets.
    pub name: String,
    /// `Some(n)` for `name[n]`, `Some(0)` for `name[]`, `None` for a scalar.
    pub array: Option<usize>,
    /// Offset inside the record payload.
    pub offset: usize,
    /// Size in bytes (0 for a trailing `[]` array: to the end of the record).
    pub size: usize,
    /// Whether the format says `signed:1`.
    pub signed: bool,
    /// Whether the field is in the common block.
    pub common: bool,
}

impl FieldFormat {
    /// The field's value in little-endian record `data` as an integer (sign-extended when
    /// signed), for scalar fields of 1, 2, 4 or 8 bytes; `None` otherwise or if out of bounds.
    ///
    /// ```
    /// use typhon_trace::tracedat::FieldFormat;
    /// let f = FieldFormat { ty: "int".into(), name: "x".into(), array: None, offset: 0,
    ///                       size: 4, signed: true, common: false };
    /// assert_eq!(f.read(&(-5i32).to_le_bytes()), Some(-5i64 as u64));
    /// ```
    pub fn read(&self, data: &[u8]) -> Option<u64> {
        self.read_endian(data, false)
    }

    /// [`read`](Self::read) for a record of a file with either byte order
    /// ([`TraceFile::big_endian`]).
    ///
    /// ```
    /// use typhon_trace::tracedat::FieldFormat;
    /// let f = FieldFormat { ty: "u16".into(), name: "x".into(), array: None, offset: 0,
    ///                       size: 2, signed: false, common: false };
    /// assert_eq!(f.read_endian(&[0x01, 0x02], true), Some(0x0102));
    /// assert_eq!(f.read_endian(&[0x01, 0x02], false), Some(0x0201));
    /// ```
    pub fn read_endian(&self, data: &[u8], big_endian: bool) -> Option<u64> {
        if self.array.is_some() || !matches!(self.size, 1 | 2 | 4 | 8) {
            return None;
        }
        let b = data.get(self.offset..self.offset.checked_add(self.size)?)?;
        let v = read_uint(b, big_endian);
        if self.signed && self.size < 8 {
            let shift = 64 - 8 * self.size as u32;
            Some((((v << shift) as i64) >> shift) as u64)
        } else {
            Some(v)
        }
    }
}

/// One event format: system, name, id, fields and print format.
///
/// ```
/// use typhon_trace::tracedat::EventFormat;
/// let text = "name: x\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:u64 v;\toffset:8;\tsize:8;\tsigned:0;\n\nprint fmt: \"v=%llu\", REC->v\n";
/// let e = EventFormat::parse("sys", text).unwrap();
/// assert_eq!((e.id, e.name.as_str(), e.fields.len()), (7, "x", 2));
/// assert_eq!(e.print_fmt, "\"v=%llu\", REC->v");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// Event system (`typhon`, `sched`, ... or `ftrace`).
    pub system: String,
    /// Event name.
    pub name: String,
    /// Event id (`common_type` value).
    pub id: u32,
    /// Common fields first, then the event's own fields, in text order.
    pub fields: Vec<FieldFormat>,
    /// The `print fmt:` text after the colon, trimmed.
    pub print_fmt: String,
}

impl EventFormat {
    /// Parses a tracefs `format` text. Returns `None` if it has no name or ID.
    ///
    /// ```
    /// use typhon_trace::tracedat::EventFormat;
    /// assert!(EventFormat::parse("s", "garbage").is_none());
    /// ```
    pub fn parse(system: &str, text: &str) -> Option<Self> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        let mut print_fmt = String::new();
        let mut common = true;
        let mut in_format = false;
        for line in text.lines() {
            let t = line.trim();
            if let Some(v) = t.strip_prefix("name:") {
                name = Some(v.trim().to_owned());
            } else if let Some(v) = t.strip_prefix("ID:") {
                id = v.trim().parse::<u32>().ok();
            } else if t == "format:" {
                in_format = true;
            } else if let Some(v) = t.strip_prefix("print fmt:") {
                print_fmt = v.trim().to_owned();
                in_format = false;
            } else if in_format && t.is_empty() {
                common = false;
            } else if let Some(rest) = t.strip_prefix("field:") {
                if let Some(f) = parse_field(rest, common) {
                    fields.push(f);
                }
            }
        }
        Some(Self {
            system: system.to_owned(),
            name: name?,
            id: id?,
            fields,
            print_fmt,
        })
    }

    /// The field with this name.
    ///
    /// ```
    /// use typhon_trace::tracedat::EventFormat;
    /// let t = "name: e\nID: 1\nformat:\n\tfield:int a;\toffset:0;\tsize:4;\tsigned:1;\n";
    /// assert_eq!(EventFormat::parse("s", t).unwrap().field("a").unwrap().size, 4);
    /// ```
    pub fn field(&self, name: &str) -> Option<&FieldFormat> {
        self.fields.iter().find(|f| f.name == name)
    }
}

fn parse_field(rest: &str, common: bool) -> Option<FieldFormat> {
    let mut parts = rest.split(';').map(str::trim);
    let decl = parts.next()?;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for p in parts {
        if let Some(v) = p.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let split = decl.rfind([' ', '\t'])?;
    let (ty, mut nm) = (decl[..split].trim(), decl[split..].trim());
    let mut array = None;
    if let Some(b) = nm.find('[') {
        let inner = nm[b + 1..].trim_end_matches(']');
        array = Some(inner.parse().unwrap_or(0));
        nm = &nm[..b];
    }
    Some(FieldFormat {
        ty: ty.to_owned(),
        name: nm.to_owned(),
        array,
        offset: offset?,
        size: size?,
        signed,
        common,
    })
}

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

/// A parsed trace.dat file held in memory.
///
/// ```
/// use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
/// let mut out = std::io::Cursor::new(Vec::new());
/// write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
/// let f = TraceFile::parse(out.into_inner()).unwrap();
/// assert_eq!((f.version(), f.page_size(), f.clock()), (6, 4096, Some("mono")));
/// assert_eq!(f.records().count(), 0);
/// ```
#[derive(Debug)]
pub struct TraceFile {
    data: Vec<u8>,
    version: u32,
    big_endian: bool,
    long_size: u8,
    page_size: u32,
    page_header_size: usize,
    commit_size: usize,
    header_page: String,
    header_event: String,
    formats: Vec<EventFormat>,
    cmdlines: BTreeMap<i64, String>,
    cpus: u32,
    options: Vec<TraceOption>,
    clock: Option<String>,
    /// (cpu, file offset, size) of the top buffer's page data, sorted by cpu, for the CPUs the
    /// file's table lists with a non-zero entry: a file may declare up to [`MAX_CPUS`] CPUs in
    /// a few bytes (v7's CPUCOUNT option), so nothing is held per declared CPU.
    cpu_data: Vec<(u32, u64, u64)>,
    /// Format index by id (the first format with an id wins, as a linear search would find).
    by_id: HashMap<u32, usize>,
    /// The first format's `common_type` field, which says where a record's event id is.
    common_type: Option<FieldFormat>,
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The clock name in `[...]` of a trace_clock text, or the trimmed text itself.
fn clock_name(t: &str) -> Option<String> {
    if let (Some(a), Some(b)) = (t.find('['), t.find(']')) {
        if a < b {
            return Some(t[a + 1..b].to_owned());
        }
    }
    let t = t.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    (!t.is_empty()).then(|| t.to_owned())
}

impl TraceFile {
    /// Reads and parses the file at `path`.
    ///
    /// ```
    /// use typhon_trace::tracedat::TraceFile;
    /// assert!(TraceFile::open("/nonexistent/trace.dat").is_err());
    /// ```
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::parse(std::fs::read(path)?)
    }

    /// Parses a whole file held in memory.
    ///
    /// ```
    /// use typhon_trace::tracedat::{TraceFile, TraceDatError};
    /// let mut v = b"\x17\x08\x44tracing9\0".to_vec();
    /// v.extend_from_slice(&[0, 8, 0, 16, 0, 0]);
    /// assert!(matches!(TraceFile::parse(v), Err(TraceDatError::UnsupportedVersion(_))));
    /// ```
    pub fn parse(data: Vec<u8>) -> Result<Self> {
        let mut f = TraceFile {
            data: Vec::new(),
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
            by_id: HashMap::new(),
            common_type: None,
        };
        f.parse_inner(&data)?;
        f.check_cpu_data(data.len() as u64)?;
        for (i, e) in f.formats.iter().enumerate() {
            f.by_id.entry(e.id).or_insert(i);
        }
        f.common_type = f
            .formats
            .first()
            .and_then(|e| e.field("common_type"))
            .cloned();
        f.data = data;
        Ok(f)
    }

    fn parse_inner(&mut self, d: &[u8]) -> Result<()> {
        let mut c = Cur::at(d, 0, false);
        if c.bytes(MAGIC.len(), "magic")? != MAGIC {
            return Err(TraceDatError::BadMagic);
        }
        let ver = c.cstr("version")?;
        let ver = text(ver);
        self.version = match ver.as_str() {
            "6" => 6,
            "7" => 7,
            _ => return Err(TraceDatError::UnsupportedVersion(ver)),
        };
        let endian = c.bytes(1, "endian")?[0];
        self.big_endian = match endian {
            0 => false,
            1 => true,
            e => return corrupt(format!("endian byte {e}"), c.off() - 1),
        };
        c.be = self.big_endian;
        self.long_size = c.bytes(1, "long size")?[0];
        let at = c.off();
        self.page_size = c.u32("page size")?;
        if !self.page_size.is_power_of_two() || self.page_size < 64 {
            return corrupt(format!("page size {}", self.page_size), at);
        }
        if self.version == 6 {
            self.parse_v6(c)
        } else {
            self.parse_v7(c)
        }
    }

    fn parse_headers(&mut self, c: &mut Cur<'_>) -> Result<()> {
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

    fn parse_ftrace(&mut self, c: &mut Cur<'_>) -> Result<()> {
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

    fn parse_events(&mut self, c: &mut Cur<'_>) -> Result<()> {
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

    fn parse_kallsyms_printk(&mut self, c: &mut Cur<'_>, which: u8) -> Result<()> {
        let what = if which == 0 { "kallsyms" } else { "printk" };
        let n = c.u32(what)?;
        c.bytes_u64(u64::from(n), what)?;
        Ok(())
    }

    fn parse_cmdlines(&mut self, c: &mut Cur<'_>) -> Result<()> {
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

    fn take_clock_option(&mut self) {
        if let Some(o) = self.options.iter().find(|o| o.id == OPTION_TRACECLOCK) {
            if let Some(n) = clock_name(&o.text()) {
                self.clock = Some(n);
            }
        }
    }

    fn parse_v6(&mut self, mut c: Cur<'_>) -> Result<()> {
        self.parse_headers(&mut c)?;
        self.parse_ftrace(&mut c)?;
        self.parse_events(&mut c)?;
        self.parse_kallsyms_printk(&mut c, 0)?;
        self.parse_kallsyms_printk(&mut c, 1)?;
        self.parse_cmdlines(&mut c)?;
        let at = c.off();
        self.cpus = c.u32("cpu count")?;
        if self.cpus > MAX_CPUS {
            return corrupt(
                format!("{} cpus (at most {MAX_CPUS} supported)", self.cpus),
                at,
            );
        }
        let mut has_clock = false;
        loop {
            let at = c.off();
            let tag = c.bytes(10, "section tag")?;
            match tag {
                b"options  \0" => loop {
                    let id = c.u16("option id")?;
                    if id == 0 {
                        break;
                    }
                    let n = c.u32("option size")?;
                    let data = c.bytes_u64(u64::from(n), "option data")?.to_vec();
                    has_clock |= id == OPTION_TRACECLOCK;
                    self.options.push(TraceOption { id, data });
                },
                b"flyrecord\0" => break,
                b"latency  \0" => {
                    return corrupt("latency-format file (text, no page data)", at);
                }
                _ => return corrupt("expected options, flyrecord or latency", at),
            }
        }
        self.take_clock_option();
        // The table: cpus × 16 bytes, bounded by the file before any allocation.
        let table_len = u64::from(self.cpus) * 16;
        let table = c.bytes_u64(table_len, "flyrecord cpu table")?;
        let mut tc = Cur::at(table, 0, self.big_endian);
        for cpu in 0..self.cpus {
            let off = tc.u64("cpu offset")?;
            let size = tc.u64("cpu size")?;
            if (off, size) != (0, 0) {
                self.cpu_data.push((cpu, off, size));
            }
        }
        if has_clock {
            let n = c.u64("trace_clock size")?;
            let t = text(c.bytes_u64(n, "trace_clock")?);
            if let Some(name) = clock_name(&t) {
                self.clock = Some(name);
            }
        }
        Ok(())
    }

    fn section_header(&self, d: &[u8], off: u64, want: u16) -> Result<(usize, u64)> {
        let pos = usize::try_from(off).ok().filter(|&p| p < d.len());
        let Some(pos) = pos else {
            return Err(TraceDatError::Truncated {
                what: "section header",
                at: off,
            });
        };
        let mut c = Cur::at(d, pos, self.big_endian);
        let id = c.u16("section id")?;
        let flags = c.u16("section flags")?;
        let _desc = c.u32("section description")?;
        let size = c.u64("section size")?;
        if id != want {
            return corrupt(format!("section id {id}, expected {want}"), off);
        }
        if flags & 1 != 0 {
            return Err(TraceDatError::Compressed("compressed section".into()));
        }
        let body = c.pos;
        if (body as u64)
            .checked_add(size)
            .map_or(true, |e| e > d.len() as u64)
        {
            return Err(TraceDatError::Truncated {
                what: "section body",
                at: off,
            });
        }
        Ok((body, size))
    }

    fn parse_v7(&mut self, mut c: Cur<'_>) -> Result<()> {
        let d = c.d;
        let comp = text(c.cstr("compression name")?);
        let _comp_ver = c.cstr("compression version")?;
        if !comp.is_empty() && comp != "none" {
            return Err(TraceDatError::Compressed(comp));
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
            let (body, size) = self.section_header(d, next, 0)?;
            let end = body + size as usize;
            spans.push((next, end as u64));
            min_next = end as u64;
            let mut oc = Cur::at(&d[..end], body, self.big_endian);
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
            let (body, size) = self.section_header(d, off, id)?;
            spans.push((off, (body as u64) + size));
            bodies.push((id, body, size));
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
        for (id, body, size) in bodies {
            let mut sc = Cur::at(&d[..body + size as usize], body, self.big_endian);
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
        r
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

    fn check_cpu_data(&self, len: u64) -> Result<()> {
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
            if end.map_or(true, |e| e > len) {
                return corrupt(
                    format!("cpu {cpu} data {off}+{size} runs past the end of the file ({len})"),
                    off,
                );
            }
        }
        Ok(())
    }
}

impl TraceFile {
    /// File version: 6 or 7.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// assert_eq!(TraceFile::parse(out.into_inner()).unwrap().version(), 6);
    /// ```
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Whether the file's numbers are big-endian.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// assert!(!TraceFile::parse(out.into_inner()).unwrap().big_endian());
    /// ```
    pub fn big_endian(&self) -> bool {
        self.big_endian
    }

    /// The writer's `sizeof(long)` from the file header.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// assert_eq!(TraceFile::parse(out.into_inner()).unwrap().long_size(), 8);
    /// ```
    pub fn long_size(&self) -> u8 {
        self.long_size
    }

    /// Page (sub-buffer) size: the stride of the per-CPU data.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(8192), &mut []).unwrap();
    /// assert_eq!(TraceFile::parse(out.into_inner()).unwrap().page_size(), 8192);
    /// ```
    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// The `header_page` text; its commit field's size is kbuffer's long size.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert!(f.header_page().contains("size:4080;"));
    /// assert_eq!(f.page_header_size(), 16);
    /// ```
    pub fn header_page(&self) -> &str {
        &self.header_page
    }

    /// Bytes of each page's header (16 with an 8-byte commit, 12 with a 4-byte one).
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// assert_eq!(TraceFile::parse(out.into_inner()).unwrap().page_header_size(), 16);
    /// ```
    pub fn page_header_size(&self) -> usize {
        self.page_header_size
    }

    /// The `header_event` text (informational).
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// assert!(TraceFile::parse(out.into_inner()).unwrap().header_event().contains("type_len"));
    /// ```
    pub fn header_event(&self) -> &str {
        &self.header_event
    }

    /// Every event format of the file (ftrace ones first, then each system's).
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.formats().len(), typhon_recorder::codec::KINDS.len());
    /// ```
    pub fn formats(&self) -> &[EventFormat] {
        &self.formats
    }

    /// The format whose id is `id`.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.event(255).unwrap().name, "CeLog");
    /// ```
    pub fn event(&self, id: u32) -> Option<&EventFormat> {
        // By index: a hostile file's many formats must not cost a search per record.
        self.by_id.get(&id).and_then(|&i| self.formats.get(i))
    }

    /// The event of a record: the `common_type` field of the first format (libtraceevent's
    /// rule) read from the record, then looked up.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.event_of(&[12, 0, 77, 1]).unwrap().name, "ThreadInfo");
    /// ```
    pub fn event_of(&self, data: &[u8]) -> Option<&EventFormat> {
        let ct = self.common_type.as_ref()?;
        let id = ct.read_endian(data, self.big_endian)?;
        self.event(u32::try_from(id).ok()?)
    }

    /// pid → command name, from the cmdlines (for Typhon files: slot → thread name).
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// assert!(TraceFile::parse(out.into_inner()).unwrap().cmdlines().is_empty());
    /// ```
    pub fn cmdlines(&self) -> &BTreeMap<i64, String> {
        &self.cmdlines
    }

    /// The command name of `pid`.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// assert_eq!(TraceFile::parse(out.into_inner()).unwrap().cmdline(1), None);
    /// ```
    pub fn cmdline(&self, pid: i64) -> Option<&str> {
        self.cmdlines.get(&pid).map(String::as_str)
    }

    /// Number of CPUs (for Typhon files: highest slot + 1).
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// assert_eq!(TraceFile::parse(out.into_inner()).unwrap().cpus(), 1);
    /// ```
    pub fn cpus(&self) -> u32 {
        self.cpus
    }

    /// The options in file order (for version 7: of every options section, DONE excluded).
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile, OPTION_TRACECLOCK};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert!(f.options().iter().any(|o| o.id == OPTION_TRACECLOCK));
    /// ```
    pub fn options(&self) -> &[TraceOption] {
        &self.options
    }

    /// The trace clock's name (`mono`, `local`, ...), if the file names one.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// assert_eq!(TraceFile::parse(out.into_inner()).unwrap().clock(), Some("mono"));
    /// ```
    pub fn clock(&self) -> Option<&str> {
        self.clock.as_deref()
    }

    /// The Typhon session metadata (option [`OPTION_TYPHON_META`]): `None` if the file has none
    /// (e.g. a kernel trace), an error if it is not valid metadata JSON.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// let mut meta = FileMeta::new(4096);
    /// meta.wall_anchor_ns = 1_700_000_000_000_000_000;
    /// let mut out = std::io::Cursor::new(Vec::new());
    /// write_tracedat(&mut out, &meta, &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.typhon_meta().unwrap().unwrap(), meta);
    /// ```
    pub fn typhon_meta(&self) -> Option<Result<FileMeta>> {
        let o = self.options.iter().find(|o| o.id == OPTION_TYPHON_META)?;
        let t = o.text();
        let parsed = serde_json::from_str::<serde_json::Value>(&t)
            .map_err(|e| e.to_string())
            .and_then(|v| FileMeta::from_json(&v));
        Some(parsed.map_err(|e| TraceDatError::Corrupt {
            what: format!("typhon metadata option: {e}"),
            at: 0,
        }))
    }

    /// File offset and size of a CPU's page data (`None` for a CPU beyond [`Self::cpus`]).
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.cpu_data(0), Some((0, 0)));
    /// assert_eq!(f.cpu_data(1), None);
    /// ```
    pub fn cpu_data(&self, cpu: u32) -> Option<(u64, u64)> {
        if cpu >= self.cpus {
            return None;
        }
        match self.cpu_data.binary_search_by_key(&cpu, |e| e.0) {
            Ok(i) => Some((self.cpu_data[i].1, self.cpu_data[i].2)),
            Err(_) => Some((0, 0)),
        }
    }

    /// The whole pages of a CPU, in order. A trailing partial page is not returned (reading the
    /// CPU's records reports it as an error).
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.pages(0).count(), 0);
    /// ```
    pub fn pages(&self, cpu: u32) -> std::slice::ChunksExact<'_, u8> {
        self.cpu_bytes(cpu).chunks_exact(self.page_size as usize)
    }

    fn cpu_bytes(&self, cpu: u32) -> &[u8] {
        match self.cpu_data(cpu) {
            // Bounds were checked at parse time; `get` keeps this panic-free regardless.
            Some((off, size)) if size > 0 => usize::try_from(off)
                .ok()
                .zip(usize::try_from(size).ok())
                .and_then(|(o, s)| self.data.get(o..o.checked_add(s)?))
                .unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The records of one CPU in page order, with missed counts.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.cpu_records(0).count(), 0);
    /// ```
    pub fn cpu_records(&self, cpu: u32) -> CpuRecords<'_> {
        let long = if self.commit_size == 4 {
            LongSize::Four
        } else {
            LongSize::Eight
        };
        let endian = if self.big_endian {
            Endian::Big
        } else {
            Endian::Little
        };
        CpuRecords {
            cpu,
            pages: self.cpu_bytes(cpu).chunks(self.page_size as usize),
            page_size: self.page_size as usize,
            base: self.cpu_data(cpu).map_or(0, |d| d.0),
            page_at: 0,
            kb: KBuffer::new(long, endian),
            loaded: false,
            fresh: false,
            on_page: 0,
            done: false,
        }
    }

    /// The records of every CPU merged in time order. Ties go to the lower CPU; each CPU's own
    /// order is kept even where its timestamps go backwards.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert!(f.records().all(|r| r.is_ok()));
    /// ```
    pub fn records(&self) -> MergedRecords<'_> {
        // Only the CPUs with data: a CPU count declared by the file costs nothing per CPU.
        let its: Vec<CpuRecords<'_>> = self
            .cpu_data
            .iter()
            .filter(|e| e.0 < self.cpus && e.2 > 0)
            .map(|e| self.cpu_records(e.0))
            .collect();
        MergedRecords {
            heads: its.iter().map(|_| None).collect(),
            stalled: (0..its.len()).rev().collect(),
            its,
            heap: BinaryHeap::new(),
            pending: None,
        }
    }
}

/// Iterator over one CPU's records; see [`TraceFile::cpu_records`]. Pages are walked with the
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
    /// The loaded page is damaged at `at`: its other records are skipped and the next call
    /// goes on with the next page.
    fn damaged(&mut self, what: String, at: u64) -> Option<Result<Record<'a>>> {
        self.loaded = false;
        Some(Err(TraceDatError::DamagedPage {
            cpu: self.cpu,
            page_at: self.page_at,
            at,
            records_before: std::mem::take(&mut self.on_page),
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

/// Iterator over all CPUs' records in time order; see [`TraceFile::records`].
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
pub struct MergedRecords<'a> {
    its: Vec<CpuRecords<'a>>,
    heads: Vec<Option<Record<'a>>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// A damaged page read by `advance`, handed out before anything else: at most one is ever
    /// held, since the CPU behind it is read again only after it is handed out.
    pending: Option<TraceDatError>,
    /// CPUs to read before the next record is chosen: all of them at first, then each one
    /// whose last item was an error.
    stalled: Vec<usize>,
}

impl MergedRecords<'_> {
    /// Reads CPU `i`'s next item: a record becomes its head; a damaged page becomes `pending`
    /// (called only when none is), and the CPU is read again only after that error has been
    /// handed out, so a file of damaged pages costs no memory in proportion.
    fn advance(&mut self, i: usize) {
        match self.its[i].next() {
            Some(Ok(n)) => {
                self.heap.push(Reverse((n.ts, i)));
                self.heads[i] = Some(n);
            }
            Some(Err(e)) => {
                self.pending = Some(e);
                self.stalled.push(i);
            }
            None => {}
        }
    }
}

impl<'a> Iterator for MergedRecords<'a> {
    type Item = Result<Record<'a>>;

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
        Some(Ok(r))
    }
}
