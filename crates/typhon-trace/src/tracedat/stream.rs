//! Reading records without holding the file: [`TraceFile::open_streaming`] keeps only the
//! metadata (headers, formats, cmdlines, options, the per-CPU table), and
//! [`TraceFile::stream_records`] walks each CPU's pages one at a time, read with `pread` into a
//! per-CPU page buffer. Records are handed out as [`OwnedRecord`]s (copies: they are small),
//! so memory is one page per CPU whatever the file's size.
//!
//! ```text
//!  file ── pread(page) ──► per-CPU page buffer ── kbuffer ──► that page's records (copied)
//!                                                               │ merged by time across CPUs
//!                                                               ▼
//!                                                       OwnedRecord stream
//! ```
//!
//! The same iterator walks an in-memory file ([`TraceFile::parse`]), so one consumer serves
//! both.

use super::chunks::{Held, Refused};
use super::cursor::read_uint;
use super::error::{Result, TraceDatError};
use super::records::CpuRecords;
use super::TraceFile;
use crate::kbuffer::{Endian, LongSize};
use std::collections::VecDeque;
use std::os::unix::fs::FileExt;
use typhon_recorder::tracedat::MAX_CHUNK_BYTES;

/// Where a [`TraceFile`]'s bytes are: all in memory, or in an open file read page by page.
#[derive(Debug)]
pub(super) enum Source {
    /// The whole file.
    Memory(Vec<u8>),
    /// The open file and its path (for errors).
    File(std::fs::File, std::path::PathBuf),
}

/// One record, copied out of its page: what [`TraceFile::stream_records`] yields.
///
/// ```
/// use typhon_trace::tracedat::OwnedRecord;
/// let r = OwnedRecord { cpu: 1, ts: 5, at: 64, data: vec![1, 2, 3, 4], missed_before: None };
/// assert_eq!(r.data.len(), 4);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedRecord {
    /// CPU number (for Typhon files: the thread slot).
    pub cpu: u32,
    /// Timestamp in the file's clock units (ns for Typhon files).
    pub ts: u64,
    /// File offset of the record's data.
    pub at: u64,
    /// The payload as kbuffer returns it: padded to 4 bytes.
    pub data: Vec<u8>,
    /// Events lost right before this record (see [`super::Record::missed_before`]).
    pub missed_before: Option<i64>,
}

/// One CPU's records, read a page at a time from the file (or the in-memory bytes).
#[derive(Debug)]
pub struct CpuStream<'f> {
    file: &'f TraceFile,
    cpu: u32,
    /// File offset of the next page and the end of the CPU's data.
    next: u64,
    end: u64,
    /// The end the CPU's size declares (compressed data: the chunks must reach it, or the
    /// bytes left are damage).
    data_end: u64,
    page: Vec<u8>,
    /// Compressed data: the chunks not yet read (`None` before the count is read), the
    /// current chunk decompressed (held within the file's budget, see `chunks`), the next
    /// page's place in it, and the chunk's virtual offset (the CPU's data offset + the
    /// uncompressed bytes before it, as trace-cmd numbers them).
    chunks_left: Option<u32>,
    held: Held,
    chunk_pos: usize,
    chunk_at: u64,
    /// Compressed data: the last chunk's fingerprint and file offset (a chunk repeated right
    /// after itself is flagged), whether the next record is its first, and the time of the
    /// last record (time going back from one chunk to the next is flagged).
    prev_chunk: Option<(u64, u64)>,
    chunk_start: bool,
    last_ts: Option<u64>,
    /// Records read, checked against the metadata's written count at the end.
    records: u64,
    /// Damaged pages not yet yielded: a chunk's worth can be 262 144 of them, so they are
    /// made one at a time.
    run: Option<DamageRun>,
    /// The loaded page's records not yet handed out.
    queue: VecDeque<Result<OwnedRecord>>,
    done: bool,
    /// Whether the end-of-data checks ran.
    checked: bool,
    /// Whether damage was reported in the CPU's data (its records short for a reason said).
    damaged: bool,
}

/// Pages lost in a row: `left` of `total` still to yield, the next at virtual offset
/// `page_at`, the damage at file offset `at`.
#[derive(Debug)]
struct DamageRun {
    page_at: u64,
    pages: u64,
    at: u64,
    what: String,
}

