//! The trace.dat version 6 writer.
//!
//! Layout written (research §5; all integers little-endian):
//!
//! ```text
//! 17 08 44 "tracing" "6\0" | endian 0 | long 8 | u32 page size
//! "header_page\0"  u64 n  text          (page-size aware: data size = page size - 16)
//! "header_event\0" u64 n  text
//! u32 0                                 (no ftrace formats)
//! u32 1  "typhon\0"  u32 N  N × (u64 n, format text)   (one format per kind of the table)
//! u32 0 (kallsyms)  u32 0 (printk)
//! u64 n  "<slot> <thread name>\n"…      (cmdlines)
//! u32 cpus                              (highest slot + 1: CPU n = slot n)
//! "options  \0"  {u16 id, u32 size, data}…  u16 0
//!     4 TRACECLOCK "[mono]"; 9 VERSION "typhon-recorder <v>"; 0x5459 TYPHON_META (JSON)
//! "flyrecord\0"  cpus × (u64 offset, u64 size)   u64 n "[mono]\n"
//! zeros to a page boundary, then each slot's pages, contiguous and page-aligned
//! ```

use super::format::{self, check_page_size, header_page, HEADER_EVENT, SYSTEM};
use serde_json::{json, Value};
use std::io::{self, Read, Seek, Write};

/// The most CPUs (slots) a written file may have, as the reader accepts (Linux's NR_CPUS tops
/// out at 8192): bounds the per-CPU table.
pub const MAX_WRITE_CPUS: u32 = 1 << 16;

/// trace.dat magic: `17 08 44` then `tracing`.
/// The first ten bytes of every trace.dat file.
pub const MAGIC: &[u8; 10] = b"\x17\x08\x44tracing";

/// trace-cmd option id of the trace clock.
pub const OPTION_TRACECLOCK: u16 = 4;
/// trace-cmd option id of the writer's version string.
pub const OPTION_VERSION: u16 = 9;
/// Private option id of the Typhon session metadata: a NUL-terminated UTF-8 JSON object.
///
/// 0x5459 is "TY" and far above trace-cmd's own ids (0..=25 in trace-cmd 3.4), which skips
/// unknown options silently, so `trace-cmd report` is unaffected.
///
/// ```
/// assert_eq!(typhon_recorder::tracedat::OPTION_TYPHON_META, 0x5459);
/// ```
pub const OPTION_TYPHON_META: u16 = 0x5459;

/// Value of the `"format"` key of the metadata JSON.
pub const META_FORMAT: &str = "typhon-recorder/1";

/// Per-slot facts stored in the session metadata and the cmdlines.
///
/// ```
/// use typhon_recorder::tracedat::SlotMeta;
/// let s = SlotMeta { slot: 1, name: "render-main".into(), thread_id: Some(4242),
///                    attempted: 10, written: 8, missed: 2 };
/// assert_eq!(s.attempted, s.written + s.missed);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SlotMeta {
    /// Slot number (= trace.dat CPU number).
    pub slot: u8,
    /// Thread name (the cmdline shown by `trace-cmd report`). Empty: no cmdline line.
    pub name: String,
    /// OS thread id of the (last) thread that owned the slot, if known.
    pub thread_id: Option<i64>,
    /// Records the slot's producers tried to write.
    pub attempted: u64,
    /// Records that reached the file.
    pub written: u64,
    /// Records dropped (ring full), as carried by the pages' missed counts.
    pub missed: u64,
}

/// Everything about a recording that is not page data.
///
/// ```
/// use typhon_recorder::tracedat::FileMeta;
/// let m = FileMeta::new(4096);
/// assert_eq!((m.page_size, m.clock.as_str()), (4096, "mono"));
/// let back = FileMeta::from_json(&m.to_json()).unwrap();
/// assert_eq!(back, m);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct FileMeta {
    /// Sub-buffer page size: a power of two ≥ 4096, the file header's page size.
    pub page_size: u32,
    /// trace clock name written in the TRACECLOCK option ("mono": CLOCK_MONOTONIC ns).
    pub clock: String,
    /// UNIX time in ns at session start (the wall-clock anchor of the monotonic timestamps).
    pub wall_anchor_ns: i64,
    /// Monotonic ns at session start (pairs with `wall_anchor_ns`).
    pub mono_anchor_ns: i64,
    /// Version of the recorder that wrote the file.
    pub recorder_version: String,
    /// Per-slot names and totals.
    pub slots: Vec<SlotMeta>,
    /// Free-form extra session data (any JSON; `Value::Null` for none).
    pub session: Value,
}

