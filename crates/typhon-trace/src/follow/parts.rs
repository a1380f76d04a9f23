//! Reading `OUT.parts/` while the recorder writes it: each slot's new whole pages (compressed:
//! its complete chunks, then the pages of the chunk being gathered from its pending file),
//! without the lock and without writing anything.
//!
//! A slot's part file is held open once found, so the pages a finish copies away and deletes
//! are still read. A compressed slot is read as the compressor writes it: chunk `I` of the part
//! file (the indices of chunks the disk refused, which left a `.lost` tombstone, are passed
//! over), then `slot-NNN.chunk-I.pending` for the `I` that comes next. The pages shown from a
//! pending file are not shown again when their chunk arrives: the chunk's first pages are
//! those. A pending file is used only when its header names the chunk the follower expects,
//! and the header is read again after its pages: a file cut (a refused chunk's tombstone is
//! emptied) or rewritten while it was read is not used this time, so no page is shown torn or
//! twice.

use super::gather::Gather;
use super::FollowError;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use typhon_recorder::sink::{parts_locked, parts_losses, parts_name, PartsName};
use typhon_recorder::tracedat::{decompress_chunk, plausible_size, Compression, CHUNK_HEADER};

/// What the directory says of the recording.
pub(super) enum Seen {
    /// The lock is held, no assembly: recording.
    Live,
    /// The lock is held and an assembly is being made.
    Finishing,
    /// The lock is free (finished and cleaning up, or killed).
    Unlocked,
    /// The directory is gone.
    Gone,
}

/// `session.json`'s fields that the follower needs.
#[derive(Clone, Copy)]
struct Session {
    page: u64,
    chunk_pages: u64,
    compressed: bool,
}

/// A test's hook into a pending file's read (see `Parts::mid_read`).
#[cfg(test)]
type MidRead = Box<dyn FnMut(&Path)>;

/// A slot's part file and, compressed, where its chunks are.
struct Slot {
    path: PathBuf,
    /// `None` while a compressed slot has only a pending file (no chunk written yet).
    file: Option<File>,
    /// Compressed: the byte offset of the next chunk, its index, and the pages of that chunk
    /// already shown from its pending file.
    next_at: u64,
    index: u64,
    from_pending: u64,
}

pub(super) struct Parts {
    dir: PathBuf,
    session: Option<Session>,
    slots: BTreeMap<u8, Slot>,
    /// Scratch buffers, reused.
    buf: Vec<u8>,
    z: Vec<u8>,
    data: Vec<u8>,
    /// The chunk tombstones of the last listing: what [`Parts::drain`] passes over once the
    /// directory is gone.
    lost: BTreeSet<(u8, u64)>,
    /// Tests: run between a pending file's pages and the second read of its header (what a
    /// recorder may do to the file in that moment).
    #[cfg(test)]
    mid_read: Option<MidRead>,
}

fn open_regular(path: &Path) -> io::Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    if !f.metadata()?.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(f)
}

fn invalid(path: &Path, what: String) -> FollowError {
    FollowError::new(path, what)
}