/// Reads `buf.len()` bytes at `at` of `file`, for `cpu`'s data.
fn read_at(file: &TraceFile, cpu: u32, buf: &mut [u8], at: u64, what: &'static str) -> Result<()> {
    match &file.source {
        Source::Memory(d) => {
            let s = usize::try_from(at)
                .ok()
                .and_then(|a| d.get(a..a.checked_add(buf.len())?));
            match s {
                Some(s) => buf.copy_from_slice(s),
                None => return Err(TraceDatError::Truncated { what, at }),
            }
        }
        Source::File(f, path) => f.read_exact_at(buf, at).map_err(|e| {
            TraceDatError::Io(std::io::Error::new(
                e.kind(),
                format!(
                    "{}: reading cpu {cpu} {what} at offset {at}: {e}",
                    path.display()
                ),
            ))
        })?,
    }
    Ok(())
}

impl<'f> CpuStream<'f> {
    pub(super) fn new(file: &'f TraceFile, cpu: u32) -> Self {
        let (off, size) = file.cpu_data(cpu).unwrap_or((0, 0));
        // Chunks are bounded by their count and by the CPU's region: its size and the 4
        // bytes of the count (trace-cmd 3.1.6 leaves those out of the size, 3.2 counts them),
        // never past the next CPU's data or the file's end, so no byte is read for two CPUs.
        let end = if file.layout.chunked {
            let next = file
                .layout
                .cpu_data
                .iter()
                .map(|e| e.1)
                .filter(|&o| o > off)
                .min()
                .unwrap_or(u64::MAX);
            off.saturating_add(size)
                .saturating_add(4)
                .min(next)
                .min(file.layout.file_len)
        } else {
            off.saturating_add(size)
        };
        CpuStream {
            file,
            cpu,
            next: off,
            end,
            data_end: off.saturating_add(size),
            chunks_left: None,
            held: Held::None,
            chunk_pos: 0,
            chunk_at: off,
            prev_chunk: None,
            chunk_start: false,
            last_ts: None,
            records: 0,
            run: None,
            page: Vec::new(),
            queue: VecDeque::new(),
            done: size == 0,
            checked: false,
            damaged: false,
        }
    }

    /// Whether there is more to read.
    fn more(&self) -> bool {
        if self.file.layout.chunked {
            // Bytes before the declared end after the counted chunks are read too: as damage.
            self.chunk_pos < self.held.len()
                || self.chunks_left != Some(0)
                || self.next < self.data_end
        } else {
            self.next < self.end
        }
    }

    /// The current run of damaged pages, as one error for all of its pages.
    fn next_damaged(&mut self) -> Option<TraceDatError> {
        let r = self.run.take()?;
        Some(TraceDatError::DamagedPage {
            cpu: self.cpu,
            page_at: r.page_at,
            at: r.at,
            records_before: 0,
            pages: r.pages,
            what: r.what,
        })
    }

    /// Starts a run of `pages` damaged pages (at least one) from the current virtual offset.
    fn damage(&mut self, pages: u64, at: u64, what: String) {
        let ps = u64::from(self.file.layout.page_size);
        self.run = Some(DamageRun {
            page_at: self.chunk_at,
            pages: pages.max(1),
            at,
            what,
        });
        self.chunk_at = self.chunk_at.saturating_add(pages.saturating_mul(ps));
    }

    /// Damage that ends the CPU's compressed data at `at` (an impossible chunk header, a
    /// chunk past the CPU's region, bytes the chunk count leaves out): the pages that were not
    /// read are counted: those of the chunk headers that can still be walked from `walk`
    /// (without decompressing them), and a page for every page-size of bytes after them (a
    /// lower bound: compressed bytes hold at least their size); one page when nothing is
    /// known. The other CPUs are read on.
    fn end_damaged(&mut self, at: u64, walk: Option<u64>, what: String) -> Result<bool> {
        let ps = u64::from(self.file.layout.page_size);
        let (mut pages, mut chunks, mut pos) = (0u64, 0u64, walk.unwrap_or(at));
        if walk.is_some() {
            let be = self.file.layout.big_endian;
            while pos.saturating_add(8) <= self.end {
                let mut h = [0u8; 8];
                read_at(self.file, self.cpu, &mut h, pos, "chunk header")?;
                let (c, u) = (read_uint(&h[..4], be), read_uint(&h[4..], be));
                if u == 0
                    || u % ps != 0
                    || !typhon_recorder::tracedat::plausible_size(c, u)
                    || pos + 8 + c > self.end
                {
                    break;
                }
                pages += u / ps;
                chunks += 1;
                pos += 8 + c;
            }
        }
        let rest = self.data_end.saturating_sub(pos);
        pages += rest.div_ceil(ps);
        let what = if chunks > 0 {
            format!("{what}: {chunks} chunks of {pages} pages in all left unread")
        } else if pages > 1 {
            format!("{what}: {rest} bytes, {pages} pages or more, left unread")
        } else {
            what
        };
        self.file.pool.release(&mut self.held);
        self.chunk_pos = 0;
        self.damage(pages, at, what);
        self.chunks_left = Some(0);
        self.done = true;
        Ok(false)
    }