impl FileMeta {
    /// Metadata with no slots, clock "mono", anchors 0, this crate's version.
    ///
    /// ```
    /// let m = typhon_recorder::tracedat::FileMeta::new(8192);
    /// assert!(m.slots.is_empty());
    /// assert_eq!(m.recorder_version, env!("CARGO_PKG_VERSION"));
    /// ```
    pub fn new(page_size: u32) -> Self {
        Self {
            page_size,
            clock: "mono".into(),
            wall_anchor_ns: 0,
            mono_anchor_ns: 0,
            recorder_version: env!("CARGO_PKG_VERSION").into(),
            slots: Vec::new(),
            session: Value::Null,
        }
    }

    /// The metadata as the JSON object stored in option [`OPTION_TYPHON_META`].
    ///
    /// ```
    /// let j = typhon_recorder::tracedat::FileMeta::new(4096).to_json();
    /// assert_eq!(j["format"], "typhon-recorder/1");
    /// assert_eq!(j["page_size"], 4096);
    /// ```
    pub fn to_json(&self) -> Value {
        let slots: Vec<Value> = self
            .slots
            .iter()
            .map(|s| {
                json!({
                    "slot": s.slot,
                    "name": s.name,
                    "thread_id": s.thread_id,
                    "attempted": s.attempted,
                    "written": s.written,
                    "missed": s.missed,
                })
            })
            .collect();
        json!({
            "format": META_FORMAT,
            "recorder_version": self.recorder_version,
            "clock": self.clock,
            "page_size": self.page_size,
            "wall_anchor_ns": self.wall_anchor_ns,
            "mono_anchor_ns": self.mono_anchor_ns,
            "slots": slots,
            "session": self.session,
        })
    }

    /// Parses the JSON written by [`FileMeta::to_json`]. Missing optional keys take defaults;
    /// a wrong type or a missing `page_size` is an error message.
    ///
    /// ```
    /// use typhon_recorder::tracedat::FileMeta;
    /// let mut j = FileMeta::new(4096).to_json();
    /// j["page_size"] = j["clock"].clone(); // a string where a number belongs
    /// assert!(FileMeta::from_json(&j).is_err());
    /// ```
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let obj = v.as_object().ok_or("metadata is not a JSON object")?;
        let u = |k: &str| -> Result<Option<u64>, String> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(x) => x
                    .as_u64()
                    .map(Some)
                    .ok_or_else(|| format!("metadata key {k} is not an unsigned integer")),
            }
        };
        let i = |k: &str| -> Result<i64, String> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(0),
                Some(x) => x
                    .as_i64()
                    .ok_or_else(|| format!("metadata key {k} is not an integer")),
            }
        };
        let s = |k: &str| -> Result<String, String> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(String::new()),
                Some(x) => x
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("metadata key {k} is not a string")),
            }
        };
        let page_size = u("page_size")?.ok_or("metadata has no page_size")?;
        let page_size = u32::try_from(page_size).map_err(|_| "metadata page_size too large")?;
        let mut slots = Vec::new();
        if let Some(arr) = obj.get("slots") {
            let arr = arr.as_array().ok_or("metadata slots is not an array")?;
            for e in arr {
                let m = Self::slot_from_json(e)?;
                slots.push(m);
            }
        }
        Ok(Self {
            page_size,
            clock: s("clock")?,
            wall_anchor_ns: i("wall_anchor_ns")?,
            mono_anchor_ns: i("mono_anchor_ns")?,
            recorder_version: s("recorder_version")?,
            slots,
            session: obj.get("session").cloned().unwrap_or(Value::Null),
        })
    }

    fn slot_from_json(e: &Value) -> Result<SlotMeta, String> {
        let o = e.as_object().ok_or("metadata slot is not an object")?;
        let num = |k: &str| -> Result<u64, String> {
            match o.get(k) {
                None | Some(Value::Null) => Ok(0),
                Some(x) => x
                    .as_u64()
                    .ok_or_else(|| format!("slot key {k} is not an unsigned integer")),
            }
        };
        let slot = u8::try_from(num("slot")?).map_err(|_| "slot number above 255")?;
        let name = match o.get("name") {
            None | Some(Value::Null) => String::new(),
            Some(x) => x.as_str().ok_or("slot name is not a string")?.to_owned(),
        };
        let thread_id = match o.get("thread_id") {
            None | Some(Value::Null) => None,
            Some(x) => Some(x.as_i64().ok_or("slot thread_id is not an integer")?),
        };
        Ok(SlotMeta {
            slot,
            name,
            thread_id,
            attempted: num("attempted")?,
            written: num("written")?,
            missed: num("missed")?,
        })
    }
}

