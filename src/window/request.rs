//! The snapshot request protocol between any thread and the flusher (SPEC §16): the one pending
//! request, whether a snapshot is in flight, and what the requester gets back. A leaf the write
//! side can hold (the installed recording's [`Hub`](crate::write::gate::Hub) carries it) without
//! reaching the window's flusher half.

use crate::sync::{AtomicBool, Mutex, Ordering};
use std::path::PathBuf;
use std::sync::mpsc::Sender;

/// A snapshot written by [`Recorder::snapshot`](crate::Recorder::snapshot) or on a request.
///
/// Every slot in the file covers the same interval `(from_ns, to_ns]` (CLOCK_MONOTONIC ns, page
/// times: a span's is its end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The complete file.
    pub path: PathBuf,
    /// The interval's start W (exclusive): the later of `to_ns − window` and the end of the
    /// newest page evicted.
    pub from_ns: u64,
    /// The cut T1 (inclusive).
    pub to_ns: u64,
    /// Records in the file, all slots, restatements and open spans included.
    pub records: u64,
    /// Drops inside the interval, as the file's missed counts carry them.
    pub missed: u64,
    /// Spans open at the cut, written ending at it.
    pub open_spans: u64,
    /// Records the flusher-made restatements add (a ThreadInfo per slot, slot 0's session
    /// header, the definitions).
    pub restated: u64,
    /// Records evicted from the window before the cut (the recording's total so far).
    pub evicted_records: u64,
    /// Why it was taken (the reason given, or the trigger).
    pub reason: String,
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
    control: Mutex<Option<super::control::Control>>,
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

    /// Serves `dir/typhon.sock` (unless `TYPHON_CONTROL=0`), answering each request with what
    /// `snapshot` returns (`None`: the recorder is gone, the socket is no longer served).
    #[cfg(unix)]
    pub(crate) fn start_control(
        &self,
        dir: &std::path::Path,
        snapshot: super::control::Serve,
    ) -> std::io::Result<()> {
        if std::env::var_os("TYPHON_CONTROL").map_or(true, |v| v != "0") {
            *self.control.lock() = Some(super::control::Control::start(dir, snapshot)?);
        }
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