impl Parts {
    pub(super) fn open(dir: &Path) -> Result<Parts, FollowError> {
        std::fs::read_dir(dir).map_err(|e| FollowError::new(dir, format!("reading: {e}")))?;
        Ok(Parts {
            dir: dir.to_path_buf(),
            session: None,
            slots: BTreeMap::new(),
            buf: Vec::new(),
            z: Vec::new(),
            data: Vec::new(),
            lost: BTreeSet::new(),
            #[cfg(test)]
            mid_read: None,
        })
    }

    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Reads `session.json` once it is complete (the recorder writes it at the start, and
    /// again, whole, when the session begins: a read that catches it mid-write waits).
    fn session(&mut self) -> Result<Option<Session>, FollowError> {
        if self.session.is_some() {
            return Ok(self.session);
        }
        let path = self.dir.join("session.json");
        let text = match open_regular(&path).and_then(|f| {
            let mut v = Vec::new();
            io::Read::read_to_end(&mut io::Read::take(f, 64 * 1024), &mut v)?;
            Ok(v)
        }) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(FollowError::new(&path, format!("reading: {e}"))),
        };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&text) else {
            return Ok(None);
        };
        let page = v["page_size"].as_u64().unwrap_or(0);
        typhon_recorder::page::validate_page_size(page as usize)
            .map_err(|e| invalid(&path, format!("page_size: {e}")))?;
        let compressed = match v["compression"].as_str() {
            None => false,
            Some(c) => Compression::parse(c)
                .map_err(|e| invalid(&path, format!("compression: {e}")))?
                .is_compressed(),
        };
        let max = u64::from(typhon_recorder::tracedat::MAX_CHUNK_BYTES) / page;
        let chunk_pages = match v["chunk_pages"].as_u64() {
            None => typhon_recorder::tracedat::DEFAULT_CHUNK_PAGES as u64,
            Some(n) if (1..=max).contains(&n) => n,
            Some(n) => {
                return Err(invalid(
                    &path,
                    format!("chunk_pages is {n}, not a number of pages from 1 to {max}"),
                ))
            }
        };
        self.session = Some(Session {
            page,
            chunk_pages,
            compressed,
        });
        Ok(self.session)
    }

    /// Reads what is new and says what the directory shows of the recording.
    pub(super) fn poll(&mut self, g: &mut Gather) -> Result<Seen, FollowError> {
        let locked = match parts_locked(&self.dir) {
            Ok(l) => l,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Seen::Gone),
            Err(e) => return Err(FollowError::io(&self.dir, e)),
        };
        // The part files' lengths before the listing: a chunk within them was appended after
        // any tombstone before it was made, so the listing holds that tombstone.
        let mut lens: BTreeMap<u8, u64> = self
            .slots
            .iter()
            .map(|(&s, f)| {
                let len = f.file.as_ref().and_then(|f| f.metadata().ok());
                (s, len.map_or(0, |m| m.len()))
            })
            .collect();
        let rd = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Seen::Gone),
            Err(e) => return Err(FollowError::new(&self.dir, format!("reading: {e}"))),
        };
        let mut assembly = false;
        let mut lost: BTreeSet<(u8, u64)> = BTreeSet::new();
        let mut found = Vec::new();
        for e in rd.flatten() {
            match e.file_name().to_str().and_then(parts_name) {
                Some(PartsName::Assembly) => assembly = true,
                Some(PartsName::Lost(s, i)) => {
                    lost.insert((s, i));
                }
                Some(PartsName::Slot(s)) if self.slots.get(&s).is_none_or(|f| f.file.is_none()) => {
                    found.push(s)
                }
                // A compressed slot whose first chunk is not written yet: its pages are pending.
                Some(PartsName::Pending(s, _)) if !self.slots.contains_key(&s) => {
                    self.slots.insert(
                        s,
                        Slot {
                            path: self.dir.join(format!("slot-{s:03}.pages")),
                            file: None,
                            next_at: 0,
                            index: 0,
                            from_pending: 0,
                        },
                    );
                    lens.insert(s, 0);
                }
                _ => {}
            }
        }
        if let Ok(l) = parts_losses(&self.dir) {
            // (A file caught mid-update: the last counts stand until the next poll.)
            g.recording = l;
        }
        // A recorder starting makes the directory a moment before it locks it: asked again
        // after the listing, so that moment does not read as a kill.
        let locked = locked || parts_locked(&self.dir).unwrap_or(false);
        let seen = match (locked, assembly) {
            (true, false) => Seen::Live,
            (true, true) => Seen::Finishing,
            (false, _) => Seen::Unlocked,
        };
        let Some(ses) = self.session()? else {
            return Ok(seen);
        };
        // A slot found now: opened, its length taken, then (compressed) the tombstones listed
        // again, so its chunks too are matched with every tombstone before them.
        let fresh = !found.is_empty();
        for s in found {
            let path = self.dir.join(format!("slot-{s:03}.pages"));
            match open_regular(&path) {
                Ok(file) => {
                    lens.insert(s, file.metadata().map_or(0, |m| m.len()));
                    let slot = self.slots.entry(s).or_insert(Slot {
                        path,
                        file: None,
                        next_at: 0,
                        index: 0,
                        from_pending: 0,
                    });
                    slot.file = Some(file);
                }
                // Deleted by a finish in between: its pages are in OUT.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(FollowError::new(&path, format!("opening: {e}"))),
            }
        }
        if fresh && ses.compressed {
            if let Ok(rd) = std::fs::read_dir(&self.dir) {
                for e in rd.flatten() {
                    if let Some(PartsName::Lost(s, i)) = e.file_name().to_str().and_then(parts_name)
                    {
                        lost.insert((s, i));
                    }
                }
            }
        }
        for (&s, &len) in &lens {
            if ses.compressed {
                self.chunks(s, len, ses, &lost, g)?;
                self.pending(s, ses, &lost, g)?;
            } else {
                self.pages(s, len, ses, g)?;
            }
        }
        self.lost = lost;
        Ok(seen)
    }

    /// The directory is gone (a rotating recording's `keep` deleted the segment while it was
    /// read): the rest of each part file held open, which a deleted file keeps while open
    /// (the finish copies the pages into its assembly and leaves the part files as they are).
    /// What was never in a part file the follower held (a slot found after its last listing,
    /// a compressed slot's pending pages) is not known; the pages read are returned.
    pub(super) fn drain(&mut self, g: &mut Gather) -> Result<u64, FollowError> {
        let Some(ses) = self.session else {
            return Ok(0);
        };
        let lost = std::mem::take(&mut self.lost);
        let before: u64 = self.slots.keys().map(|&s| g.position(s)).sum();
        let lens: Vec<(u8, u64)> = self
            .slots
            .iter()
            .filter_map(|(&s, f)| Some((s, f.file.as_ref()?.metadata().ok()?.len())))
            .collect();
        for (s, len) in lens {
            if ses.compressed {
                self.chunks(s, len, ses, &lost, g)?;
            } else {
                self.pages(s, len, ses, g)?;
            }
        }
        let after: u64 = self.slots.keys().map(|&s| g.position(s)).sum();
        Ok(after - before)
    }

    /// Whether any part file is held open (something of the recording can still be read).
    pub(super) fn holds_files(&self) -> bool {
        self.slots.values().any(|s| s.file.is_some())
    }

    /// An uncompressed slot's new whole pages (a partial last page waits for its rest).
    fn pages(&mut self, s: u8, len: u64, ses: Session, g: &mut Gather) -> Result<(), FollowError> {
        let Some(file) = self.slots.get(&s).and_then(|f| f.file.as_ref()) else {
            return Ok(());
        };
        let path = &self.slots[&s].path;
        let ps = ses.page;
        // Read a few pages at a time: fewer calls, a bounded buffer.
        const BATCH: u64 = 16;
        let mut at = g.position(s) * ps;
        while at + ps <= len {
            let n = ((len - at) / ps).min(BATCH);
            self.buf.resize((n * ps) as usize, 0);
            file.read_exact_at(&mut self.buf, at)
                .map_err(|e| FollowError::new(path, format!("reading at byte {at}: {e}")))?;
            for (i, p) in self.buf.chunks_exact(ps as usize).enumerate() {
                g.page(s, at + i as u64 * ps, p);
            }
            at += n * ps;
        }
        Ok(())
    }

    /// A compressed slot's new complete chunks within `len` bytes of its part file.
    fn chunks(
        &mut self,
        s: u8,
        len: u64,
        ses: Session,
        lost: &BTreeSet<(u8, u64)>,
        g: &mut Gather,
    ) -> Result<(), FollowError> {
        let Some(slot) = self.slots.get_mut(&s) else {
            return Ok(());
        };
        let ps = ses.page;
        loop {
            while lost.contains(&(s, slot.index)) {
                slot.index += 1;
                slot.from_pending = 0;
            }
            let at = slot.next_at;
            if at + CHUNK_HEADER as u64 > len {
                return Ok(());
            }
            let mut h = [0u8; CHUNK_HEADER];
            let Some(file) = slot.file.as_ref() else {
                return Ok(());
            };
            let rd = |buf: &mut [u8], off: u64| {
                file.read_exact_at(buf, off).map_err(|e| {
                    FollowError::new(&slot.path, format!("reading at byte {off}: {e}"))
                })
            };
            rd(&mut h, at)?;
            let c = u64::from(u32::from_le_bytes(h[..4].try_into().unwrap()));
            let u = u32::from_le_bytes(h[4..].try_into().unwrap());
            if at + CHUNK_HEADER as u64 + c > len {
                // Being appended: read at the next poll.
                return Ok(());
            }
            let pages = u64::from(u) / ps;
            let sizes_ok = u > 0
                && u64::from(u) % ps == 0
                && pages <= ses.chunk_pages
                && plausible_size(c, u64::from(u));
            if !sizes_ok {
                // As `recover` counts it: a chunk's worth of pages damaged, and on after it.
                slot.next_at = at + CHUNK_HEADER as u64 + c;
                slot.index += 1;
                let shown = std::mem::take(&mut slot.from_pending).min(ses.chunk_pages);
                g.damaged(s, ses.chunk_pages - shown);
                continue;
            }
            self.z.resize(c as usize, 0);
            rd(&mut self.z, at + CHUNK_HEADER as u64)?;
            slot.next_at = at + CHUNK_HEADER as u64 + c;
            slot.index += 1;
            let shown = std::mem::take(&mut slot.from_pending).min(pages);
            if decompress_chunk(&self.z, u, &mut self.data).is_err() {
                g.damaged(s, pages - shown);
                continue;
            }
            let base = (g.position(s) - shown) * ps;
            for (i, p) in self.data.chunks_exact(ps as usize).enumerate() {
                if (i as u64) < shown {
                    continue;
                }
                g.page(s, base + i as u64 * ps, p);
            }
        }
    }

    /// The pages of the chunk a compressed slot gathers now, from its pending file, past those
    /// shown already.
    fn pending(
        &mut self,
        s: u8,
        ses: Session,
        lost: &BTreeSet<(u8, u64)>,
        g: &mut Gather,
    ) -> Result<(), FollowError> {
        let Some(slot) = self.slots.get_mut(&s) else {
            return Ok(());
        };
        if lost.contains(&(s, slot.index)) {
            return Ok(());
        }
        let path = self
            .dir
            .join(format!("slot-{s:03}.chunk-{}.pending", slot.index));
        let f = match open_regular(&path) {
            Ok(f) => f,
            // Not made yet, or its chunk is written: the part file has its pages.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(FollowError::new(&path, format!("opening: {e}"))),
        };
        let hl = typhon_recorder::sink::PENDING_HEADER_LEN;
        let mut want = [0u8; 16];
        want[..8].copy_from_slice(typhon_recorder::sink::PENDING_MAGIC);
        want[8..].copy_from_slice(&slot.index.to_le_bytes());
        let header_ok = |f: &File| {
            let mut h = [0u8; 16];
            f.read_exact_at(&mut h, 0).is_ok() && h == want
        };
        if !header_ok(&f) {
            // Made but not written yet, or not the recorder's: nothing to show.
            return Ok(());
        }
        let len = f.metadata().map_or(0, |m| m.len());
        let ps = ses.page;
        let have = (len.saturating_sub(hl) / ps).min(ses.chunk_pages);
        if have <= slot.from_pending {
            return Ok(());
        }
        let from = slot.from_pending;
        self.buf.resize(((have - from) * ps) as usize, 0);
        if f.read_exact_at(&mut self.buf, hl + from * ps).is_err() {
            // Cut while read (a tombstone): nothing of it is used.
            return Ok(());
        }
        #[cfg(test)]
        if let Some(h) = self.mid_read.as_mut() {
            h(&path);
        }
        // Read again after the pages: a file emptied or rewritten in between is not used now.
        if !header_ok(&f) || f.metadata().map_or(0, |m| m.len()) < hl + have * ps {
            return Ok(());
        }
        // Only pages the recorder made: a page not yet what it will be ends what is used.
        let good = self
            .buf
            .chunks_exact(ps as usize)
            .take_while(|p| typhon_recorder::sink::page_fault(p).is_none())
            .count() as u64;
        let base = g.position(s) * ps;
        for (i, p) in self
            .buf
            .chunks_exact(ps as usize)
            .take(good as usize)
            .enumerate()
        {
            g.page(s, base + i as u64 * ps, p);
        }
        slot.from_pending = from + good;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_recorder::page::PageWriter;
    use typhon_recorder::sink::{FileSink, SessionSummary, Sink};

    fn page(n: u64) -> Vec<u8> {
        let mut w = PageWriter::new(4096).unwrap();
        for i in 0..10 {
            w.try_push(n * 10 + i + 1, &[7u8; 20]).unwrap();
        }
        w.finish().to_vec()
    }

    /// What a recorder does to a pending file while the follower reads its pages: a cut (the
    /// compressor emptying it into a tombstone) or a header rewritten. Either way the pages read
    /// are not used; once the file is whole again they are, once.
    #[test]
    fn a_pending_file_cut_or_rewritten_mid_read_is_not_used() {
        let dir = std::env::temp_dir().join(format!("typhon-follow-mid-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("run.dat");
        let mut s = FileSink::create_with(&out, 4096, Compression::Zstd { level: 1 }, 8).unwrap();
        s.begin(&SessionSummary {
            page_size: 4096,
            ..Default::default()
        })
        .unwrap();
        for n in 0..3 {
            s.write_page(1, &page(n)).unwrap();
        }
        s.flush().unwrap();
        let parts = typhon_recorder::sink::parts_dir(&out);
        let pending = parts.join("slot-001.chunk-0.pending");
        let whole = std::fs::read(&pending).unwrap();
        assert_eq!(whole.len(), 16 + 3 * 4096);
        let mut p = Parts::open(&parts).unwrap();
        let mut g = Gather::default();
        g.begin(usize::MAX);
        // Cut to nothing after the pages were read.
        p.mid_read = Some(Box::new(|path: &Path| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .unwrap()
                .set_len(0)
                .unwrap();
        }));
        p.poll(&mut g).unwrap();
        assert_eq!((g.take().len(), g.position(1)), (0, 0));
        // Its header rewritten for another chunk.
        let w = whole.clone();
        p.mid_read = Some(Box::new(move |path: &Path| {
            let mut other = w.clone();
            other[8] = 5;
            std::fs::write(path, &other).unwrap();
        }));
        std::fs::write(&pending, &whole).unwrap();
        p.poll(&mut g).unwrap();
        assert_eq!((g.take().len(), g.position(1)), (0, 0));
        // Whole again and left alone: its 3 pages, once.
        p.mid_read = None;
        std::fs::write(&pending, &whole).unwrap();
        p.poll(&mut g).unwrap();
        assert_eq!((g.take().len(), g.position(1)), (30, 3));
        p.poll(&mut g).unwrap();
        assert_eq!((g.take().len(), g.position(1)), (0, 3));
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
