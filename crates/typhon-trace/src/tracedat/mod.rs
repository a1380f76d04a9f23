//! A trace.dat reader: version 6, and version 7 (the sectioned format trace-cmd ≥ 3.0 writes by
//! default), uncompressed or zstd-compressed (SPEC §11; another compression gives
//! [`TraceDatError::Compressed`]). Compressed page data is decompressed a chunk at a time by
//! the streaming readers (`stream`), each chunk's sizes checked against the file and a cap. It reads
//! files from any writer (kernel events included) far enough to list event formats, cmdlines,
//! options and per-CPU page data, and to iterate records per CPU or merged across CPUs in time
//! order.
//!
//! Every length and offset read from the file is checked against the file: corrupt or
//! truncated input gives a [`TraceDatError`], never a panic or an allocation sized by the file.
//! Version 7 sections may not share a byte and the options chain must move past each section
//! it leaves (one that nests, repeats or points back is refused), so what parsing copies out
//! adds up to at most the file's size; a declared CPU count costs nothing per CPU.
//! Pages are walked with the [`crate::kbuffer`] port (libtraceevent kbuffer semantics).
//!
//! [`TraceFile::parse`] reads the file header here and hands the rest to the version's parser
//! (`v6`, `v7`); both fill one `Layout` with the parsers of the sections they share (`layout`),
//! reading through a bounds-checked cursor (`cursor`). The event formats (`formats`) and the
//! record iterators (`records`) are what a reader of the parsed file uses.

mod chunks;
mod cursor;
mod error;
mod formats;
mod layout;
mod records;
mod stream;
mod unread;
mod v6;
mod v7;

pub use error::TraceDatError;
pub use formats::{EventFormat, FieldFormat};
pub use layout::TraceOption;
pub use records::{CpuRecords, Merge, MergedRecords, Record, Timed};
pub use stream::{CpuStream, OwnedRecord};
pub use typhon_recorder::tracedat::{
    format, write_tracedat, write_tracedat_v7, write_tracedat_v7_with, write_tracedat_with,
    Compression, FileMeta, SlotMeta, SlotPages, META_FORMAT, OPTION_TRACECLOCK, OPTION_TYPHON_META,
    OPTION_VERSION,
};

use cursor::Cur;
use error::{corrupt, Result};
use layout::{text, Layout};
use std::collections::{BTreeMap, HashMap};
use typhon_recorder::tracedat::MAGIC;

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
    source: stream::Source,
    layout: Layout,
    /// Format index by id (the first format with an id wins, as a linear search would find).
    by_id: HashMap<u32, usize>,
    /// The first format's `common_type` field, which says where a record's event id is.
    common_type: Option<FieldFormat>,
    /// What the streaming readers share: the decompressed chunks they hold, bounded in total.
    pool: chunks::ChunkPool,
    /// What reading found that cannot be right, by (cpu, offset, kind): see
    /// [`Self::reader_warnings`].
    warnings: std::sync::Mutex<BTreeMap<(u32, u64, u8), String>>,
    /// The Typhon metadata's written count of each slot, read once.
    written: std::sync::OnceLock<BTreeMap<u32, u64>>,
    /// Per CPU, records the metadata says its slot wrote that reading did not find, with no
    /// damage reported for them: see [`Self::unread_records`].
    unread: std::sync::Mutex<BTreeMap<u32, u64>>,
    /// Which records [`Self::stream_records`] hands out (see [`Self::set_record_filter`]).
    filter: Option<RecordFilter>,
}

/// A predicate on records, stateful within one reading (it may follow the ThreadInfo records).
pub type KeepRecord = Box<dyn FnMut(&OwnedRecord) -> bool + Send>;

/// Makes a fresh [`KeepRecord`] for each reading of the records.
struct RecordFilter(Box<dyn Fn() -> KeepRecord + Send + Sync>);

impl std::fmt::Debug for RecordFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordFilter")
    }
}

/// One reading's predicate (what a [`RecordFilter`] made).
pub(crate) struct Keep(pub(crate) KeepRecord);

impl std::fmt::Debug for Keep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keep")
    }
}

/// The most reader warnings kept (each names a CPU and an offset; one more says how many were
/// left out).
const MAX_WARNINGS: usize = 64;