/// One slot's page data for [`write_tracedat`]: `len` bytes (whole pages) read from `source`.
///
/// ```
/// use typhon_recorder::tracedat::SlotPages;
/// let pages = vec![0u8; 8192];
/// let sp = SlotPages::from_bytes(3, &pages);
/// assert_eq!((sp.slot, sp.len), (3, 8192));
/// ```
pub struct SlotPages<'a> {
    /// Slot number (= CPU number in the file). A recorder's slots are below 256 (what the
    /// constructors take); a file converted from another writer's may have CPUs up to
    /// [`MAX_WRITE_CPUS`]` - 1`: set the field (`SlotPages { slot: 300, ..SlotPages::new(..) }`).
    pub slot: u32,
    /// Bytes the source delivers: a multiple of the page size.
    pub len: u64,
    /// Where the pages come from (a per-slot page file, a buffer, ...).
    pub source: Box<dyn Read + 'a>,
    /// `Some(n)`: the source is not pages but `n` compressed chunks (see
    /// [`super::compress`]), `len` bytes of them, for a version 7 file to hold as they are.
    pub chunks: Option<u32>,
}

impl<'a> SlotPages<'a> {
    /// Pages read from any `Read` source that yields exactly `len` bytes.
    ///
    /// ```
    /// use typhon_recorder::tracedat::SlotPages;
    /// let sp = SlotPages::new(1, 0, std::io::empty());
    /// assert_eq!(sp.len, 0);
    /// ```
    pub fn new(slot: u8, len: u64, source: impl Read + 'a) -> Self {
        Self {
            slot: u32::from(slot),
            len,
            source: Box::new(source),
            chunks: None,
        }
    }

    /// `chunks` compressed chunks (`len` bytes of them) read from `source`, for
    /// [`super::write_tracedat_v7_with`] to copy as they are.
    ///
    /// ```
    /// use typhon_recorder::tracedat::SlotPages;
    /// let sp = SlotPages::chunked(1, 0, 0, std::io::empty());
    /// assert_eq!(sp.chunks, Some(0));
    /// ```
    pub fn chunked(slot: u8, len: u64, chunks: u32, source: impl Read + 'a) -> Self {
        Self {
            chunks: Some(chunks),
            ..Self::new(slot, len, source)
        }
    }

    /// Pages held in memory.
    ///
    /// ```
    /// use typhon_recorder::tracedat::SlotPages;
    /// assert_eq!(SlotPages::from_bytes(0, &[0u8; 4096]).len, 4096);
    /// ```
    pub fn from_bytes(slot: u8, pages: &'a [u8]) -> Self {
        Self::new(slot, pages.len() as u64, pages)
    }
}