    /// Reads the next chunk: `Ok(false)` when none was loaded (no chunks left; a damaged chunk,
    /// a run of one damaged page per page it declares, and the next chunk is read after it;
    /// or damage that ends the CPU). An error only when the file cannot be read.
    fn next_chunk(&mut self) -> Result<bool> {
        let be = self.file.layout.big_endian;
        if self.chunks_left.is_none() {
            let at = self.next;
            if at.saturating_add(4) > self.end {
                return self.end_damaged(at, None, "chunk count past the cpu's data".into());
            }
            let mut n = [0u8; 4];
            read_at(self.file, self.cpu, &mut n, at, "chunk count")?;
            self.chunks_left = Some(read_uint(&n, be) as u32);
            self.next += 4;
        }
        let at = self.next;
        self.chunk_at += self.held.len() as u64;
        self.file.pool.release(&mut self.held);
        self.chunk_pos = 0;
        if self.chunks_left == Some(0) {
            if at < self.data_end {
                return self.end_damaged(
                    at,
                    Some(at),
                    format!(
                        "{} bytes of the cpu's data after the chunks its count declares",
                        self.data_end - at
                    ),
                );
            }
            return Ok(false);
        }
        if at.saturating_add(8) > self.end {
            return self.end_damaged(
                at,
                None,
                format!(
                    "{} more chunks declared, but the cpu's data ends at offset {}",
                    self.chunks_left.unwrap_or(0),
                    self.end
                ),
            );
        }
        let mut h = [0u8; 8];
        read_at(self.file, self.cpu, &mut h, at, "chunk header")?;
        let csize = read_uint(&h[..4], be);
        let usize_ = read_uint(&h[4..], be) as u32;
        let ps = self.file.layout.page_size;
        if usize_ == 0
            || usize_ % ps != 0
            || !typhon_recorder::tracedat::plausible_size(csize, u64::from(usize_))
        {
            return self.end_damaged(
                at,
                None,
                format!(
                    "chunk of {csize} bytes compressed, {usize_} uncompressed (a multiple of \
                     the page size {ps}, at most {MAX_CHUNK_BYTES} and {} times the compressed \
                     size)",
                    typhon_recorder::tracedat::MAX_RATIO
                ),
            );
        }
        if at + 8 + csize > self.end {
            return self.end_damaged(
                at,
                None,
                format!(
                    "chunk of {csize} bytes compressed runs past the cpu's data (ends at \
                     offset {})",
                    self.end
                ),
            );
        }
        self.chunks_left = self.chunks_left.map(|n| n - 1);
        self.next = at + 8 + csize;
        let (file, cpu) = (self.file, self.cpu);
        let mut print = 0;
        let r = file.pool.load(
            &mut self.held,
            csize as usize,
            usize_,
            ps as usize,
            file.layout.file_len,
            |buf| read_at(file, cpu, buf, at + 8, "compressed chunk"),
            &mut print,
        );
        let pages = u64::from(usize_ / ps);
        match r {
            Ok(()) => {
                if let Some((p, before)) = self.prev_chunk {
                    if p == print {
                        self.file.warn(
                            cpu,
                            at,
                            0,
                            format!(
                                "the chunk at offset {at} is the one at offset {before} again: \
                                 its records are read twice"
                            ),
                        );
                    }
                }
                self.prev_chunk = Some((print, at));
                self.chunk_start = true;
                Ok(true)
            }
            // Every page the chunk holds is lost: one damaged page each, at its virtual offset.
            Err(Refused::Bad(e)) => {
                self.damage(pages, at, format!("the chunk at offset {at}: {e}"));
                Ok(false)
            }
            Err(Refused::OverBudget(e)) => {
                self.damage(
                    pages,
                    at,
                    format!("the chunk at offset {at} is not read: {e}"),
                );
                Ok(false)
            }
            Err(Refused::Read(e)) => Err(e),
        }
    }