impl TraceFile {
    /// Reads and parses the file at `path`, which must be a regular file (a symlink to one is
    /// followed).
    ///
    /// The path is opened without blocking and checked on the open handle before anything is
    /// read: a FIFO, device, directory or socket is refused with [`TraceDatError::NotAFile`]
    /// (reading `/dev/zero` would never end, a FIFO would block), and at most the size the file
    /// had at open is read, so a file that grows while it is read is read to that size.
    ///
    /// ```
    /// use typhon_trace::tracedat::{TraceDatError, TraceFile};
    /// assert!(TraceFile::open("/nonexistent/trace.dat").is_err());
    /// assert!(matches!(
    ///     TraceFile::open("/dev/null"),
    ///     Err(TraceDatError::NotAFile { kind: "character device" })
    /// ));
    /// ```
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::parse(read_file(path.as_ref())?)
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
        let (layout, by_id, common_type) = Self::parse_layout(&data, v7::Src::Mem(&data))?;
        Ok(Self::new(
            stream::Source::Memory(data),
            layout,
            by_id,
            common_type,
        ))
    }

    fn new(
        source: stream::Source,
        mut layout: Layout,
        by_id: HashMap<u32, usize>,
        common_type: Option<FieldFormat>,
    ) -> Self {
        // What parsing found: file-wide warnings, in the order found.
        let mut warnings = BTreeMap::new();
        for (i, (_, w)) in std::mem::take(&mut layout.warnings).into_iter().enumerate() {
            warnings.insert((u32::MAX, i as u64, 3), w);
        }
        if layout.warnings_left_out > 0 {
            warnings.insert(
                (u32::MAX, u64::MAX, 0),
                format!("{} more warnings left out", layout.warnings_left_out),
            );
        }
        let f = TraceFile {
            source,
            layout,
            by_id,
            common_type,
            pool: chunks::ChunkPool::default(),
            warnings: std::sync::Mutex::new(warnings),
            written: Default::default(),
            unread: Default::default(),
            filter: None,
        };
        f.check_slots();
        f
    }

    /// Narrows what [`Self::stream_records`] hands out, and so what every reader built on it
    /// (the exports) sees: `make` is called at the start of each reading, and the predicate it
    /// returns is asked about each record in order (errors, damaged pages, always pass).
    /// Definitions are read before the predicate is asked, so a record left out still defines
    /// what later records use.
    ///
    /// ```
    /// use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// let mut out = std::io::Cursor::new(Vec::new());
    /// write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let mut f = TraceFile::parse(out.into_inner()).unwrap();
    /// f.set_record_filter(|| Box::new(|r| r.cpu == 1));
    /// assert_eq!(f.stream_records().count(), 0);
    /// ```
    pub fn set_record_filter(&mut self, make: impl Fn() -> KeepRecord + Send + Sync + 'static) {
        self.filter = Some(RecordFilter(Box::new(make)));
    }

    /// A new predicate of the record filter, if one is set.
    pub(crate) fn record_filter(&self) -> Option<Keep> {
        self.filter.as_ref().map(|f| Keep((f.0)()))
    }

    /// What reading the records found that cannot be right, though each record read is
    /// whole: a CPU with more records than the Typhon metadata says its slot wrote, or fewer
    /// with no damage to say why (see [`Self::unread_records`]), a chunk that repeats the one
    /// before it, time going back from one chunk to the next; and what parsing found (an
    /// option id this reader does not know, a buffer instance it does not read, no top
    /// buffer, a slot with no data). One line each, naming the CPU where there is one (at
    /// most 64, then how many more), in CPU and file order, the file's own last; filled in
    /// as the records are read, so ask after reading them.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.stream_records().count(), 0);
    /// assert!(f.reader_warnings().is_empty());
    /// ```
    pub fn reader_warnings(&self) -> Vec<String> {
        let w = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        w.iter()
            .map(|(&(cpu, _, _), m)| {
                if cpu == u32::MAX {
                    m.clone()
                } else {
                    format!("cpu {cpu}: {m}")
                }
            })
            .collect()
    }

    /// Records a reader warning of kind `kind` about `cpu` at `at` (once, however often it
    /// is read).
    pub(super) fn warn(&self, cpu: u32, at: u64, kind: u8, what: String) {
        let mut w = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        if w.len() < MAX_WARNINGS || w.contains_key(&(cpu, at, kind)) {
            w.insert((cpu, at, kind), what);
        } else {
            let more = w
                .remove(&(u32::MAX, u64::MAX, 0))
                .and_then(|m| m.split(' ').next()?.parse::<u64>().ok())
                .unwrap_or(0);
            w.insert(
                (u32::MAX, u64::MAX, 0),
                format!("{} more warnings left out", more + 1),
            );
        }
    }

    /// The written count the Typhon metadata gives the slot `cpu`, if it counts the slot's
    /// records (a slot whose counts are all 0 is taken as described without them).
    pub(super) fn written(&self, cpu: u32) -> Option<u64> {
        self.written_counts().get(&cpu).copied()
    }

    /// The written count of each slot the Typhon metadata counts (see [`Self::written`]).
    fn written_counts(&self) -> &BTreeMap<u32, u64> {
        self.written.get_or_init(|| match self.typhon_meta() {
            // A slot described without counts (as hand-made files have) says nothing.
            Some(Ok(m)) => m
                .slots
                .iter()
                .filter(|s| s.attempted > 0 || s.written > 0)
                .map(|s| (u32::from(s.slot), s.written))
                .collect(),
            _ => BTreeMap::new(),
        })
    }

    /// The layout of the file `src` from its first bytes `data` (all of them, or a prefix
    /// holding the version 6 metadata; version 7 sections are read from `src`), with the format
    /// index and the `common_type` field.
    #[allow(clippy::type_complexity)]
    fn parse_layout(
        data: &[u8],
        src: v7::Src<'_>,
    ) -> Result<(Layout, HashMap<u32, usize>, Option<FieldFormat>)> {
        let mut layout = read_layout(data, src)?;
        layout.file_len = src.len();
        layout.check_cpu_data(src.len())?;
        let mut by_id = HashMap::new();
        for (i, e) in layout.formats.iter().enumerate() {
            by_id.entry(e.id).or_insert(i);
        }
        let common_type = layout
            .formats
            .first()
            .and_then(|e| e.field("common_type"))
            .cloned();
        Ok((layout, by_id, common_type))
    }
}