pub(super) fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// A thread name made safe for a cmdline line: no control characters (a newline would end the
/// line), not empty.
fn cmdline_name(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The checks every writer makes of its inputs; the CPU count (highest slot + 1).
pub(super) fn check_inputs(meta: &FileMeta, slot_data: &[SlotPages<'_>]) -> io::Result<u32> {
    let page = meta.page_size;
    check_page_size(page).map_err(|e| invalid(e.to_string()))?;
    let mut seen = std::collections::BTreeSet::new();
    for sp in slot_data {
        if sp.slot >= MAX_WRITE_CPUS {
            return Err(invalid(format!(
                "slot {} is over the {MAX_WRITE_CPUS} CPUs a file may have",
                sp.slot
            )));
        }
        if !seen.insert(sp.slot) {
            return Err(invalid(format!("slot {} has page data twice", sp.slot)));
        }
        if sp.chunks.is_none() && sp.len % u64::from(page) != 0 {
            return Err(invalid(format!(
                "slot {} has {} bytes of pages, not a multiple of the page size {page}",
                sp.slot, sp.len
            )));
        }
    }
    let mut seen_meta = [false; 256];
    for s in &meta.slots {
        if std::mem::replace(&mut seen_meta[s.slot as usize], true) {
            return Err(invalid(format!("slot {} is described twice", s.slot)));
        }
    }
    if meta.clock.is_empty() || meta.clock.contains(['[', ']', '\n', '\0']) {
        return Err(invalid(format!("bad trace clock name {:?}", meta.clock)));
    }
    Ok(slot_data
        .iter()
        .map(|s| s.slot)
        .chain(meta.slots.iter().map(|s| u32::from(s.slot)))
        .max()
        .map_or(1u32, |m| m + 1))
}

/// The metadata both versions store, each part as its bytes (a version 7 section body is the
/// same bytes as the version 6 part).
pub(super) struct Parts {
    pub(super) header_info: Vec<u8>,
    pub(super) ftrace: Vec<u8>,
    pub(super) events: Vec<u8>,
    pub(super) kallsyms: Vec<u8>,
    pub(super) printk: Vec<u8>,
    pub(super) cmdlines: Vec<u8>,
    /// (id, data) of the options: trace clock, writer version, Typhon metadata.
    pub(super) options: Vec<(u16, Vec<u8>)>,
    /// `[clock]\n`.
    pub(super) clock_text: String,
}

pub(super) fn parts(meta: &FileMeta) -> io::Result<Parts> {
    let page = meta.page_size;
    let mut header_info = Vec::new();
    let hp = header_page(page);
    header_info.extend_from_slice(b"header_page\0");
    header_info.extend_from_slice(&(hp.len() as u64).to_le_bytes());
    header_info.extend_from_slice(hp.as_bytes());
    header_info.extend_from_slice(b"header_event\0");
    header_info.extend_from_slice(&(HEADER_EVENT.len() as u64).to_le_bytes());
    header_info.extend_from_slice(HEADER_EVENT.as_bytes());

    let formats = format::all_event_formats().map_err(|e| invalid(e.to_string()))?;
    let mut events = Vec::with_capacity(16 * 1024);
    events.extend_from_slice(&1u32.to_le_bytes());
    events.extend_from_slice(SYSTEM.as_bytes());
    events.push(0);
    events.extend_from_slice(&(formats.len() as u32).to_le_bytes());
    for (_, text) in &formats {
        events.extend_from_slice(&(text.len() as u64).to_le_bytes());
        events.extend_from_slice(text.as_bytes());
    }

    let mut cmd = String::new();
    let mut named: Vec<&SlotMeta> = meta.slots.iter().filter(|s| !s.name.is_empty()).collect();
    named.sort_by_key(|s| s.slot);
    for s in named {
        cmd.push_str(&format!("{} {}\n", s.slot, cmdline_name(&s.name)));
    }
    let mut cmdlines = (cmd.len() as u64).to_le_bytes().to_vec();
    cmdlines.extend_from_slice(cmd.as_bytes());

    let clock_text = format!("[{}]\n", meta.clock);
    let mut clock_opt = clock_text.clone().into_bytes();
    clock_opt.push(0);
    let version = format!("typhon-recorder {}\0", meta.recorder_version);
    let mut json = meta.to_json().to_string().into_bytes();
    json.push(0);
    for (_, d) in [(0, &clock_opt), (0, &json)] {
        u32::try_from(d.len()).map_err(|_| invalid("option too large".into()))?;
    }
    Ok(Parts {
        header_info,
        ftrace: 0u32.to_le_bytes().to_vec(),
        events,
        kallsyms: 0u32.to_le_bytes().to_vec(),
        printk: 0u32.to_le_bytes().to_vec(),
        cmdlines,
        options: vec![
            (OPTION_TRACECLOCK, clock_opt),
            (OPTION_VERSION, version.into_bytes()),
            (OPTION_TYPHON_META, json),
        ],
        clock_text,
    })
}

/// The metadata part of the file: everything before the padding and the page data, with the
/// flyrecord table filled in.
fn build_header(meta: &FileMeta, slot_data: &[SlotPages<'_>]) -> io::Result<Vec<u8>> {
    let page = meta.page_size;
    let cpus = check_inputs(meta, slot_data)?;
    if let Some(sp) = slot_data.iter().find(|s| s.chunks.is_some()) {
        return Err(invalid(format!(
            "slot {} holds compressed chunks: version 6 cannot store them",
            sp.slot
        )));
    }
    let p = parts(meta)?;
    let mut h = Vec::with_capacity(16 * 1024);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(b"6\0");
    h.push(0); // little-endian
    h.push(8); // sizeof(long)
    h.extend_from_slice(&page.to_le_bytes());
    for part in [
        &p.header_info,
        &p.ftrace,
        &p.events,
        &p.kallsyms,
        &p.printk,
        &p.cmdlines,
    ] {
        h.extend_from_slice(part);
    }
    h.extend_from_slice(&cpus.to_le_bytes());

    h.extend_from_slice(b"options  \0");
    for (id, data) in &p.options {
        h.extend_from_slice(&id.to_le_bytes());
        h.extend_from_slice(&(data.len() as u32).to_le_bytes());
        h.extend_from_slice(data);
    }
    h.extend_from_slice(&0u16.to_le_bytes());

    h.extend_from_slice(b"flyrecord\0");
    let table_at = h.len();
    h.resize(table_at + 16 * cpus as usize, 0);
    h.extend_from_slice(&(p.clock_text.len() as u64).to_le_bytes());
    h.extend_from_slice(p.clock_text.as_bytes());

    // Page-aligned data start, then slots in slot order, back to back.
    let page64 = u64::from(page);
    let mut off = (h.len() as u64).div_ceil(page64) * page64;
    let mut order: Vec<&SlotPages<'_>> = slot_data.iter().collect();
    order.sort_by_key(|s| s.slot);
    for sp in order {
        if sp.len == 0 {
            continue; // an empty CPU is 0/0
        }
        let at = table_at + 16 * sp.slot as usize;
        h[at..at + 8].copy_from_slice(&off.to_le_bytes());
        h[at + 8..at + 16].copy_from_slice(&sp.len.to_le_bytes());
        off = off
            .checked_add(sp.len)
            .ok_or_else(|| invalid("total page data overflows u64".into()))?;
    }
    Ok(h)
}

/// Writes a complete trace.dat version 6 file to `out`, which must be positioned at the start of
/// the file (offsets in the file are absolute).
///
/// Each [`SlotPages`] is streamed from its source into its page-aligned place (CPU n = slot n);
/// the CPU count is the highest slot (of `slot_data` or `meta.slots`) + 1, CPUs without pages
/// are empty. Cmdlines come from `meta.slots` names (control characters become `?`); note that
/// libtraceevent shows pid 0, i.e. slot 0 (the recorder itself), as `<idle>` whatever its name. Errors (`InvalidInput`): a page size that is
/// not a power of two in 4096..=1 MiB, a length that is not a multiple of the page size, a slot
/// given twice, a bad clock name; `UnexpectedEof` if a source ends before `len` bytes, and
/// `InvalidData` if it has more.
///
/// ```
/// use typhon_recorder::tracedat::{write_tracedat, FileMeta, SlotMeta, SlotPages};
/// let mut meta = FileMeta::new(4096);
/// meta.slots.push(SlotMeta { slot: 1, name: "main".into(), ..Default::default() });
/// let pages = vec![0u8; 4096]; // one empty page
/// let mut out = std::io::Cursor::new(Vec::new());
/// write_tracedat(&mut out, &meta, &mut [SlotPages::from_bytes(1, &pages)]).unwrap();
/// let file = out.into_inner();
/// assert_eq!(&file[..10], b"\x17\x08\x44tracing");
/// assert_eq!(file.len() % 4096, 0);
/// // A slot given twice is refused.
/// let mut out = std::io::Cursor::new(Vec::new());
/// let mut twice = [SlotPages::from_bytes(1, &pages), SlotPages::from_bytes(1, &pages)];
/// assert!(write_tracedat(&mut out, &meta, &mut twice).is_err());
/// ```
pub fn write_tracedat<W: Write + Seek>(
    out: W,
    meta: &FileMeta,
    slot_data: &mut [SlotPages<'_>],
) -> io::Result<()> {
    write_tracedat_with(out, meta, slot_data, |_, _, _, _| Ok(()))
}

/// [`write_tracedat`], calling `copied(out, slot, offset, len)` once each slot's pages are
/// written (at `offset` in the file, `len` bytes), before the next slot's: the file sink makes
/// them durable there and then deletes the slot's part file, so assembling a recording needs
/// no more free space than its largest slot.
///
/// ```
/// use typhon_recorder::tracedat::{write_tracedat_with, FileMeta, SlotPages};
/// let pages = vec![0u8; 2 * 4096];
/// let mut seen = Vec::new();
/// let mut out = std::io::Cursor::new(Vec::new());
/// write_tracedat_with(&mut out, &FileMeta::new(4096), &mut [SlotPages::from_bytes(3, &pages)],
///     |_, slot, off, len| { seen.push((slot, off % 4096, len)); Ok(()) }).unwrap();
/// assert_eq!(seen, vec![(3, 0, 8192)]);
/// ```
pub fn write_tracedat_with<W: Write + Seek>(
    mut out: W,
    meta: &FileMeta,
    slot_data: &mut [SlotPages<'_>],
    mut copied: impl FnMut(&mut W, u32, u64, u64) -> io::Result<()>,
) -> io::Result<()> {
    let start = out.stream_position()?;
    if start != 0 {
        return Err(invalid(format!(
            "output is at offset {start}, a trace.dat must start at offset 0"
        )));
    }
    let header = build_header(meta, slot_data)?;
    out.write_all(&header)?;
    let page = u64::from(meta.page_size);
    let pad = (header.len() as u64).div_ceil(page) * page - header.len() as u64;
    out.write_all(&vec![0u8; pad as usize])?;
    slot_data.sort_by_key(|s| s.slot);
    let mut buf = vec![0u8; 64 * 1024];
    let mut offset = out.stream_position()?;
    for sp in slot_data.iter_mut() {
        copy_exact(&mut out, sp, &mut buf)?;
        copied(&mut out, sp.slot, offset, sp.len)?;
        offset += sp.len;
    }
    out.flush()
}

/// Copies exactly `sp.len` bytes from its source to `out`: `UnexpectedEof` if the source ends
/// before, `InvalidData` if it has more.
pub(super) fn copy_exact<W: Write>(
    out: &mut W,
    sp: &mut SlotPages<'_>,
    buf: &mut [u8],
) -> io::Result<()> {
    let mut left = sp.len;
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        let got = sp.source.read(&mut buf[..want])?;
        if got == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "slot {}: source ended {left} bytes before its length {}",
                    sp.slot, sp.len
                ),
            ));
        }
        out.write_all(&buf[..got])?;
        left -= got as u64;
    }
    let mut probe = [0u8; 1];
    if sp.source.read(&mut probe)? != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("slot {}: source has more than {} bytes", sp.slot, sp.len),
        ));
    }
    Ok(())
}
