//! Window mode (SPEC §16): the newest pages of every slot kept in memory within a time window
//! and a byte budget, and snapshots of that window written as complete trace.dat files.
//!
//! The writers and the flusher's drain are those of a file recording; only where a finished
//! page goes differs: into a `store::Store` the flusher owns, instead of a sink. The store evicts the
//! page whose last record is oldest, across all slots (a min-heap over the slots' first pages),
//! so that every slot reaches back to the same time: the largest page time ever evicted, the
//! *watermark*. A snapshot covers `(W, T1]`, W being the later of `T1 − window` and the
//! watermark, so every slot holds every record of that interval (page times: a span's is its
//! end) and none older.
//!
//! The cut is taken on the flusher thread (pointer copies of the held pages and the slots'
//! owners); a `typhon-snapshot` thread then trims the pages that cross W or T1, writes the file
//! under a temporary name and renames it when complete (`snapshot`).

#[cfg(unix)]
mod control;
mod cut;
mod snapshot;
mod store;
mod trigger;

#[cfg(unix)]
pub use control::{request_remote, SOCKET_NAME};
pub(crate) use cut::{Session, Window};

pub use snapshot::Snapshot;
pub(crate) use trigger::Rules;
pub use trigger::Trigger;

use crate::codec::records::ThreadKind;
use crate::sync::{AtomicBool, Mutex, Ordering};
use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::sync::Arc;

/// Byte budget of a window given only a duration: 64 MiB.
pub const DEFAULT_WINDOW_BYTES: u64 = 64 << 20;

/// The configuration of window mode, fixed at `start()`.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// The window's length in ns (`u64::MAX`: only the byte budget bounds it).
    pub(crate) window_ns: u64,
    /// Most bytes the held pages may take, with their index.
    pub(crate) budget: u64,
    /// Where snapshots go (absolute).
    pub(crate) dir: PathBuf,
    /// The first part of the snapshots' names.
    pub(crate) program: String,
    pub(crate) compression: crate::tracedat::Compression,
    pub(crate) rules: Vec<Trigger>,
}

/// The result a waiting [`Recorder::snapshot`](crate::Recorder::snapshot) receives.
pub(crate) type Reply = Sender<Result<Snapshot, String>>;

/// A snapshot asked for, not yet cut.
#[doc(hidden)]
pub struct Pending {
    pub(crate) reason: String,
    /// When it was asked for (ns, the recorder's time base).
    pub(crate) trigger_ns: u64,
    /// The cut is taken in the first cycle at or after this time (`trigger_ns + keep_after`).
    pub(crate) due_ns: u64,
    pub(crate) reply: Option<Reply>,
}

impl Pending {
    /// A request with no one waiting for its answer (what `request_snapshot` places; the loom
    /// model's).
    #[doc(hidden)]
    pub fn new(reason: &str, trigger_ns: u64, due_ns: u64) -> Self {
        Self {
            reason: reason.into(),
            trigger_ns,
            due_ns,
            reply: None,
        }
    }

    /// Its reason.
    #[doc(hidden)]
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// What the writers' side (any thread) shares with the flusher's window: the one pending
/// request and whether a snapshot is being written. (Public only for the loom model in
/// `loom-tests/tests/snapshot.rs`.)
#[doc(hidden)]
pub struct Shared {
    /// Set while a request waits for its cut (a cheap check for the flusher's cycles).
    requested: AtomicBool,
    /// Set from a request's acceptance until its file is complete or failed: at most one in
    /// flight.
    busy: AtomicBool,
    pending: Mutex<Option<Pending>>,
    /// The socket `typhon-rec snapshot DIR` asks through, while the recorder runs.
    #[cfg(unix)]
    control: Mutex<Option<control::Control>>,
}

impl Default for Shared {
    fn default() -> Self {
        Self::new()
    }
}

impl Shared {
    #[doc(hidden)]
    pub fn new() -> Self {
        Self {
            requested: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            pending: Mutex::new(None),
            #[cfg(unix)]
            control: Mutex::new(None),
        }
    }