/// What a file that is not a regular file is, for an error.
fn kind_of(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO (named pipe)"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

/// The bytes of the regular file at `path` (a symlink to one is followed), at most as many as
/// it had when opened: what [`TraceFile::open`] reads. A FIFO, device, directory or socket is
/// refused with [`TraceDatError::NotAFile`] without blocking or reading.
///
/// ```
/// use typhon_trace::tracedat::{read_file, TraceDatError};
/// assert!(matches!(read_file("/dev/zero".as_ref()), Err(TraceDatError::NotAFile { .. })));
/// assert!(matches!(read_file("/".as_ref()), Err(TraceDatError::NotAFile { kind: "directory" })));
/// ```
pub fn read_file(path: &std::path::Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let f = open_regular(path)?;
    let size = f.metadata()?.len();
    let mut data = Vec::new();
    // The size at open bounds the read and the allocation; a file that shrank since reads short
    // and fails to parse like any truncated file.
    data.try_reserve_exact(usize::try_from(size).map_err(|_| {
        TraceDatError::Io(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!("{size} bytes do not fit in memory"),
        ))
    })?)
    .map_err(|e| TraceDatError::Io(std::io::Error::new(std::io::ErrorKind::OutOfMemory, e)))?;
    f.take(size).read_to_end(&mut data)?;
    Ok(data)
}

/// The regular file at `path` opened for reading (a symlink to one is followed); a FIFO,
/// device, directory or socket is refused with [`TraceDatError::NotAFile`] without blocking.
fn open_regular(path: &std::path::Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO with no writer (or a device that waits) returns at once, so
    // the type check below can refuse it; on a regular file the flag changes nothing.
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        // A socket cannot be opened at all (ENXIO): say what it is rather than "no such device".
        Err(e) => {
            return Err(match std::fs::metadata(path) {
                Ok(m) if !m.is_file() => TraceDatError::NotAFile {
                    kind: kind_of(m.file_type()),
                },
                _ => TraceDatError::Io(e),
            })
        }
    };
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(TraceDatError::NotAFile {
            kind: kind_of(m.file_type()),
        });
    }
    Ok(f)
}

