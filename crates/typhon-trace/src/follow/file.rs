//! A finished (or recovered) trace file: read to its end once, each slot from the page the
//! parts left it at, so that nothing is shown twice across the finish.

use super::gather::Gather;
use super::FollowError;
use crate::tracedat::{TraceDatError, TraceFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(super) struct FileReader {
    path: PathBuf,
    file: TraceFile,
    /// Pages of each slot shown before (from the parts): passed over.
    skip: BTreeMap<u8, u64>,
    done: bool,
}

/// The losses a finished (or recovered) file's metadata counts, by the names the parts give
/// them: the session's counters, the slots' filtered, refused, sink_lost and clamped summed,
/// and `missed`. What a follower of a finished file reports, and `typhon-rec live FILE` too.
///
/// ```no_run
/// let f = typhon_trace::tracedat::TraceFile::open_streaming("run.dat")?;
/// let losses = typhon_trace::follow::meta_losses(&f);
/// println!("{} missed", losses.get("missed").copied().unwrap_or(0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn meta_losses(file: &TraceFile) -> BTreeMap<String, u64> {
    let mut m: BTreeMap<String, u64> = BTreeMap::new();
    if let Some(Ok(meta)) = file.typhon_meta() {
        let s = &meta.session;
        for k in SESSION_KEYS {
            m.insert((*k).into(), s[*k].as_u64().unwrap_or(0));
        }
        let mut filtered = s["filtered_no_slot"].as_u64().unwrap_or(0);
        let (mut refused, mut sink_lost, mut clamped) = (0, 0, 0);
        for sl in s["slots"].as_array().into_iter().flatten() {
            let n = |k: &str| sl[k].as_u64().unwrap_or(0);
            filtered += n("filtered");
            refused += n("refused");
            sink_lost += n("sink_lost");
            clamped += n("clamped");
        }
        m.insert("filtered".into(), filtered);
        m.insert("refused".into(), refused);
        m.insert("sink_lost".into(), sink_lost);
        m.insert("clamped".into(), clamped);
        m.insert("missed".into(), meta.slots.iter().map(|s| s.missed).sum());
    }
    m
}

/// Counters of the file's metadata that are losses, by the names the parts give them.
const SESSION_KEYS: &[&str] = &[
    "pages_lost",
    "sink_errors",
    "no_slot",
    "damaged_pages",
    "torn_bytes",
    "torn_chunks",
    "damaged_chunks",
    "duplicate_chunks",
    "missing_chunks",
    "missing_pages",
    "unreadable_pages",
];

impl FileReader {
    pub(super) fn open(path: &Path, skip: &BTreeMap<u8, u64>) -> Result<Self, FollowError> {
        let file = TraceFile::open_streaming(path).map_err(|e| err(path, e))?;
        Ok(FileReader {
            path: path.to_path_buf(),
            file,
            skip: skip.clone(),
            done: false,
        })
    }

    /// The file's metadata: thread names and losses.
    fn meta(&self, g: &mut Gather) {
        let m = meta_losses(&self.file);
        if let Some(Ok(meta)) = self.file.typhon_meta() {
            for sm in &meta.slots {
                if !sm.name.is_empty() {
                    g.threads.insert(u32::from(sm.slot), sm.name.clone());
                }
            }
        }
        g.recording = m;
    }

    /// Reads the file to its end (once: a finished file does not change).
    pub(super) fn poll(&mut self, g: &mut Gather) -> Result<(), FollowError> {
        if self.done {
            return Ok(());
        }
        self.meta(g);
        let ps = u64::from(self.file.page_size());
        let cpus: Vec<u32> = self.file.data_cpus().collect();
        for cpu in cpus {
            let Ok(slot) = u8::try_from(cpu) else {
                continue;
            };
            let mut skip = self.skip.get(&slot).copied().unwrap_or(0);
            let mut st = self.file.stream_cpu(cpu);
            while let Some(p) = st.next_page() {
                match p {
                    Ok((at, page)) => {
                        if skip > 0 {
                            skip -= 1;
                            continue;
                        }
                        // The last page of a file may be partial: padded to a whole page.
                        if page.len() as u64 == ps {
                            g.page(slot, at, page);
                        } else {
                            let mut full = page.to_vec();
                            full.resize(ps as usize, 0);
                            g.page(slot, at, &full);
                        }
                    }
                    Err(TraceDatError::DamagedPage { pages, .. }) => {
                        let passed = pages.min(skip);
                        skip -= passed;
                        g.damaged(slot, pages - passed);
                    }
                    Err(e) => return Err(err(&self.path, e)),
                }
            }
        }
        self.done = true;
        Ok(())
    }
}

fn err(path: &Path, e: TraceDatError) -> FollowError {
    let what = e.to_string();
    let p = path.display().to_string();
    FollowError::new(
        path,
        what.strip_prefix(&format!("{p}: "))
            .unwrap_or(&what)
            .to_owned(),
    )
}