    /// Reads the next page and queues its records.
    fn load(&mut self) -> Result<()> {
        if let Some(at) = self.fetch()? {
            self.queue_page(at);
        }
        Ok(())
    }

    /// Reads the next page (the last may be partial) into `self.page`, and returns its offset
    /// (virtual for compressed data); `None` when there was none to read (a damaged chunk,
    /// queued as a damage run, or no chunks).
    fn fetch(&mut self) -> Result<Option<u64>> {
        let ps = u64::from(self.file.layout.page_size);
        if self.file.layout.chunked {
            if self.chunk_pos >= self.held.len() && (!self.next_chunk()? || self.held.len() == 0) {
                return Ok(None);
            }
            let at = self.chunk_at + self.chunk_pos as u64;
            let p = ps as usize;
            self.page.resize(p, 0);
            let r = self
                .file
                .pool
                .copy(&self.held, self.chunk_pos, &mut self.page);
            self.chunk_pos += p;
            if let Err(e) = r {
                self.queue.push_back(Err(TraceDatError::DamagedPage {
                    cpu: self.cpu,
                    page_at: at,
                    at,
                    records_before: 0,
                    pages: 1,
                    what: e,
                }));
                return Ok(None);
            }
            return Ok(Some(at));
        }
        let at = self.next;
        let n = ps.min(self.end - at) as usize;
        self.next = at + n as u64;
        self.page.resize(n, 0);
        read_at(self.file, self.cpu, &mut self.page, at, "page")?;
        Ok(Some(at))
    }

    /// What can be checked once the CPU's data is read: more records than the metadata says
    /// the slot wrote cannot be right (data read twice, or another file's), and fewer with
    /// no damage reported are records lost without a word (data the table does not reach).
    fn finish(&mut self) {
        if std::mem::replace(&mut self.checked, true) {
            return;
        }
        self.file.pool.release(&mut self.held);
        if let Some(written) = self.file.written(self.cpu) {
            if self.records > written {
                self.file.warn(
                    self.cpu,
                    u64::MAX,
                    2,
                    format!(
                        "{} records read, over the {written} the metadata says the slot wrote",
                        self.records
                    ),
                );
            } else if self.records < written && !self.damaged {
                let n = written - self.records;
                self.file.short(
                    self.cpu,
                    n,
                    format!(
                        "{} records read, under the {written} the metadata says the slot \
                         wrote, with no damage found: {n} unread (the file's per-CPU table \
                         or BUFFER option is damaged)",
                        self.records
                    ),
                );
            }
        }
    }

