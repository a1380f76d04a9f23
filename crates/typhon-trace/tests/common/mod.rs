//! Helpers shared by the kbuffer tests: hand-built pages (research doc §8), a page generator
//! driven by `PageWriter`, a printer of everything the kbuffer API reports, and the C build.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use typhon_recorder::page::{
    PageWriter, PushError, COMMIT_MASK, RB_MISSED_EVENTS, RB_MISSED_STORED,
};
use typhon_trace::kbuffer::{Endian, KBuffer, LongSize};

/// Builds raw sub-buffer data word by word, in either byte order and header layout.
pub struct RawPage {
    pub big: bool,
    pub long8: bool,
    pub data: Vec<u8>,
}

impl RawPage {
    pub fn new(long8: bool, big: bool) -> Self {
        RawPage {
            big,
            long8,
            data: Vec::new(),
        }
    }
    pub fn w32(&mut self, v: u32) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.data.extend_from_slice(&b);
    }
    pub fn hdr(&mut self, type_len: u32, delta: u32) {
        let w = if self.big {
            type_len << 27 | delta
        } else {
            type_len | delta << 5
        };
        self.w32(w);
    }
    /// A payload of `len` bytes whose first u32 (host order) is `first`.
    pub fn payload(&mut self, first: u32, len: usize) {
        let mut p = vec![0u8; len];
        p[..4].copy_from_slice(&first.to_ne_bytes());
        self.data.extend_from_slice(&p);
    }
    /// The whole page: header (timestamp, commit|flags), data, optional stored count, zeros.
    pub fn page(
        &self,
        ts: u64,
        commit: u64,
        flags: u64,
        stored: Option<u64>,
        size: usize,
    ) -> Vec<u8> {
        let mut p = Vec::new();
        let put8 = |p: &mut Vec<u8>, v: u64| {
            p.extend_from_slice(&if self.big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        let put4 = |p: &mut Vec<u8>, v: u32| {
            p.extend_from_slice(&if self.big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        put8(&mut p, ts);
        if self.long8 {
            put8(&mut p, commit | flags);
        } else {
            put4(&mut p, (commit | flags) as u32);
        }
        p.extend_from_slice(&self.data);
        let hdr = p.len() - self.data.len();
        p.resize(hdr + commit as usize, 0);
        if let Some(n) = stored {
            if self.long8 {
                put8(&mut p, n);
            } else {
                put4(&mut p, n as u32);
            }
        }
        p.resize(size, 0);
        p
    }
}

/// The main test page of research §8: records at data offsets 0, 12 (extend), 20, 28 (padding),
/// 40 (long), 168 (long, len 10), 184 (absolute stamp), 192, 208. Commit 324.
pub fn section8_records(long8: bool, big: bool) -> RawPage {
    let mut r = RawPage::new(long8, big);
    r.hdr(2, 10);
    r.payload(0xaaaa0001, 8);
    r.hdr(30, 7);
    r.w32(5);
    r.hdr(1, 3);
    r.payload(0xbbbb0001, 4);
    r.hdr(29, 1);
    r.w32(8); // 4 + 8 bytes: the length word and 4 more
    r.payload(0, 4);
    r.hdr(0, 2);
    r.w32(124);
    r.payload(0xcccc0000, 120);
    r.hdr(0, 4);
    r.w32(10);
    r.payload(0xdddd0001, 8);
    let abs: u64 = 5_000_000_000;
    r.hdr(31, (abs & ((1 << 27) - 1)) as u32);
    r.w32((abs >> 27) as u32);
    r.hdr(3, 0);
    r.payload(0xeeee0001, 12);
    r.hdr(28, 100);
    r.payload(0xffff0000, 112);
    assert_eq!(r.data.len(), 324);
    r
}

pub const MISSED_BOTH: u64 = RB_MISSED_EVENTS | RB_MISSED_STORED;

/// Every hand-built page of research §8, with the kbuffer mode to read it in.
pub fn section8_pages() -> Vec<(String, LongSize, Endian, Vec<u8>)> {
    let mut v = Vec::new();
    let le = section8_records(true, false);
    v.push((
        "le64 missed+stored 12345".into(),
        LongSize::Eight,
        Endian::Little,
        le.page(1_000_000, 324, MISSED_BOTH, Some(12345), 4096),
    ));
    v.push((
        "le64 missed only".into(),
        LongSize::Eight,
        Endian::Little,
        le.page(1_000_000, 324, RB_MISSED_EVENTS, None, 4096),
    ));
    v.push((
        "le64 no flags".into(),
        LongSize::Eight,
        Endian::Little,
        le.page(1_000_000, 324, 0, None, 4096),
    ));
    v.push((
        "le64 stored only 777".into(),
        LongSize::Eight,
        Endian::Little,
        le.page(1_000_000, 324, RB_MISSED_STORED, Some(777), 4096),
    ));
    v.push((
        "le64 stored 0x100000005".into(),
        LongSize::Eight,
        Endian::Little,
        le.page(1_000_000, 324, MISSED_BOTH, Some(0x1_0000_0005), 4096),
    ));

    let mut r = RawPage::new(true, false); // leading time extend
    r.hdr(30, 0);
    r.w32(0);
    r.hdr(1, 0);
    r.payload(0x11111111, 4);
    r.hdr(1, 5);
    r.payload(0x22222222, 4);
    v.push((
        "le64 leading extend".into(),
        LongSize::Eight,
        Endian::Little,
        r.page(2000, 24, MISSED_BOTH, Some(42), 4096),
    ));

    let mut r = RawPage::new(true, false); // trailing padding to the end of the data area
    r.hdr(1, 0);
    r.payload(0x33333333, 4);
    r.hdr(1, 5);
    r.payload(0x44444444, 4);
    r.hdr(29, 1);
    r.w32(4080 - 16 - 4);
    v.push((
        "le64 trailing padding".into(),
        LongSize::Eight,
        Endian::Little,
        r.page(3000, 4080, 0, None, 4096),
    ));

    let mut r = RawPage::new(true, false); // mid-page padding with delta 1000
    r.hdr(1, 0);
    r.payload(0x55555555, 4);
    r.hdr(29, 1000);
    r.w32(4); // 4 + 4 bytes: just the length word

    r.hdr(1, 5);
    r.payload(0x66666666, 4);
    v.push((
        "le64 mid padding".into(),
        LongSize::Eight,
        Endian::Little,
        r.page(4000, 24, 0, None, 4096),
    ));

    let mut r = RawPage::new(true, false); // commit covers 16 zero bytes after the last record
    r.hdr(1, 0);
    r.payload(0x77777777, 4);
    v.push((
        "le64 zero bytes inside commit".into(),
        LongSize::Eight,
        Endian::Little,
        r.page(5000, 24, 0, None, 4096),
    ));

    let mut r = RawPage::new(true, false); // null padding as the last 8 bytes inside commit
    r.hdr(1, 0);
    r.payload(0x88888888, 4);
    r.hdr(29, 0);
    r.w32(0);
    v.push((
        "le64 null padding inside commit".into(),
        LongSize::Eight,
        Endian::Little,
        r.page(6000, 16, 0, None, 4096),
    ));

    let r = RawPage::new(true, false);
    v.push((
        "le64 empty page with stored count".into(),
        LongSize::Eight,
        Endian::Little,
        r.page(7000, 0, MISSED_BOTH, Some(99), 4096),
    ));

    let mut r = RawPage::new(true, false); // max delta, junk in commit bits 27 and 32
    r.hdr(1, (1 << 27) - 1);
    r.payload(0x99999999, 4);
    v.push((
        "le64 max delta, junk commit bits".into(),
        LongSize::Eight,
        Endian::Little,
        r.page(0, 8, (1 << 27) | (1 << 32), None, 4096),
    ));

    let le32 = section8_records(false, false);
    v.push((
        "le32 missed+stored 54321".into(),
        LongSize::Four,
        Endian::Little,
        le32.page(1_000_000, 324, MISSED_BOTH, Some(54321), 4096),
    ));
    let be = section8_records(true, true);
    v.push((
        "be64 missed+stored 4242".into(),
        LongSize::Eight,
        Endian::Big,
        be.page(1_000_000, 324, MISSED_BOTH, Some(4242), 4096),
    ));
    v
}

/// FNV-1a over a payload: lets the C and Rust dumps compare payload bytes in one number.
pub fn fnv(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c9dc5;
    for &b in data {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x01000193);
    }
    h
}

/// The offsets `dump_page` probes with `read_at_offset` (the C program uses the same rule).
pub fn probe_offsets(start: i32, size: i32) -> Vec<i32> {
    let mut v = vec![-1];
    let mut o = 0;
    while o <= start + size + 8 {
        v.push(o);
        o += 13;
    }
    v
}

/// Everything the kbuffer API says about one page, in the exact format of tests/c/kbuffer_pages.c.
pub fn dump_page(out: &mut String, n: usize, page: &[u8], ls: LongSize, en: Endian) {
    let mut kb = KBuffer::new(ls, en);
    let _ = kb.load_subbuffer(page);
    writeln!(
        out,
        "page {n} subbuffer_size={} start_of_data={} timestamp={} missed={}",
        kb.subbuffer_size(),
        kb.start_of_data(),
        kb.timestamp(),
        kb.missed_events()
    )
    .unwrap();
    while let Some(ev) = kb.read_event() {
        let size = kb.event_size();
        let hash = if size > 0 { fnv(ev.data) } else { 0 };
        writeln!(out, " ev ts={} data_off={} event_size={} curr_size={} curr_offset={} curr_index={} missed={} fnv={:08x}",
            ev.timestamp, ev.data_offset, size, kb.curr_size(), kb.curr_offset(), kb.curr_index(),
            kb.missed_events(), hash).unwrap();
        kb.next_event();
    }
    writeln!(
        out,
        " end curr_offset={} curr_index={} event_size={} curr_size={} timestamp={}",
        kb.curr_offset(),
        kb.curr_index(),
        kb.event_size(),
        kb.curr_size(),
        kb.timestamp()
    )
    .unwrap();
    let start = if ls == LongSize::Eight { 16 } else { 12 };
    for o in probe_offsets(start, kb.subbuffer_size()) {
        match kb.read_at_offset(o) {
            Some(ev) => writeln!(
                out,
                " rao {o} ts={} curr_offset={} missed={}",
                ev.timestamp,
                kb.curr_offset(),
                kb.missed_events()
            )
            .unwrap(),
            None => writeln!(out, " rao {o} nil").unwrap(),
        }
    }
    assert_eq!(kb.error(), None, "page {n}: the Rust reader stopped early");
}

/// A small xorshift generator: deterministic page streams without extra dependencies.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A record as the writer gets it: time and payload.
pub type Rec = (u64, Vec<u8>);

/// Random record streams of several shapes, written into pages by `PageWriter`.
/// Returns the pages and, per page, the records that went into it.
pub fn generate_pages(seed: u64, page_size: usize, nrec: usize) -> (Vec<Vec<u8>>, Vec<Vec<Rec>>) {
    let mut rng = Rng(seed | 1);
    let mut w = PageWriter::new(page_size).unwrap();
    let max = typhon_recorder::page::max_record_size(page_size);
    let mut pages = Vec::new();
    let mut per_page: Vec<Vec<Rec>> = vec![Vec::new()];
    let mut ts: u64 = rng.below(1 << 40);
    let mut pending_missed: u64 = 0;
    for _ in 0..nrec {
        ts = match rng.below(20) {
            0 => ts + (1 << 27) + rng.below(1 << 36), // needs a time extend
            1 => ts.saturating_sub(rng.below(5000)),  // earlier than the page time
            2 => ts + (1 << 27) - 1,
            3 => ts + (1 << 27),
            _ => ts + rng.below(3000),
        };
        let len = match rng.below(16) {
            0 => 100 + rng.below(600) as usize,
            1 => 105 + rng.below(12) as usize, // around the 112-byte boundary
            2 => max - rng.below(16) as usize,
            3 => rng.below(4) as usize,
            _ => 12 + rng.below(60) as usize,
        };
        let payload: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if rng.below(40) == 0 {
            pending_missed += match rng.below(4) {
                0 => u64::from(u32::MAX) + rng.below(1000), // more than one page can carry
                _ => 1 + rng.below(100_000),
            };
        }
        if pending_missed != 0 && w.is_empty() {
            pending_missed = w.set_missed(pending_missed).unwrap();
        }
        loop {
            match w.try_push(ts, &payload) {
                Ok(_) => break,
                Err(PushError::Full) => {
                    pages.push(w.finish().to_vec());
                    per_page.push(Vec::new());
                    if pending_missed != 0 {
                        pending_missed = w.set_missed(pending_missed).unwrap();
                    }
                }
                Err(PushError::TooLarge) => unreachable!("generator keeps records ≤ max"),
            }
        }
        per_page.last_mut().unwrap().push((ts, payload));
    }
    pages.push(w.finish().to_vec());
    (pages, per_page)
}

/// Trap variants of a writer page that stay in bounds for the C reader: zero words inside the
/// commit, MISSED without STORED, STORED without MISSED.
pub fn mutate(page: &[u8], which: u64) -> Vec<u8> {
    let mut p = page.to_vec();
    let commit = u64::from_le_bytes(p[8..16].try_into().unwrap());
    let size = commit & COMMIT_MASK;
    let stored = commit & RB_MISSED_STORED != 0;
    match which % 3 {
        0 if !stored && (16 + size + 16) as usize <= p.len() => {
            p[8..16].copy_from_slice(&(commit + 16).to_le_bytes());
        }
        1 => {
            let c = (commit & !RB_MISSED_STORED) | RB_MISSED_EVENTS;
            p[8..16].copy_from_slice(&c.to_le_bytes());
        }
        _ => {
            let c = commit & !RB_MISSED_EVENTS;
            p[8..16].copy_from_slice(&c.to_le_bytes());
        }
    }
    p
}

pub fn mode_args(ls: LongSize, en: Endian) -> [&'static str; 2] {
    [
        if ls == LongSize::Eight { "8" } else { "4" },
        if en == Endian::Big { "b" } else { "l" },
    ]
}

/// Why the C side cannot run here, or `None` if `cc` and libtraceevent are available.
fn c_toolchain_missing() -> Option<String> {
    if Command::new("cc")
        .arg("--version")
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        return Some("no C compiler `cc`".into());
    }
    match Command::new("pkg-config")
        .args(["--exists", "libtraceevent"])
        .status()
    {
        Err(_) => Some("no `pkg-config`".into()),
        Ok(s) if !s.success() => Some("pkg-config finds no libtraceevent".into()),
        Ok(_) => None,
    }
}

/// File offsets of the records on the page at `page_at` of `file`, as kbuffer walks them:
/// (record header, record data), for a page of our writer's layout (8-byte longs, little
/// endian). The damaged-file tests zero a header found this way.
pub fn page_records(file: &[u8], page_at: u64, page_size: usize) -> Vec<(u64, u64)> {
    let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    kb.load_subbuffer(&file[page_at as usize..][..page_size])
        .unwrap();
    let mut out = Vec::new();
    let mut ev = kb.read_event();
    while let Some(e) = ev {
        out.push((
            page_at + kb.curr_offset() as u64,
            page_at + e.data_offset as u64,
        ));
        ev = kb.next_event();
    }
    out
}

/// A fresh scratch directory under the system temp dir (never inside the repository).
pub fn scratch_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("typhon-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Builds `tests/c/<src>` against libtraceevent into `dir`. `None` (after saying why) when the
/// toolchain is absent, unless `TYPHON_REQUIRE_INTEROP=1`, which turns that into a failure.
pub fn build_c(src: &str, dir: &Path) -> Option<PathBuf> {
    if let Some(why) = c_toolchain_missing() {
        if std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() == Ok("1") {
            panic!("TYPHON_REQUIRE_INTEROP=1 but the interop test cannot run: {why}");
        }
        eprintln!("SKIPPED: libtraceevent interop test not run: {why}");
        return None;
    }
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "libtraceevent"])
        .output()
        .unwrap();
    let flags = String::from_utf8(flags.stdout).unwrap();
    let src_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(src);
    let exe = dir.join(src.trim_end_matches(".c"));
    let out = Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&src_path)
        .args(flags.split_whitespace())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cc failed on {}:\n{}",
        src_path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}