    /// Places a request unless one is pending or being written; never blocks (a request racing
    /// another one for the lock is refused like one that finds it busy).
    #[doc(hidden)]
    pub fn request(&self, p: Pending) -> bool {
        // Acquire/Release on `busy`: the request that wins the flag owns `pending` until the
        // snapshot thread (or a refused cut) clears it.
        if self
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        let Some(mut g) = self.pending.try_lock() else {
            self.busy.store(false, Ordering::Release);
            return false;
        };
        *g = Some(p);
        // Release: the flusher's Acquire load of `requested` sees the request under the lock.
        self.requested.store(true, Ordering::Release);
        true
    }

    /// Serves `dir/typhon.sock` for `core` (unless `TYPHON_CONTROL=0`).
    pub(crate) fn start_control(
        &self,
        dir: &std::path::Path,
        core: std::sync::Weak<crate::session::Core>,
    ) -> std::io::Result<()> {
        #[cfg(unix)]
        if std::env::var_os("TYPHON_CONTROL").map_or(true, |v| v != "0") {
            *self.control.lock() = Some(control::Control::start(dir, core)?);
        }
        #[cfg(not(unix))]
        let _ = (dir, core);
        Ok(())
    }

    /// Stops serving the socket (the recorder is finishing).
    pub(crate) fn stop_control(&self) {
        #[cfg(unix)]
        {
            let c = self.control.lock().take();
            drop(c);
        }
    }

    /// The pending request, if it is due at `now_ns` (flusher).
    #[doc(hidden)]
    pub fn take_due(&self, now_ns: u64) -> Option<Pending> {
        // Acquire: pairs with `request`'s Release store.
        if !self.requested.load(Ordering::Acquire) {
            return None;
        }
        let mut g = self.pending.lock();
        if g.as_ref().is_some_and(|p| p.due_ns <= now_ns) {
            self.requested.store(false, Ordering::Relaxed);
            return g.take();
        }
        None
    }

    /// The request still waiting (at finish: it is answered with an error).
    pub(crate) fn take_any(&self) -> Option<Pending> {
        self.requested.store(false, Ordering::Relaxed);
        self.pending.lock().take()
    }

    /// The snapshot in flight is complete (or failed): the next request may come.
    #[doc(hidden)]
    pub fn done(&self) {
        // Release: a request that sees the flag clear sees the finished snapshot's effects.
        self.busy.store(false, Ordering::Release);
    }
}

/// Who owned a slot from `since` on (ns): what a snapshot's ThreadInfo restates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) since: u64,
    pub(crate) tid: i32,
    pub(crate) name: String,
    pub(crate) kind: ThreadKind,
}

/// Asks the installed recorder, if it keeps a window, for a snapshot of it; returns at once.
/// False if no recorder keeps a window, or if a snapshot is already pending or being written
/// (at most one is in flight). The file goes to the recorder's snapshot directory
/// ([`RecorderBuilder::snapshot_dir`](crate::RecorderBuilder::snapshot_dir)); `reason` is
/// recorded in its metadata.
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// assert!(!typhon_recorder::request_snapshot("no recorder")); // none installed
/// ```
pub fn request_snapshot(reason: &str) -> bool {
    let core = crate::session::ACTIVE.read().clone();
    let Some(core) = core else { return false };
    request_on(&core, reason, 0, None)
}

/// Places a request on `core` (due `keep_after_ns` from now) and wakes its flusher.
pub(crate) fn request_on(
    core: &Arc<crate::session::Core>,
    reason: &str,
    keep_after_ns: u64,
    reply: Option<Reply>,
) -> bool {
    let Some(w) = &core.window else { return false };
    let now = core.clock.to_ns(core.clock.raw());
    let ok = w.request(Pending {
        reason: reason.chars().take(256).collect(),
        trigger_ns: now,
        due_ns: now.saturating_add(keep_after_ns),
        reply,
    });
    if ok {
        core.wake();
    }
    ok
}

/// The program's name for snapshot file names: the executable's file name, with anything but
/// ASCII letters, digits, `-`, `_` and `.` replaced by `_`.
pub(crate) fn program_name() -> String {
    let exe = std::env::current_exe().ok();
    let name = exe
        .as_ref()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "typhon".into());
    let clean: String = name
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() || clean.starts_with('.') {
        format!("typhon{clean}")
    } else {
        clean
    }
}