    /// The next page of the CPU as (offset, bytes): offsets are the file's for pages, virtual
    /// ones (the data's offset + the uncompressed bytes before) for compressed chunks. A chunk
    /// that does not decompress is one [`TraceDatError::DamagedPage`] for all the pages it declares,
    /// then the pages after it; an impossible chunk header (or bytes the chunk count leaves
    /// out) ends the CPU, with a damaged page for each page not read (at least one); a read
    /// error ends the CPU.
    pub fn next_page(&mut self) -> Option<Result<(u64, &[u8])>> {
        loop {
            if let Some(Err(e)) = self.queue.pop_front() {
                return Some(Err(e));
            }
            if let Some(e) = self.next_damaged() {
                return Some(Err(e));
            }
            if self.done || !self.more() {
                self.done = true;
                self.file.pool.release(&mut self.held);
                return None;
            }
            match self.fetch() {
                Ok(Some(at)) => return Some(Ok((at, &self.page))),
                Ok(None) => continue,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }

    /// Queues the records of the page in `self.page`, which is at `at`.
    fn queue_page(&mut self, at: u64) {
        let ps = u64::from(self.file.layout.page_size);
        let (long, endian) = self.file.page_format();
        let page = &self.page;
        let base = page.as_ptr() as usize;
        let it = CpuRecords::new(self.cpu, page, ps as usize, at, long, endian);
        for r in it {
            if let Ok(r) = &r {
                self.records += 1;
                if std::mem::take(&mut self.chunk_start) {
                    if let Some(last) = self.last_ts.filter(|&l| r.ts < l) {
                        let chunk = self.prev_chunk.map_or(0, |p| p.1);
                        self.file.warn(
                            self.cpu,
                            chunk,
                            1,
                            format!(
                                "time goes back {} from the chunk before to the chunk at \
                                 offset {chunk} (its first record at {}, the last before at \
                                 {last})",
                                last - r.ts,
                                r.ts
                            ),
                        );
                    }
                }
                self.last_ts = Some(r.ts);
            }
            self.queue.push_back(r.map(|r| OwnedRecord {
                cpu: r.cpu,
                ts: r.ts,
                at: at + (r.data.as_ptr() as usize - base) as u64,
                data: r.data.to_vec(),
                missed_before: r.missed_before,
            }));
        }
    }
}

impl Drop for CpuStream<'_> {
    fn drop(&mut self) {
        self.file.pool.release(&mut self.held);
    }
}

impl Iterator for CpuStream<'_> {
    type Item = Result<OwnedRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.queue.pop_front() {
                self.damaged |= r.is_err();
                return Some(r);
            }
            if let Some(e) = self.next_damaged() {
                self.damaged = true;
                return Some(Err(e));
            }
            if self.done || !self.more() {
                self.done = true;
                self.finish();
                return None;
            }
            if let Err(e) = self.load() {
                // A read error ends this CPU: it is the reader's error, not a damaged page.
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}

impl TraceFile {
    /// Opens the file at `path` for streaming: only its metadata is read into memory (the
    /// record data stays in the file and [`Self::stream_records`] reads it a page at a time).
    /// The checks of [`Self::open`] apply. The borrowed accessors ([`Self::pages`],
    /// [`Self::cpu_records`], [`Self::records`]) see no page data on such a file: use
    /// [`Self::stream_records`] (or [`Self::open`] for them).
    ///
    /// # Errors
    /// Those of [`Self::open`].
    ///
    /// ```
    /// use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// let p = std::env::temp_dir().join(format!("stream-doc-{}.dat", std::process::id()));
    /// write_tracedat(&mut std::fs::File::create(&p).unwrap(), &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::open_streaming(&p).unwrap();
    /// assert_eq!(f.stream_records().count(), 0);
    /// # std::fs::remove_file(&p).unwrap();
    /// ```
    pub fn open_streaming(path: impl AsRef<std::path::Path>) -> Result<Self> {
        let path = path.as_ref();
        let f = super::open_regular(path)?;
        let len = f.metadata()?.len();
        // The metadata comes before the page data in every writer's files: parse a prefix,
        // doubled while the parse runs out of it, so only a file whose metadata lies after its
        // data is read whole.
        let mut prefix = (1u64 << 16).min(len);
        loop {
            let mut buf = vec![0u8; prefix as usize];
            f.read_exact_at(&mut buf, 0).map_err(|e| {
                TraceDatError::Io(std::io::Error::new(
                    e.kind(),
                    format!("{}: {e}", path.display()),
                ))
            })?;
            match Self::parse_layout(&buf, super::v7::Src::File(&f, len)) {
                Err(TraceDatError::Truncated { .. }) if prefix < len => {
                    prefix = prefix.saturating_mul(2).min(len);
                }
                Err(e) => return Err(e),
                Ok((layout, by_id, common_type)) => {
                    return Ok(TraceFile::new(
                        Source::File(f, path.to_path_buf()),
                        layout,
                        by_id,
                        common_type,
                    ))
                }
            }
        }
    }

    /// The records of every CPU merged in time order, as [`Self::records`] orders them, with
    /// the records that use a definition resolved ([`crate::defs`]), read a page at a time (from the file for [`Self::open_streaming`], else from memory). A damaged
    /// page is one [`TraceDatError::DamagedPage`] as there; a read error is a
    /// [`TraceDatError::Io`] naming the file, and ends that CPU.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.stream_records().count(), 0);
    /// ```
    pub fn stream_records(&self) -> crate::defs::Resolved<'_> {
        let merge =
            super::records::Merge::new(self.data_cpus().map(|c| CpuStream::new(self, c)).collect());
        crate::defs::Resolved::new(self, merge)
    }

    /// One CPU's records, read a page at a time (see [`Self::stream_records`]).
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.stream_cpu(0).count(), 0);
    /// ```
    pub fn stream_cpu(&self, cpu: u32) -> CpuStream<'_> {
        CpuStream::new(self, cpu)
    }

    /// The page format: commit word width and byte order.
    pub(super) fn page_format(&self) -> (LongSize, Endian) {
        let long = if self.layout.commit_size == 4 {
            LongSize::Four
        } else {
            LongSize::Eight
        };
        let endian = if self.layout.big_endian {
            Endian::Big
        } else {
            Endian::Little
        };
        (long, endian)
    }
}
