//! `typhon-rec convert IN OUT`: a recording between its forms (trace.dat version 6, version 7
//! uncompressed or zstd-compressed), streamed a page (or a chunk) at a time.

use std::io::{self, Read};
use std::path::Path;
use typhon_recorder::tracedat::{
    write_tracedat, write_tracedat_v7, Compression, FileMeta, SlotPages,
};
use typhon_trace::tracedat::{CpuStream, TraceFile};

/// The pages of one CPU as a byte stream (decompressed chunk by chunk for a compressed file).
struct Pages<'f> {
    s: CpuStream<'f>,
    page: Vec<u8>,
    pos: usize,
}

impl Read for Pages<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.page.len() {
            match self.s.next_page() {
                None => return Ok(0),
                Some(Ok((_, p))) => {
                    self.page.clear();
                    self.page.extend_from_slice(p);
                    self.pos = 0;
                }
                Some(Err(e)) => {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
                }
            }
        }
        let n = buf.len().min(self.page.len() - self.pos);
        buf[..n].copy_from_slice(&self.page[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Converts `inp` into `out` as `version` (6 or 7) with `compression` (version 7 only),
/// `chunk_pages` pages per chunk (0: the default), and says what it wrote. An existing `out`
/// is refused, or with `force` replaced (written beside it, then renamed over it, so a failed
/// conversion leaves it as it was).
pub fn convert(
    inp: &Path,
    out: &Path,
    compression: Compression,
    version: Option<u32>,
    chunk_pages: usize,
    force: bool,
) -> Result<(), String> {
    let version = version.unwrap_or(if compression.is_compressed() { 7 } else { 6 });
    if version == 6 && compression.is_compressed() {
        return Err("--version 6 cannot be compressed: use --version 7 or --compress none".into());
    }
    if version != 6 && version != 7 {
        return Err(format!("--version {version}: 6 or 7"));
    }
    if let Ok(m) = std::fs::symlink_metadata(out) {
        if crate::inspect::same_file(inp, out) {
            return Err(format!(
                "{}: is the input: the conversion would overwrite the recording",
                out.display()
            ));
        }
        if !force {
            return Err(format!(
                "{}: exists: give another output path, or --force to replace it",
                out.display()
            ));
        }
        if !m.is_file() {
            return Err(format!(
                "{}: exists and is not a regular file: --force replaces only a file",
                out.display()
            ));
        }
    }
    let f = TraceFile::open_streaming(inp).map_err(|e| format!("{}: {e}", inp.display()))?;
    let meta: FileMeta = match f.typhon_meta() {
        Some(Ok(m)) => m,
        Some(Err(e)) => return Err(format!("{}: {e}", inp.display())),
        None => {
            return Err(format!(
                "{}: not a Typhon recording (no session metadata); convert other trace.dat files with `trace-cmd convert`",
                inp.display()
            ))
        }
    };
    if meta.page_size != f.page_size() {
        return Err(format!(
            "{}: the metadata's page size {} is not the file's {}",
            inp.display(),
            meta.page_size,
            f.page_size()
        ));
    }
    let mut slots = Vec::new();
    // Every CPU with data is kept, those past a recorder's 256 slots too (a file from another
    // writer, or edited): dropping one would lose its records without a word.
    for cpu in f.data_cpus() {
        // The pages are counted first (the writer places the slots by their lengths).
        let mut s = f.stream_cpu(cpu);
        let mut n = 0u64;
        while let Some(p) = s.next_page() {
            let (_, p) = p.map_err(|e| format!("{}: cpu {cpu}: {e}", inp.display()))?;
            if p.len() == f.page_size() as usize {
                n += 1;
            }
        }
        if n == 0 {
            continue;
        }
        let src = Pages {
            s: f.stream_cpu(cpu),
            page: Vec::new(),
            pos: 0,
        };
        let len = n * u64::from(f.page_size());
        slots.push(SlotPages {
            slot: cpu,
            ..SlotPages::new(0, len, src.take(len))
        });
    }
    // Records the metadata says were written but the file's data does not hold (a damaged
    // option hid a CPU's data, a table entry cut short) would be dropped by the copy without a
    // word, as a damaged page would: refused alike.
    let unread = f.unread_records();
    if unread > 0 {
        return Err(format!(
            "{}: {unread} records its metadata says were written are not in its data (`typhon-rec stats` shows the warnings): not converted",
            inp.display()
        ));
    }
    // Without --force, create_new: nothing made at `out` since the check is overwritten.
    let dest = if force {
        temp_beside(out)
    } else {
        out.to_path_buf()
    };
    let out_file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&dest)
        .map_err(|e| format!("{}: {e}", dest.display()))?;
    let mut w = io::BufWriter::new(out_file);
    let r = if version == 6 {
        write_tracedat(&mut w, &meta, &mut slots)
    } else {
        write_tracedat_v7(&mut w, &meta, compression, chunk_pages, &mut slots)
    }
    .and_then(|()| io::Write::flush(&mut w));
    let r = r.and_then(|()| {
        w.into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
    });
    let r = r.and_then(|()| {
        if force {
            std::fs::rename(&dest, out)
        } else {
            Ok(())
        }
    });
    if let Err(e) = r {
        let _ = std::fs::remove_file(&dest);
        return Err(format!("writing {}: {e}", out.display()));
    }
    summary(inp, out, version, compression)
}

/// A new name beside `out` for the file that replaces it.
fn temp_beside(out: &Path) -> std::path::PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".convert-{}", std::process::id()));
    out.with_file_name(name)
}

/// What `convert` wrote, read back from the file written: its records, slots and bytes.
fn summary(inp: &Path, out: &Path, version: u32, compression: Compression) -> Result<(), String> {
    use typhon_recorder::printable::printable;
    let g = TraceFile::open_streaming(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let (mut records, mut slots) = (0u64, 0u32);
    for cpu in g.data_cpus() {
        let n = g.stream_cpu(cpu).filter(Result::is_ok).count() as u64;
        records += n;
        slots += u32::from(n > 0);
    }
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let form = match (version, compression) {
        (6, _) => "trace.dat version 6".to_owned(),
        (v, Compression::None) => format!("trace.dat version {v}, uncompressed"),
        (v, c) => format!("trace.dat version {v}, {c}"),
    };
    println!(
        "wrote {}: {form}, {records} records in {slots} slots, {} bytes (from {} bytes)",
        printable(&out.display().to_string()),
        size(out),
        size(inp)
    );
    Ok(())
}