/// The builder's window settings.
#[derive(Default)]
pub(crate) struct Builder {
    pub(crate) duration: Option<std::time::Duration>,
    pub(crate) bytes: Option<u64>,
    pub(crate) dir: Option<PathBuf>,
    pub(crate) rules: Vec<Trigger>,
}

impl Builder {
    fn on(&self) -> bool {
        self.duration.is_some() || self.bytes.is_some()
    }

    pub(crate) fn check(&self, page_size: usize) -> Result<(), crate::RecorderError> {
        let cfg = |s: String| Err(crate::RecorderError::Config(s));
        if !self.on() {
            if self.dir.is_some() || !self.rules.is_empty() {
                return cfg(
                    "snapshot_dir and snapshot_when need a window (window or window_bytes)".into(),
                );
            }
            return Ok(());
        }
        if self.duration.is_some_and(|d| d.is_zero()) {
            return cfg("the window's duration must be > 0".into());
        }
        // A budget under a few pages would evict every page as it comes.
        let least = 4 * (page_size as u64 + store::PAGE_OVERHEAD);
        if let Some(b) = self.bytes {
            if b < least {
                return cfg(format!("window_bytes {b}: at least {least} (4 pages)"));
            }
        }
        if self.dir.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
            return cfg("the snapshot directory is empty".into());
        }
        Ok(())
    }

    /// The window's configuration and shared state, if one is set; `has_output`: a sink or an
    /// output path is set too, which window mode does not take.
    pub(crate) fn make(
        &self,
        compression: crate::tracedat::Compression,
        has_output: bool,
    ) -> Result<Option<(Config, Arc<Shared>)>, crate::RecorderError> {
        if !self.on() {
            return Ok(None);
        }
        if has_output {
            return Err(crate::RecorderError::Config(
                "a window keeps its pages in memory: set no output or sink with it".into(),
            ));
        }
        let dir = match &self.dir {
            Some(d) => d.clone(),
            None => PathBuf::from("."),
        };
        // Resolved now: a later `chdir` changes nothing.
        let dir = dir.canonicalize().map_err(|e| {
            crate::RecorderError::Config(format!("snapshot directory {}: {e}", dir.display()))
        })?;
        if !dir.is_dir() {
            return Err(crate::RecorderError::Config(format!(
                "snapshot directory {}: not a directory",
                dir.display()
            )));
        }
        let window_ns = self.duration.map_or(u64::MAX, |d| {
            u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
        });
        let cfg = Config {
            window_ns,
            budget: self.bytes.unwrap_or(DEFAULT_WINDOW_BYTES),
            dir,
            program: program_name(),
            compression,
            rules: self.rules.clone(),
        };
        Ok(Some((cfg, Arc::new(Shared::new()))))
    }
}

/// [`Recorder::snapshot`](crate::Recorder::snapshot): a request with a reply, placed once no
/// other is in flight, then waited for.
pub(crate) fn snapshot_blocking(
    core: &Arc<crate::session::Core>,
    reason: &str,
) -> Result<Snapshot, crate::RecorderError> {
    if core.window.is_none() {
        return Err(crate::RecorderError::Config(
            "snapshot: the recorder keeps no window (RecorderBuilder::window)".into(),
        ));
    }
    let gone = || {
        std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            "snapshot: the recorder finished before the snapshot was written",
        )
    };
    let mut backoff = std::time::Duration::from_micros(50);
    loop {
        let (tx, rx) = std::sync::mpsc::channel();
        if request_on(core, reason, 0, Some(tx)) {
            return match rx.recv() {
                Ok(Ok(s)) => Ok(s),
                Ok(Err(e)) => Err(crate::RecorderError::Io(std::io::Error::other(e))),
                Err(_) => Err(crate::RecorderError::Io(gone())),
            };
        }
        if core.flusher_gone() || core.wakeup.is_finishing() {
            return Err(crate::RecorderError::Io(gone()));
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(std::time::Duration::from_millis(5));
    }
}