/// The file header (magic, version, byte order, long and page sizes), then the rest by the
/// version's parser.
fn read_layout(d: &[u8], src: v7::Src<'_>) -> Result<Layout> {
    let mut l = Layout::default();
    let mut c = Cur::at(d, 0, false);
    if c.bytes(MAGIC.len(), "magic")? != MAGIC {
        return Err(TraceDatError::BadMagic);
    }
    let ver = c.cstr("version")?;
    let ver = text(ver);
    l.version = match ver.as_str() {
        "6" => 6,
        "7" => 7,
        _ => return Err(TraceDatError::UnsupportedVersion(ver)),
    };
    let endian = c.bytes(1, "endian")?[0];
    l.big_endian = match endian {
        0 => false,
        1 => true,
        e => return corrupt(format!("endian byte {e}"), c.off() - 1),
    };
    c.be = l.big_endian;
    l.long_size = c.bytes(1, "long size")?[0];
    let at = c.off();
    l.page_size = c.u32("page size")?;
    if !l.page_size.is_power_of_two() || l.page_size < 64 {
        return corrupt(format!("page size {}", l.page_size), at);
    }
    if l.version == 6 {
        l.parse_v6(c)?;
    } else {
        l.parse_v7(c, src)?;
    }
    Ok(l)
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
        self.layout.version
    }

    /// The compression of a version 7 file (`Some("zstd")`), `None` when it is uncompressed.
    /// The records of a compressed file are read with [`Self::stream_records`],
    /// [`Self::stream_cpu`] and [`CpuStream::next_page`], which decompress one chunk at a
    /// time; the borrowed accessors ([`Self::pages`], [`Self::cpu_records`],
    /// [`Self::records`], [`Self::bytes_at`]) see no page data in it.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// assert_eq!(TraceFile::parse(out.into_inner()).unwrap().compression(), None);
    /// ```
    pub fn compression(&self) -> Option<&str> {
        self.layout.compression.as_deref()
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
        self.layout.big_endian
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
        self.layout.long_size
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
        self.layout.page_size
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
        &self.layout.header_page
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
        self.layout.page_header_size
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
        &self.layout.header_event
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
        &self.layout.formats
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
        self.by_id
            .get(&id)
            .and_then(|&i| self.layout.formats.get(i))
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
        let id = ct.read_endian(data, self.layout.big_endian)?;
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
        &self.layout.cmdlines
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
        self.layout.cmdlines.get(&pid).map(String::as_str)
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
        self.layout.cpus
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
        &self.layout.options
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
        self.layout.clock.as_deref()
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
        let o = self
            .layout
            .options
            .iter()
            .find(|o| o.id == OPTION_TYPHON_META)?;
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
        if cpu >= self.layout.cpus {
            return None;
        }
        match self.layout.cpu_data.binary_search_by_key(&cpu, |e| e.0) {
            Ok(i) => Some((self.layout.cpu_data[i].1, self.layout.cpu_data[i].2)),
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
        self.cpu_bytes(cpu)
            .chunks_exact(self.layout.page_size as usize)
    }

    fn cpu_bytes(&self, cpu: u32) -> &[u8] {
        if self.layout.chunked {
            // Compressed chunks are not pages: only the streaming readers decompress them.
            return &[];
        }
        match self.cpu_data(cpu) {
            // Bounds were checked at parse time; `get` keeps this panic-free regardless.
            Some((off, size)) if size > 0 => usize::try_from(off)
                .ok()
                .zip(usize::try_from(size).ok())
                .and_then(|(o, s)| match &self.source {
                    stream::Source::Memory(d) => d.get(o..o.checked_add(s)?),
                    stream::Source::File(..) => None,
                })
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
        let (long, endian) = self.page_format();
        CpuRecords::new(
            cpu,
            self.cpu_bytes(cpu),
            self.layout.page_size as usize,
            self.cpu_data(cpu).map_or(0, |d| d.0),
            long,
            endian,
        )
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
        MergedRecords::new(self.data_cpus().map(|c| self.cpu_records(c)).collect())
    }

    /// The CPUs with data (a non-empty entry in the file's per-CPU table), in order.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, SlotPages, TraceFile};
    /// let pages = vec![0u8; 4096];
    /// let mut out = std::io::Cursor::new(Vec::new());
    /// write_tracedat(&mut out, &FileMeta::new(4096), &mut [SlotPages::from_bytes(3, &pages)]).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.data_cpus().collect::<Vec<_>>(), [3]);
    /// ```
    pub fn data_cpus(&self) -> impl Iterator<Item = u32> + '_ {
        self.layout
            .cpu_data
            .iter()
            .filter(|e| e.0 < self.layout.cpus && e.2 > 0)
            .map(|e| e.0)
    }

    /// The bytes at `at..at + len` of an in-memory file (`None` for a streaming one, or
    /// outside the file).
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.bytes_at(0, 3), Some(&b"\x17\x08\x44"[..]));
    /// ```
    pub fn bytes_at(&self, at: u64, len: usize) -> Option<&[u8]> {
        if self.layout.chunked {
            // Record offsets in compressed data are virtual, not the file's.
            return None;
        }
        match &self.source {
            stream::Source::Memory(d) => {
                let a = usize::try_from(at).ok()?;
                d.get(a..a.checked_add(len)?)
            }
            stream::Source::File(..) => None,
        }
    }
}
