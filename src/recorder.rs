//! The producer API and the recorder's lifecycle.
//!
//! A [`Recorder`] is built with [`RecorderBuilder`], started (which installs it process-wide and
//! starts its flusher thread), and finished with [`Recorder::finish`], which writes out every
//! record written before the call and returns the final [`Stats`]. While it runs, any thread
//! records through free functions — no handle to pass around:
//!
//! ```
//! use typhon_recorder::{recorder::RecorderBuilder, sink::MemorySink};
//! let sink = MemorySink::new();
//! let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
//! typhon_recorder::tick_start();
//! typhon_recorder::ingress_received(7, 1, 0, 64);
//! {
//!     let _s = typhon_recorder::span("update");
//!     typhon_recorder::phase_start(1);
//! }
//! let stats = rec.finish().unwrap();
//! assert_eq!(stats.user_written(), 5); // ThreadInfo + 4 records
//! assert_eq!(stats.total_missed(), 0);
//! ```
//!
//! Cost model. With no recorder installed, or for a kind that is filtered out, a write is one
//! relaxed load of a per-kind flag and a branch. Otherwise it is a thread-local lookup, a clock
//! read (unless the caller supplies the timestamp), the record's stores into the thread's own ring
//! and one Release store of the ring head. A thread's first write claims a slot and allocates its
//! ring (once per slot, reused by later threads); after that nothing allocates, locks or makes a
//! system call. A full ring drops the record and counts it.

use crate::clock::Clock;
use crate::codec::{self, correlation, records, TraceEventKind};
use crate::registry::{Parked, Registry, SLOTS};
use crate::ring::Producer;
use crate::sink::{SessionSummary, Sink, SlotSummary};
use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, RwLock};
use std::cell::RefCell;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use crate::codec::correlation::IngressDropReason;
pub use crate::codec::records::{ThreadKind, TraceContext};

// Every write reads KIND_STATE and GEN, from every thread, and every CeLog write the zones;
// they change only at start and finish (or CeLogSetZones). Each sits on cache lines of its own
// (`CachePadded`), so that nothing written often (ACTIVE's lock word, the slotless counters, a
// static of another crate the linker puts next to them) takes their line away from the
// writers' caches: in one build of `typhon-rec`, GEN shared its line with ACTIVE and
// FILTERED_NO_SLOT, and the zones theirs with a benchmark's counters and puffin's lock.

/// Per-kind state: [`KIND_OFF`] while no recorder is installed, else [`KIND_ON`] or
/// [`KIND_FILTERED`]. One relaxed byte load decides the disabled, filtered and enabled paths; the
/// disabled path makes no call (it used to call `count_filtered` just to find no recorder).
static KIND_STATE: CachePadded<[AtomicU8; 256]> =
    CachePadded::new([const { AtomicU8::new(KIND_OFF) }; 256]);
const KIND_OFF: u8 = 0;
const KIND_FILTERED: u8 = 1;
const KIND_ON: u8 = 2;
/// Generation of the installed recorder (0 = none); a thread's cached slot belongs to one.
static GEN: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));
/// Writes of threads without a slot while a recorder runs, in plain counters so that counting
/// one takes no lock: events lost because every slot was taken (`no_slot`), and filtered
/// writes of threads that had not claimed a slot (`filtered`). `start` zeroes them and
/// `finish` moves them into the recorder's `Core`, both under ACTIVE's write lock.
static SLOTLESS: Slotless = Slotless {
    no_slot: CachePadded::new(AtomicU64::new(0)),
    filtered: CachePadded::new(AtomicU64::new(0)),
};

/// See [`SLOTLESS`].
struct Slotless {
    no_slot: CachePadded<AtomicU64>,
    filtered: CachePadded<AtomicU64>,
}

impl Slotless {
    /// Zeroes both (at start).
    fn reset(&self) {
        // Relaxed: under ACTIVE's write lock, before the generation and kind flags change. A
        // write that raced the last `finish`, or (on a weakly ordered CPU) one racing this
        // `start`, may see its count go: the "one write around start/finish" of
        // `Recorder::finish`'s docs.
        self.no_slot.store(0, Ordering::Relaxed);
        self.filtered.store(0, Ordering::Relaxed);
    }

    /// Moves both into `core` (at finish).
    fn settle(&self, core: &Core) {
        // Relaxed: statistics; the flusher reads the totals after the `finish` handshake.
        let n = self.no_slot.swap(0, Ordering::Relaxed);
        core.no_slot.fetch_add(n, Ordering::Relaxed);
        let n = self.filtered.swap(0, Ordering::Relaxed);
        core.filtered_no_slot.fetch_add(n, Ordering::Relaxed);
    }
}
static NEXT_GEN: AtomicU64 = AtomicU64::new(1);
static ACTIVE: RwLock<Option<Arc<Core>>> = RwLock::new(None);
/// CeLog zones (CeLogSetZones): user and CE masks.
static ZONE_USER: CachePadded<AtomicU32> = CachePadded::new(AtomicU32::new(u32::MAX));
static ZONE_CE: CachePadded<AtomicU32> = CachePadded::new(AtomicU32::new(u32::MAX));

/// Errors from starting or finishing a recorder, and from writes that take variable input.
#[derive(Debug)]
pub enum RecorderError {
    /// A configuration value is out of range.
    Config(String),
    /// Another recorder is installed in this process.
    AlreadyInstalled,
    /// An I/O error from the sink or the output file.
    Io(std::io::Error),
    /// The flusher thread panicked.
    FlusherPanicked,
    /// The recording ended but its output could not be completed (a full disk at finish):
    /// the final counters are still here, and the error says where the pages are kept and
    /// how to recover them.
    Unfinished(Box<Unfinished>),
}

/// What a [`RecorderError::Unfinished`] carries.
///
/// ```
/// use typhon_recorder::recorder::{RecorderError, Unfinished, Stats};
/// let e = RecorderError::Unfinished(Box::new(Unfinished {
///     error: std::io::Error::other("finishing /tmp/x.dat: no space; run `typhon-rec recover /tmp/x.dat`"),
///     stats: Stats::default(),
/// }));
/// assert!(e.to_string().contains("typhon-rec recover /tmp/x.dat"));
/// assert!(e.stats().is_some());
/// ```
#[derive(Debug)]
pub struct Unfinished {
    /// Why, naming the output and its parts directory and saying how to recover.
    pub error: std::io::Error,
    /// The session's final counters, as `finish()` would have returned them.
    pub stats: Stats,
}

impl RecorderError {
    /// The final counters, when the session ended but its output could not be completed.
    ///
    /// ```
    /// assert!(typhon_recorder::recorder::RecorderError::AlreadyInstalled.stats().is_none());
    /// ```
    pub fn stats(&self) -> Option<&Stats> {
        match self {
            RecorderError::Unfinished(u) => Some(&u.stats),
            _ => None,
        }
    }
}

impl fmt::Display for RecorderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecorderError::Config(s) => write!(f, "invalid recorder configuration: {s}"),
            RecorderError::AlreadyInstalled => {
                f.write_str("a recorder is already installed in this process")
            }
            RecorderError::Io(e) => write!(f, "recorder I/O error: {e}"),
            RecorderError::FlusherPanicked => f.write_str("the flusher thread panicked"),
            RecorderError::Unfinished(u) => write!(f, "recorder I/O error: {}", u.error),
        }
    }
}

impl std::error::Error for RecorderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecorderError::Io(e) => Some(e),
            RecorderError::Unfinished(u) => Some(&u.error),
            _ => None,
        }
    }
}

impl From<std::io::Error> for RecorderError {
    fn from(e: std::io::Error) -> Self {
        RecorderError::Io(e)
    }
}

/// Why a write with variable-size input was not recorded. (Fixed-size writes cannot fail; a
/// full ring is not an error but a counted drop.)
///
/// ```
/// use typhon_recorder::recorder::WriteError;
/// assert!(WriteError::TooLarge { size: 5000, max: 4072 }.to_string().contains("5000"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// The record is larger than `max`: what one page holds (page size − 24), and never more
    /// than 65534 bytes, the most a record's u16 size field can say.
    TooLarge {
        /// The record's size.
        size: usize,
        /// The largest record allowed: `min(page size − 24, 65534)`.
        max: usize,
    },
    /// The input is malformed (e.g. a NUL inside a span name, a CeLog id out of range).
    Invalid(String),
    /// [`span_end`] was given a span that is not the thread's innermost open one.
    SpanMismatch {
        /// The span the caller tried to end.
        span_id: u64,
        /// The thread's innermost open span (0 = none).
        innermost: u64,
    },
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::TooLarge { size, max } if *max >= codec::CommonHeader::MAX_RECORD => {
                write!(
                    f,
                    "record of {size} bytes exceeds the {max}-byte maximum of a record"
                )
            }
            WriteError::TooLarge { size, max } => write!(
                f,
                "record of {size} bytes does not fit in a page (max {max}); use a larger page size"
            ),
            WriteError::Invalid(s) => write!(f, "invalid record: {s}"),
            WriteError::SpanMismatch { span_id, innermost } => write!(
                f,
                "span {span_id:#x} is not the innermost open span ({innermost:#x})"
            ),
        }
    }
}

impl std::error::Error for WriteError {}

/// Recorder configuration.
///
/// ```
/// use std::time::Duration;
/// use typhon_recorder::recorder::RecorderBuilder;
/// let b = RecorderBuilder::new().page_size(8192).ring_bytes(1 << 16)
///     .flush_interval(Duration::from_millis(5));
/// assert!(b.validate().is_ok());
/// assert!(RecorderBuilder::new().page_size(5000).validate().is_err());
/// ```
pub struct RecorderBuilder {
    sink: Option<Box<dyn Sink>>,
    output: Option<PathBuf>,
    page_size: usize,
    ring_bytes: usize,
    flush_interval: Duration,
    max_page_age: Duration,
    spare_rings: usize,
    disabled: Vec<TraceEventKind>,
}

impl Default for RecorderBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// Default bytes per slot ring: 2 MiB, one huge page ([`crate::ring::HUGE_PAGE`]).
///
/// Typhon's primary ring is 1 MiB. Twice that costs a megabyte more per thread and buys two
/// things: where the kernel gives transparent huge pages, the whole ring sits under one TLB
/// entry (why that shortens the writes' tail, with figures: [`crate::ring`]'s `Pages`), and a
/// producer the scheduler holds back can fall ~38 ms behind at 2.5 M records/s before it
/// drops, where 1 MiB held ~19 ms.
pub const DEFAULT_RING_BYTES: usize = crate::ring::HUGE_PAGE;
/// Default flush interval.
pub const DEFAULT_FLUSH_INTERVAL: Duration = Duration::from_millis(10);
/// Default number of spare rings kept faulted in for threads' first events.
pub const DEFAULT_SPARE_RINGS: usize = 2;

impl RecorderBuilder {
    /// Defaults: 4096-byte pages, 2 MiB per slot ring, 2 spare rings, 10 ms flush interval,
    /// pages older than 1 s flushed even when not full, every kind enabled, no sink (set one or
    /// an output path).
    ///
    /// ```
    /// let b = typhon_recorder::recorder::RecorderBuilder::new();
    /// assert!(b.validate().is_ok());
    /// ```
    pub fn new() -> Self {
        Self {
            sink: None,
            output: None,
            page_size: crate::page::DEFAULT_PAGE_SIZE,
            ring_bytes: DEFAULT_RING_BYTES,
            flush_interval: DEFAULT_FLUSH_INTERVAL,
            max_page_age: Duration::from_secs(1),
            spare_rings: DEFAULT_SPARE_RINGS,
            disabled: Vec::new(),
        }
    }

    /// Pages go to this sink.
    ///
    /// ```
    /// let b = typhon_recorder::recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink);
    /// # drop(b);
    /// ```
    pub fn sink(mut self, sink: impl Sink + 'static) -> Self {
        self.sink = Some(Box::new(sink));
        self
    }

    /// Record to a trace.dat file at `path` (pages stream to `<path>.parts/` while recording;
    /// `finish()` assembles the file).
    ///
    /// ```
    /// let b = typhon_recorder::recorder::RecorderBuilder::new().output("/tmp/x.dat");
    /// # drop(b);
    /// ```
    pub fn output(mut self, path: impl Into<PathBuf>) -> Self {
        self.output = Some(path.into());
        self
    }

    /// Page (sub-buffer) size: a power of two from 4096 to 1 MiB.
    ///
    /// ```
    /// let b = typhon_recorder::recorder::RecorderBuilder::new().page_size(16384);
    /// assert!(b.validate().is_ok());
    /// ```
    pub fn page_size(mut self, bytes: usize) -> Self {
        self.page_size = bytes;
        self
    }

    /// Bytes per slot ring: a power of two from 4096 to 1 GiB. (A record larger than half the
    /// ring can be dropped when it would have to wrap; keep the ring well above the page size.)
    ///
    /// ```
    /// let b = typhon_recorder::recorder::RecorderBuilder::new().ring_bytes(4096);
    /// assert!(b.validate().is_ok());
    /// ```
    pub fn ring_bytes(mut self, bytes: usize) -> Self {
        self.ring_bytes = bytes;
        self
    }

    /// Rings to keep allocated and faulted in for threads that have none yet (0 to 255).
    ///
    /// A thread's first event claims a slot and needs a ring of [`ring_bytes`](Self::ring_bytes);
    /// faulting in a fresh 2 MiB in 4 KiB pages takes 0.8–1.5 ms on a small VM, a hitch in a frame.
    /// `start()` makes this many rings before it returns and a helper thread of the flusher's
    /// (`typhon-spares`, alive only while the pool is short) makes new ones as threads take them:
    /// after the flusher's next cycle, or at once when a claim takes the last spare (that claim
    /// wakes the flusher, some 20–30 µs more on its first event), so the first event of a thread
    /// that finds a spare costs a few microseconds (the rest is the slot claim and the thread's
    /// ThreadInfo record). Spares are huge-page backed from 2 MiB up where the kernel allows (see
    /// [`Backing`](crate::ring::Backing)); each may take milliseconds when the kernel must compact
    /// memory, in `start()` or on that helper, never on a writing thread, and on the flusher only
    /// if no thread can be started, so the drain of the rings does not wait for the kernel. A slot
    /// keeps its ring for later threads, so spares matter only while the number of threads grows,
    /// and a ring a thread had to make itself (4 KiB pages) stays with its slot: give at least as
    /// many spares as threads that start at once. The cost is `n × ring_bytes` of memory held from
    /// the start; 0 turns the pool off (each new slot's first event then allocates its
    /// ring). [`crate::register_thread`] moves what remains of the
    /// claim to thread start.
    ///
    /// ```
    /// let b = typhon_recorder::recorder::RecorderBuilder::new().spare_rings(4);
    /// assert!(b.validate().is_ok());
    /// assert!(typhon_recorder::recorder::RecorderBuilder::new().spare_rings(300).validate().is_err());
    /// ```
    pub fn spare_rings(mut self, n: usize) -> Self {
        self.spare_rings = n;
        self
    }

    /// How often the flusher drains every ring (it also wakes when a ring passes half full).
    ///
    /// ```
    /// let b = typhon_recorder::recorder::RecorderBuilder::new()
    ///     .flush_interval(std::time::Duration::from_millis(1));
    /// # drop(b);
    /// ```
    pub fn flush_interval(mut self, d: Duration) -> Self {
        self.flush_interval = d;
        self
    }

    /// A partly filled page is handed to the sink once it is this old (bounds what a crash can
    /// lose for slow threads).
    ///
    /// ```
    /// let b = typhon_recorder::recorder::RecorderBuilder::new()
    ///     .max_page_age(std::time::Duration::from_millis(100));
    /// # drop(b);
    /// ```
    pub fn max_page_age(mut self, d: Duration) -> Self {
        self.max_page_age = d;
        self
    }

    /// Filters out a kind: its writes cost one load and a branch and are counted as filtered,
    /// against the writing thread's slot. A thread claims its slot with its first recorded
    /// event (or [`crate::register_thread`]); a thread whose every write is filtered takes no
    /// slot, and its filtered writes are counted in [`Stats::filtered_no_slot`].
    ///
    /// ```
    /// use typhon_recorder::codec::TraceEventKind;
    /// let b = typhon_recorder::recorder::RecorderBuilder::new().disable(TraceEventKind::TICK_START);
    /// # drop(b);
    /// ```
    pub fn disable(mut self, kind: TraceEventKind) -> Self {
        self.disabled.push(kind);
        self
    }

    /// Checks the configuration without starting anything.
    ///
    /// ```
    /// let e = typhon_recorder::recorder::RecorderBuilder::new().ring_bytes(3000).validate();
    /// assert!(e.is_err());
    /// ```
    pub fn validate(&self) -> Result<(), RecorderError> {
        crate::page::validate_page_size(self.page_size)
            .map_err(|e| RecorderError::Config(e.to_string()))?;
        if !self.ring_bytes.is_power_of_two()
            || self.ring_bytes < crate::ring::MIN_CAPACITY
            || self.ring_bytes > crate::ring::MAX_CAPACITY
        {
            return Err(RecorderError::Config(format!(
                "ring size {} must be a power of two between {} and {}",
                self.ring_bytes,
                crate::ring::MIN_CAPACITY,
                crate::ring::MAX_CAPACITY
            )));
        }
        if self.flush_interval.is_zero() {
            return Err(RecorderError::Config("flush interval must be > 0".into()));
        }
        if self.spare_rings >= SLOTS {
            return Err(RecorderError::Config(format!(
                "{} spare rings: at most {} (one per user slot)",
                self.spare_rings,
                SLOTS - 1
            )));
        }
        Ok(())
    }

    /// Starts the flusher and installs the recorder process-wide. Fails if one is installed.
    ///
    /// ```
    /// # let _g = typhon_recorder::recorder::doc_lock();
    /// let r = typhon_recorder::recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// assert!(typhon_recorder::recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().is_err());
    /// r.finish().unwrap();
    /// ```
    pub fn start(self) -> Result<Recorder, RecorderError> {
        self.validate()?;
        // The spares are made before the lock: threads of a previous recorder are not held up.
        let registry = Registry::with_spares(self.ring_bytes, self.spare_rings);
        registry.top_up_spares();
        // Checked before the sink is made, so a refused start leaves no `<out>.parts/` behind.
        let mut active = ACTIVE.write();
        if active.is_some() {
            return Err(RecorderError::AlreadyInstalled);
        }
        let sink: Box<dyn Sink> = match (self.sink, &self.output) {
            (Some(s), None) => s,
            (None, Some(path)) if path.as_os_str().is_empty() => {
                return Err(RecorderError::Config("the output path is empty".into()))
            }
            // `create` makes the path absolute now: a later `chdir` changes nothing.
            (None, Some(path)) => {
                Box::new(crate::filesink::FileSink::create(path, self.page_size)?)
            }
            (None, None) => {
                return Err(RecorderError::Config(
                    "no output: set a sink or an output path".into(),
                ))
            }
            (Some(_), Some(_)) => {
                return Err(RecorderError::Config(
                    "set either a sink or an output path, not both".into(),
                ))
            }
        };
        let gen = NEXT_GEN.fetch_add(1, Ordering::Relaxed);
        let core = Arc::new(Core {
            gen,
            clock: Clock::new(),
            registry,
            page_size: self.page_size,
            // A record's size is a u16 (at most 65534), whatever a large page could hold.
            max_record: crate::page::max_record_size(self.page_size)
                .min(codec::CommonHeader::MAX_RECORD),
            flush_interval: self.flush_interval,
            max_page_age: self.max_page_age,
            no_slot: AtomicU64::new(0),
            filtered_no_slot: AtomicU64::new(0),
            pid: std::process::id() as i32,
            wakeup: crate::wake::Wake::new(),
            progress: crate::flusher::Progress::default(),
        });
        let flusher = crate::flusher::spawn(core.clone(), sink)?;
        *active = Some(core.clone());
        SLOTLESS.reset();
        // Relaxed: threads that see the new generation take the slow path, which reads ACTIVE
        // under its lock; the lock orders the Core's construction.
        GEN.store(gen, Ordering::Relaxed);
        for (k, flag) in KIND_STATE.iter().enumerate() {
            let on = !self.disabled.contains(&TraceEventKind(k as u8));
            flag.store(if on { KIND_ON } else { KIND_FILTERED }, Ordering::Relaxed);
        }
        drop(active);
        Ok(Recorder {
            core,
            flusher: Some(flusher),
        })
    }
}

/// Waits for a drain of the installed recorder's rings, if one is installed (for the benchmark
/// harness, which has no `Recorder` handle in some phases).
pub(crate) fn drain_installed() {
    let core = ACTIVE.read().clone();
    if let Some(core) = core {
        core.drain(|| core.wakeup.is_finishing());
    }
}

/// State shared by the producers, the flusher and the handle.
pub(crate) struct Core {
    pub(crate) gen: u64,
    pub(crate) clock: Clock,
    pub(crate) registry: Registry,
    pub(crate) page_size: usize,
    pub(crate) max_record: usize,
    pub(crate) flush_interval: Duration,
    pub(crate) max_page_age: Duration,
    /// Events of threads that found every slot taken, once the recorder has been uninstalled
    /// (see [`Core::no_slot`]).
    no_slot: AtomicU64,
    /// Filtered writes of threads without a slot, once the recorder has been uninstalled (see
    /// [`Core::filtered_no_slot`]).
    filtered_no_slot: AtomicU64,
    /// The process id at start: a thread whose id equals it is the main thread. Read once here,
    /// because `getpid` is a system call (glibc keeps no cache of it) that each thread's claim
    /// would otherwise pay, about 0.5 µs on a small VM.
    pub(crate) pid: i32,
    /// Wakes the flusher early, and tells it to finish (see [`crate::wake`]).
    pub(crate) wakeup: crate::wake::Wake,
    pub(crate) progress: crate::flusher::Progress,
}

impl Core {
    /// Filtered writes of threads without a slot so far: the running count while this
    /// recorder is installed, the final one after.
    pub(crate) fn filtered_no_slot(&self) -> u64 {
        self.slotless(&self.filtered_no_slot, &SLOTLESS.filtered)
    }

    /// Events of threads that found every slot taken, so far (as `filtered_no_slot`).
    pub(crate) fn no_slot(&self) -> u64 {
        self.slotless(&self.no_slot, &SLOTLESS.no_slot)
    }

    fn slotless(&self, settled: &AtomicU64, running: &AtomicU64) -> u64 {
        // No lock: the flusher calls this inside `start`, which holds ACTIVE's write lock. If
        // `finish` moves the running count into `settled` between the reads, `settled` changes
        // and the reads are taken again (it moves once in a recorder's life).
        // Relaxed: statistics.
        loop {
            let before = settled.load(Ordering::Relaxed);
            let live = if GEN.load(Ordering::Relaxed) == self.gen {
                running.load(Ordering::Relaxed)
            } else {
                0
            };
            if settled.load(Ordering::Relaxed) == before {
                return before + live;
            }
        }
    }

    /// Wakes the flusher early (a ring passed half full, or a slot retired).
    #[inline]
    pub(crate) fn wake(&self) {
        self.wakeup.notify();
    }

    pub(crate) fn stats(&self) -> Stats {
        self.progress.snapshot(self)
    }

    /// Waits until a flusher cycle that started after this call has completed (see
    /// [`Recorder::drain`]), or until `gone()` says the flusher will not run another one.
    pub(crate) fn drain(&self, gone: impl Fn() -> bool) {
        let ticket = self.wakeup.request_drain();
        let mut backoff = Duration::from_micros(20);
        while !self.wakeup.is_served(ticket) && !gone() {
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(1));
        }
    }
}

/// The running recorder. Dropping it finishes it (errors are then only logged to stderr).
pub struct Recorder {
    core: Arc<Core>,
    flusher: Option<JoinHandle<Result<SessionSummary, std::io::Error>>>,
}

impl Recorder {
    /// A snapshot of the counters now.
    ///
    /// ```
    /// # let _g = typhon_recorder::recorder::doc_lock();
    /// let r = typhon_recorder::recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// typhon_recorder::tick_start();
    /// let live = r.stats(); // records still in rings are not counted yet
    /// assert!(live.user_attempted() <= 2);
    /// assert_eq!(r.finish().unwrap().user_attempted(), 2); // ThreadInfo + TickStart
    /// ```
    pub fn stats(&self) -> Stats {
        self.core.stats()
    }

    /// Waits until the flusher has drained every record written before this call (on this
    /// thread, or on any thread whose writes happen before it), so that [`stats`](Self::stats)
    /// counts them. The records are then on pages; a page still open goes to the sink when it
    /// fills, when it grows older than the maximum page age, or at [`finish`](Self::finish).
    ///
    /// Returns at once if the flusher has stopped. A benchmark calls this between timed batches
    /// so that none of them measures a full ring.
    ///
    /// ```
    /// # let _g = typhon_recorder::recorder::doc_lock();
    /// let r = typhon_recorder::recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// typhon_recorder::tick_start();
    /// r.drain();
    /// assert_eq!(r.stats().user_written(), 2); // ThreadInfo + TickStart
    /// r.finish().unwrap();
    /// ```
    pub fn drain(&self) {
        let flusher = self.flusher.as_ref();
        self.core
            .drain(|| flusher.map_or(true, |h| h.is_finished()));
    }

    /// The recorder's clock now, in raw ticks (the unit of every `*_at` write).
    ///
    /// ```
    /// # let _g = typhon_recorder::recorder::doc_lock();
    /// let r = typhon_recorder::recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// let t = r.now();
    /// typhon_recorder::tick_start_at(t);
    /// r.finish().unwrap();
    /// ```
    pub fn now(&self) -> u64 {
        self.core.clock.raw()
    }

    /// Converts CLOCK_MONOTONIC nanoseconds to the recorder's raw ticks.
    ///
    /// ```
    /// # let _g = typhon_recorder::recorder::doc_lock();
    /// let r = typhon_recorder::recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// let t = r.ns_to_ticks(typhon_recorder::clock::monotonic_ns());
    /// assert!(t > 0);
    /// r.finish().unwrap();
    /// ```
    pub fn ns_to_ticks(&self, ns: u64) -> u64 {
        self.core.clock.ns_to_raw(ns)
    }

    /// The recorder's clock.
    ///
    /// ```
    /// # let _g = typhon_recorder::recorder::doc_lock();
    /// let r = typhon_recorder::recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// let c = r.clock().clone();
    /// assert!(c.to_ns(c.raw()) > 0);
    /// r.finish().unwrap();
    /// ```
    pub fn clock(&self) -> &Clock {
        &self.core.clock
    }

    /// Uninstalls the recorder, writes out everything written before this call, joins the
    /// flusher and returns the final counters.
    ///
    /// A write on another thread that is still running when this call uninstalls the recorder
    /// may land after the flusher's last cycle: it is then in neither the file nor a counter.
    /// (Writers take no lock, so nothing waits for them.) Join or stop the writing threads
    /// first when every record must be accounted for.
    ///
    /// ```
    /// # let _g = typhon_recorder::recorder::doc_lock();
    /// let r = typhon_recorder::recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// typhon_recorder::instant(1, 2);
    /// let s = r.finish().unwrap();
    /// assert_eq!(s.user_written(), 2);
    /// ```
    pub fn finish(mut self) -> Result<Stats, RecorderError> {
        self.finish_inner()
    }

    fn finish_inner(&mut self) -> Result<Stats, RecorderError> {
        let Some(handle) = self.flusher.take() else {
            return Ok(self.core.stats());
        };
        {
            let mut active = ACTIVE.write();
            for flag in KIND_STATE.iter() {
                flag.store(KIND_OFF, Ordering::Relaxed);
            }
            GEN.store(0, Ordering::Relaxed);
            SLOTLESS.settle(&self.core);
            *active = None;
        }
        // After uninstalling: every write that completed before this call is in its ring.
        self.core.wakeup.finish();
        match handle.join() {
            Ok(Ok(_summary)) => Ok(self.core.stats()),
            // The last cycle published the final counters before the sink's `finish`.
            Ok(Err(e)) => Err(RecorderError::Unfinished(Box::new(Unfinished {
                error: e,
                stats: self.core.stats(),
            }))),
            Err(_) => Err(RecorderError::FlusherPanicked),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Err(e) = self.finish_inner() {
            eprintln!("typhon-recorder: finishing on drop failed: {e}");
        }
    }
}

/// Counters of a session (a snapshot, or the final values from `finish()`).
///
/// Per slot, `attempted = written + missed + sink_lost` holds exactly once the session has
/// finished; while it runs, records still in rings are in none of the three.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Per-slot counters for every slot that recorded anything (slot 0 = the recorder).
    pub slots: Vec<SlotSummary>,
    /// Events not recorded because all 255 user slots were taken.
    pub no_slot: u64,
    /// Filtered writes of threads that had no slot (they had recorded nothing yet, or found
    /// every slot taken); the others are in their slot's `filtered`.
    pub filtered_no_slot: u64,
    /// Pages handed to the sink.
    pub pages: u64,
    /// Bytes handed to the sink.
    pub bytes: u64,
    /// Pages the sink failed to store.
    pub pages_lost: u64,
    /// Errors the sink returned.
    pub sink_errors: u64,
    /// The longest time, in ns, between the starts of two consecutive drains of the rings (the
    /// flusher's cycles); 0 before the second. It is about the flush interval (10 ms by
    /// default), or less while busy rings wake the flusher early. A ring fills in its size
    /// divided by its thread's write rate (about 38 ms for the default 2 MiB at 2.5 M
    /// records/s), so a gap longer than that can drop the records of a thread writing at that
    /// rate: the flusher was not scheduled, or the sink held it up. Drops with every gap well
    /// under that came from bursts larger than the ring.
    pub longest_drain_gap_ns: u64,
    /// The first sink error, as text.
    pub first_sink_error: Option<String>,
}

impl Stats {
    fn user(&self) -> impl Iterator<Item = &SlotSummary> {
        self.slots.iter().filter(|s| s.slot != 0)
    }
    /// Records attempted by user threads (slots 1..=255).
    ///
    /// ```
    /// assert_eq!(typhon_recorder::recorder::Stats::default().user_attempted(), 0);
    /// ```
    pub fn user_attempted(&self) -> u64 {
        self.user().map(|s| s.attempted).sum()
    }
    /// Records written by user threads.
    ///
    /// ```
    /// assert_eq!(typhon_recorder::recorder::Stats::default().user_written(), 0);
    /// ```
    pub fn user_written(&self) -> u64 {
        self.user().map(|s| s.written).sum()
    }
    /// Records dropped because a ring was full, all slots.
    ///
    /// ```
    /// assert_eq!(typhon_recorder::recorder::Stats::default().total_missed(), 0);
    /// ```
    pub fn total_missed(&self) -> u64 {
        self.slots.iter().map(|s| s.missed).sum()
    }
    /// Records in the output, all slots (slot 0 included).
    ///
    /// ```
    /// assert_eq!(typhon_recorder::recorder::Stats::default().total_written(), 0);
    /// ```
    pub fn total_written(&self) -> u64 {
        self.slots.iter().map(|s| s.written).sum()
    }
    /// Writes filtered out, all slots and threads without a slot.
    ///
    /// ```
    /// assert_eq!(typhon_recorder::recorder::Stats::default().total_filtered(), 0);
    /// ```
    pub fn total_filtered(&self) -> u64 {
        self.slots.iter().map(|s| s.filtered).sum::<u64>() + self.filtered_no_slot
    }
    /// The counters of one slot.
    ///
    /// ```
    /// assert!(typhon_recorder::recorder::Stats::default().slot(1).is_none());
    /// ```
    pub fn slot(&self, slot: u8) -> Option<&SlotSummary> {
        self.slots.iter().find(|s| s.slot == slot)
    }
}

// ---------------------------------------------------------------------------------------------
// Thread-local writer state.

/// A thread's claim on a slot of one recorder.
struct Writer {
    core: Arc<Core>,
    slot: u8,
    producer: std::mem::ManuallyDrop<Producer>,
    clock: crate::clock::RawClock,
    span_counter: u64,
    /// Raw time of this slot's last record (the time of CeLog events written without one).
    last_raw: u64,
    /// `core.max_record`, copied so the span begin does not reach into `Core` for it.
    max_record: usize,
    /// The thread's open spans under this recorder, innermost last (see [`SpanGuard`]); made
    /// with room for [`SPAN_DEPTH`] when the thread claims its slot.
    spans: Vec<OpenSpan>,
    /// The open spans' names, one after the other (see [`OpenSpan::name_at`]).
    span_names: Vec<u8>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Thread exit (or a new recorder): hand the ring back and let the flusher drain it.
        // SAFETY: `producer` is taken exactly once, here, and `self` is not used afterwards.
        let producer = unsafe { std::mem::ManuallyDrop::take(&mut self.producer) };
        // Relaxed: only the cold claim path reads it, after this thread's own store or across
        // the registry's lock (see `SPAN_COUNTERS`).
        SPAN_COUNTERS[self.slot as usize].fetch_max(self.span_counter, Ordering::Relaxed);
        self.core.registry.retire(
            self.slot,
            Parked {
                producer,
                span_counter: self.span_counter,
            },
        );
        self.core.wake();
    }
}

/// The per-event state of a thread: no destructor, so every access is a plain thread-local
/// address computation (no lazy-registration or liveness check).
///
/// The writer lives here, not behind a pointer: a write finds its ring's fields at a fixed
/// offset from the thread pointer, one load away, where a boxed writer was two (the pointer,
/// then the fields). After the host or an interrupt has evicted the thread's lines, each
/// level of loads is a miss the write waits for.
struct Hot {
    /// Generation of the recorder `writer` belongs to ([`DEAD`] once the thread is exiting).
    gen: u64,
    /// This thread's writer, `None` when the thread has none. `ManuallyDrop` keeps `Hot` free
    /// of drop glue; the writer is dropped (its slot retired) by [`claim`] at the thread's
    /// first event after its recorder finished (under the next recorder, or with none
    /// installed) and by [`Owner::drop`] when the thread exits.
    writer: std::mem::ManuallyDrop<Option<Writer>>,
}

/// The next span counter of each slot, across recorders: a slot's counter is never reset (SPEC
/// §2), so a span id of a finished recorder is never that of a span open under the next one
/// (`span_end` of a stale id is then a mismatch, never the end of another span). Raised when a
/// writer retires, read when one claims: both cold.
static SPAN_COUNTERS: [AtomicU64; SLOTS] = [const { AtomicU64::new(1) }; SLOTS];

/// `Hot::gen` of a thread whose thread-locals are being destroyed: never claims again.
const DEAD: u64 = u64::MAX;

/// The thread's ThreadInfo settings, and the destructor that retires its slot at thread exit
/// (`Hot` has none). Registered by its first use: a claim, or `set_thread_info` before it.
struct Owner {
    name: Option<String>,
    kind: Option<ThreadKind>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        // Thread exit: take the writer out of the hot state before it is dropped, so writes
        // from later thread-local destructors find no writer (and count as no-slot) instead of
        // using it, and `DEAD` keeps them from claiming again.
        let writer = HOT.try_with(|h| {
            // SAFETY: no `with_writer` call is running on this thread (a thread-local destructor
            // runs outside them), so this is the only reference to `Hot`.
            let h = unsafe { &mut *h.get() };
            h.gen = DEAD;
            h.writer.take()
        });
        if let Ok(Some(mut w)) = writer {
            // Spans still open (forgotten guards, `span_begin` spans never ended) end with
            // their thread, so that the spans they parent have their parent in the file.
            // Relaxed: as in `refresh`; a recorder that finished meanwhile drops what is left.
            if !w.spans.is_empty() && w.core.gen == GEN.load(Ordering::Relaxed) {
                let now = w.clock.raw();
                w.end_spans_from(0, now);
            }
            drop(w); // retires the slot
        }
    }
}

thread_local! {
    static HOT: std::cell::UnsafeCell<Hot> = const {
        std::cell::UnsafeCell::new(Hot {
            gen: 0,
            writer: std::mem::ManuallyDrop::new(None),
        })
    };
    static OWNER: RefCell<Owner> = const { RefCell::new(Owner { name: None, kind: None }) };
}

fn os_tid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// Room for [`default_thread_name`]: `thread-`, an optional sign and the ten digits of an `i32`.
const DEFAULT_NAME_MAX: usize = 18;

/// `thread-{tid}`, the name a ThreadInfo carries for a thread with none, written into `buf`
/// by hand: `format!` would bring the formatting machinery's cold code into a thread's first
/// event, which measured 0.6–1.8 µs of its ~3 µs on a small VM.
fn default_thread_name(tid: i32, buf: &mut [u8; DEFAULT_NAME_MAX]) -> &str {
    const PREFIX: &[u8] = b"thread-";
    buf[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut rev = [0u8; 10];
    let mut n = tid.unsigned_abs();
    let mut len = 0;
    loop {
        rev[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut end = PREFIX.len();
    if tid < 0 {
        buf[end] = b'-';
        end += 1;
    }
    for &d in rev[..len].iter().rev() {
        buf[end] = d;
        end += 1;
    }
    // Only ASCII was written, so this cannot fail; the fallback keeps the path panic-free.
    std::str::from_utf8(&buf[..end]).unwrap_or("thread")
}

/// The slow path of the first event of a thread, or of its first event under a new recorder:
/// retires the old slot, claims one of the installed recorder and writes the ThreadInfo.
#[cold]
#[inline(never)]
fn claim(h: &mut Hot, gen: u64) {
    if h.gen == DEAD {
        return;
    }
    h.gen = gen;
    drop(h.writer.take()); // retires a slot of a previous recorder
    let claimed = OWNER.try_with(|o| {
        let o = o.borrow();
        let Some(core) = ACTIVE.read().clone() else {
            return 0;
        };
        let gen = core.gen;
        let Ok(Some((slot, parked))) = core.registry.claim() else {
            return gen; // no slot: this thread's events count as no-slot
        };
        // The claim took the last spare: wake the flusher, whose next cycle starts the helper
        // that makes new ones, rather than leave the pool empty until its timer, when the next
        // thread would make its own ring (about 1 ms). Only the claim that empties the pool
        // pays for the wake-up (a futex call, some 20-30 µs here).
        if core.registry.spare_count() == 0 && core.registry.needs_spares() {
            core.wake();
        }
        // Built here and put in `Hot` once its ThreadInfo is written: if anything below
        // unwound, the writer would be dropped (its slot retired) rather than left in place
        // without the record that names its thread.
        let mut w = Writer {
            clock: core.clock.raw_clock(),
            max_record: core.max_record,
            core,
            slot,
            producer: std::mem::ManuallyDrop::new(parked.producer),
            // Relaxed: see SPAN_COUNTERS.
            span_counter: parked
                .span_counter
                .max(SPAN_COUNTERS[slot as usize].load(Ordering::Relaxed)),
            last_raw: 0,
            spans: Vec::with_capacity(SPAN_DEPTH),
            span_names: Vec::with_capacity(SPAN_NAME_BYTES),
        };
        let tid = os_tid();
        let kind = o.kind.unwrap_or(if tid == w.core.pid {
            ThreadKind::Main
        } else {
            ThreadKind::Worker
        });
        // The name is borrowed, not copied.
        let current = std::thread::current();
        let mut digits = [0u8; DEFAULT_NAME_MAX];
        let name = match (&o.name, current.name()) {
            (Some(n), _) => n.as_str(),
            (None, Some(n)) => n,
            (None, None) => default_thread_name(tid, &mut digits),
        };
        let name = clamp_thread_name(name);
        let size = records::thread_info_len(name);
        let ts = w.clock.raw();
        w.last_raw = ts;
        w.producer.write(size, |d| {
            let _ = records::write_thread_info(d, slot, ts as i64, tid, name, kind);
        });
        *h.writer = Some(w);
        gen
    });
    h.gen = match claimed {
        Ok(g) => g,
        Err(_) => DEAD, // OWNER is already destroyed: the thread is exiting
    };
}

/// Where this thread's ring starts, if it has one under the installed recorder (the bench
/// reports how the kernel backs it). Claims a slot like a first event would.
#[cfg(all(target_os = "linux", not(miri), not(loom)))]
pub(crate) fn this_threads_ring() -> Option<usize> {
    with_writer(|w| w.producer.buffer_addr())
}

#[cold]
#[inline(never)]
fn count_no_slot() {
    // Relaxed: a statistic (see SLOTLESS); no lock on a write that found no slot.
    SLOTLESS.no_slot.fetch_add(1, Ordering::Relaxed);
}

/// Runs `f` with this thread's writer for the installed recorder, claiming a slot first if
/// needed. Returns `None` (after counting the event as `no_slot`) when no slot could be had.
///
/// Not reentrant and not async-signal-safe: `f` must not call back into the recorder (it only
/// ever runs the crate's own encoders), a signal handler must not record, and neither may a
/// global allocator (a thread's first event may allocate while it holds the thread's state).
#[inline(always)]
fn with_writer<R>(f: impl FnOnce(&mut Writer) -> R) -> Option<R> {
    // Only the address is taken inside `with` (a thread-pointer offset, since `HOT` is a
    // const-initialised thread-local without a destructor): the work below then inlines into
    // the caller instead of living in an out-of-line `LocalKey::with` instance.
    let h: *mut Hot = HOT.with(|h| h.get());
    // SAFETY: `HOT` has no destructor, so its storage lives as long as this thread and the
    // pointer is valid for this call. It is this thread's own and no other reference to it is
    // live: `with_writer` is not reentered (see above), and the other users (`claim`, reached
    // through `refresh` below on this same borrow and done before `f` runs; `count_filtered`,
    // `register_thread`, `Owner::drop`) all run outside `f`. So the `&mut Writer` handed to
    // `f` is the only reference to the writer, and nothing moves it out of `Hot` (only `claim`
    // and `Owner::drop` do) while `f` runs.
    let h = unsafe { &mut *h };
    let gen = refresh(h);
    let Some(w) = h.writer.as_mut() else {
        if gen != 0 {
            count_no_slot();
        }
        return None;
    };
    Some(f(w))
}

/// Brings this thread's hot state up to the installed recorder (claiming a slot if the thread
/// has none of it yet) and returns the recorder generation it is now at (0: none installed).
#[inline(always)]
fn refresh(h: &mut Hot) -> u64 {
    // Relaxed: only compared with this thread's cached generation; a mismatch takes the
    // slow path, which synchronises through ACTIVE's lock.
    let gen = GEN.load(Ordering::Relaxed);
    if h.gen != gen {
        claim(h, gen);
    }
    gen
}

#[inline(always)]
fn enabled(kind: TraceEventKind) -> bool {
    // Relaxed: a racy read of a configuration flag is fine; at worst one write around a
    // start/finish is taken or skipped, which `Recorder::finish` documents.
    kind_state(kind) == KIND_ON
}

#[inline(always)]
fn kind_state(kind: TraceEventKind) -> u8 {
    // Relaxed: as in `enabled`.
    KIND_STATE[kind.0 as usize].load(Ordering::Relaxed)
}

#[cold]
#[inline(never)]
fn count_filtered() {
    if GEN.load(Ordering::Relaxed) == 0 {
        return;
    }
    // Counted against the thread's slot if it has one for the installed recorder; a thread
    // whose every event is filtered claims no slot, and is counted with the recorder instead.
    let counted = HOT
        .try_with(|h| {
            // SAFETY: as in `with_writer`: this thread's own, no other reference live.
            let h = unsafe { &*h.get() };
            let live = h.gen == GEN.load(Ordering::Relaxed);
            if let Some(w) = h.writer.as_ref().filter(|_| live) {
                w.core
                    .registry
                    .slot(w.slot)
                    .filtered
                    .fetch_add(1, Ordering::Relaxed);
                true
            } else {
                false
            }
        })
        .unwrap_or(false);
    if !counted {
        // Relaxed: a statistic (see SLOTLESS); no lock on a filtered write.
        SLOTLESS.filtered.fetch_add(1, Ordering::Relaxed);
    }
}

impl Writer {
    #[inline(always)]
    fn ts(&mut self, at: Option<u64>) -> u64 {
        let t = match at {
            Some(t) => t,
            None => self.clock.raw(),
        };
        self.last_raw = t;
        t
    }

    #[inline(always)]
    fn put(&mut self, size: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        let ok = self.producer.write(size, fill);
        if self.producer.passed_half() {
            self.wake_flusher();
        }
        ok
    }

    #[cold]
    #[inline(never)]
    fn wake_flusher(&self) {
        self.core.wake();
    }

    #[cold]
    fn refuse(&self) {
        self.core
            .registry
            .slot(self.slot)
            .refused
            .fetch_add(1, Ordering::Relaxed);
    }
}

/// Writes one fixed-size record: the gate (a disabled event costs one byte load and a branch),
/// then [`write_fixed`], whose closures capture by value so nothing is spilled before the gate.
macro_rules! fixed_write {
    ($kind:expr, $size:expr, $at:expr, |$d:ident, $slot:ident, $ts:ident| $body:expr) => {{
        if gate($kind) {
            write_fixed::<{ $size }>($at, move |$d: &mut [u8], $slot: u8, $ts: i64| $body);
        }
    }};
}

/// Whether events of `kind` are recorded now; counts a filtered event. Inline everywhere.
///
/// The off state is tested first, on its own: in straight-line code the compiler then lays a
/// disabled call out as a byte load, a test and one taken branch past the write, where testing
/// for "on" first gave two taken branches per disabled call (0.66–1.29 ns against 0.36–0.70 ns
/// here, eight calls per loop iteration, 5 alternating runs). An enabled write pays one more
/// test and branch, not taken.
#[inline(always)]
fn gate(kind: TraceEventKind) -> bool {
    if cfg!(feature = "compile-out") {
        return false;
    }
    let state = kind_state(kind);
    if state == KIND_OFF {
        return false;
    }
    if state == KIND_ON {
        return true;
    }
    count_filtered();
    false
}

/// The enabled path of a fixed-size write: writer, timestamp, encode (`enc(record, slot,
/// time)`), publish, wake the flusher if the ring passed half full.
/// The record size is a constant, so the encoder's field writes need no bounds checks.
#[inline(always)]
fn write_fixed<const SIZE: usize>(at: Option<u64>, enc: impl FnOnce(&mut [u8], u8, i64)) {
    with_writer(move |w| {
        let ts = w.ts(at) as i64;
        let slot = w.slot;
        w.put(SIZE, move |d| enc(d, slot, ts));
    });
}

macro_rules! correlation_writes {
    ($( $(#[$m:meta])* $name:ident, $name_at:ident, $kind:ident, $enc:path, ($($arg:ident : $ty:ty),*) );* $(;)?) => {$(
        $(#[$m])*
        #[inline]
        pub fn $name($($arg: $ty),*) {
            $name_at(None, $($arg),*)
        }
        #[doc = concat!("[`", stringify!($name), "`] with a caller-supplied timestamp in raw ticks",
            " ([`Recorder::now`], [`Recorder::ns_to_ticks`]); `None` reads the clock.")]
        #[inline]
        pub fn $name_at(ts: Option<u64>, $($arg: $ty),*) {
            const K: TraceEventKind = TraceEventKind::$kind;
            fixed_write!(K, correlation::size_of(K), ts, |d, slot, t| $enc(d, slot, t, $($arg),*))
        }
    )*};
}

correlation_writes! {
    /// Records IngressReceived: a message of `bytes` bytes arrived for `session`.
    ///
    /// ```
    /// typhon_recorder::ingress_received(1, 2, 3, 4); // no recorder installed: a no-op
    /// ```
    ingress_received, ingress_received_at, INGRESS_RECEIVED, correlation::write_received,
        (session: u32, seq: u16, wire_idx: u16, bytes: u16);
    /// Records IngressAdmitted: the message was admitted for drain tick `drain_tick`.
    ///
    /// ```
    /// typhon_recorder::ingress_admitted(1, 2, 3, 100);
    /// ```
    ingress_admitted, ingress_admitted_at, INGRESS_ADMITTED, correlation::write_admitted,
        (session: u32, seq: u16, wire_idx: u16, drain_tick: u32);
    /// Records IngressDropped: the message was dropped for `reason`.
    ///
    /// ```
    /// use typhon_recorder::recorder::IngressDropReason;
    /// typhon_recorder::ingress_dropped(1, 2, IngressDropReason::from_u8(1));
    /// ```
    ingress_dropped, ingress_dropped_at, INGRESS_DROPPED, correlation::write_dropped,
        (session: u32, seq: u16, reason: IngressDropReason);
    /// Records CommandConsumed: system `sys_idx` consumed the command.
    ///
    /// ```
    /// typhon_recorder::command_consumed(1, 2, 5);
    /// ```
    command_consumed, command_consumed_at, COMMAND_CONSUMED, correlation::write_consumed,
        (session: u32, seq: u16, sys_idx: u16);
    /// Records EgressSent: `bytes` bytes with `acks` acknowledgements went to `session` at `tick`.
    ///
    /// ```
    /// typhon_recorder::egress_sent(1, 100, 512, 3);
    /// ```
    egress_sent, egress_sent_at, EGRESS_SENT, correlation::write_sent,
        (session: u32, tick: u32, bytes: u32, acks: u16);
}

/// Records TickStart.
///
/// ```
/// typhon_recorder::tick_start();
/// ```
#[inline]
pub fn tick_start() {
    tick_start_at_opt(None)
}
/// [`tick_start`] with a caller-supplied timestamp in raw ticks.
///
/// ```
/// typhon_recorder::tick_start_at(12345);
/// ```
#[inline]
pub fn tick_start_at(ts: u64) {
    tick_start_at_opt(Some(ts))
}
#[inline(always)]
fn tick_start_at_opt(at: Option<u64>) {
    fixed_write!(TraceEventKind::TICK_START, 12, at, |d, slot, t| {
        let _ = records::write_tick_start(d, slot, t);
    })
}

/// Records TickEnd with the tick's overload level and multiplier.
///
/// ```
/// typhon_recorder::tick_end(0, 1);
/// ```
#[inline]
pub fn tick_end(overload_level: u8, tick_multiplier: u8) {
    tick_end_at_opt(None, overload_level, tick_multiplier)
}
/// [`tick_end`] with a caller-supplied timestamp in raw ticks.
///
/// ```
/// typhon_recorder::tick_end_at(12345, 0, 1);
/// ```
#[inline]
pub fn tick_end_at(ts: u64, overload_level: u8, tick_multiplier: u8) {
    tick_end_at_opt(Some(ts), overload_level, tick_multiplier)
}
#[inline(always)]
fn tick_end_at_opt(at: Option<u64>, o: u8, m: u8) {
    fixed_write!(TraceEventKind::TICK_END, 14, at, |d, slot, t| {
        let _ = records::write_tick_end(d, slot, t, o, m);
    })
}

/// Records PhaseStart.
///
/// ```
/// typhon_recorder::phase_start(2);
/// ```
#[inline]
pub fn phase_start(phase: u8) {
    phase_at_opt(TraceEventKind::PHASE_START, None, phase)
}
/// Records PhaseEnd.
///
/// ```
/// typhon_recorder::phase_end(2);
/// ```
#[inline]
pub fn phase_end(phase: u8) {
    phase_at_opt(TraceEventKind::PHASE_END, None, phase)
}
/// [`phase_start`] with a caller-supplied timestamp in raw ticks.
///
/// ```
/// typhon_recorder::phase_start_at(1, 2);
/// ```
#[inline]
pub fn phase_start_at(ts: u64, phase: u8) {
    phase_at_opt(TraceEventKind::PHASE_START, Some(ts), phase)
}
/// [`phase_end`] with a caller-supplied timestamp in raw ticks.
///
/// ```
/// typhon_recorder::phase_end_at(1, 2);
/// ```
#[inline]
pub fn phase_end_at(ts: u64, phase: u8) {
    phase_at_opt(TraceEventKind::PHASE_END, Some(ts), phase)
}
#[inline(always)]
fn phase_at_opt(kind: TraceEventKind, at: Option<u64>, phase: u8) {
    fixed_write!(kind, 13, at, |d, slot, t| {
        let _ = if kind == TraceEventKind::PHASE_START {
            records::write_phase_start(d, slot, t, phase)
        } else {
            records::write_phase_end(d, slot, t, phase)
        };
    })
}

/// Records a generic Instant (`name_id` is an id of the caller's, `payload` any value).
///
/// ```
/// typhon_recorder::instant(7, -1);
/// ```
#[inline]
pub fn instant(name_id: i32, payload: i32) {
    instant_at_opt(None, name_id, payload)
}
/// [`instant`] with a caller-supplied timestamp in raw ticks.
///
/// ```
/// typhon_recorder::instant_at(1, 7, -1);
/// ```
#[inline]
pub fn instant_at(ts: u64, name_id: i32, payload: i32) {
    instant_at_opt(Some(ts), name_id, payload)
}
#[inline(always)]
fn instant_at_opt(at: Option<u64>, name_id: i32, payload: i32) {
    fixed_write!(TraceEventKind::INSTANT, 20, at, |d, slot, t| {
        let _ = records::write_instant(d, slot, t, name_id, payload);
    })
}

/// Names the calling thread (and sets its kind) for the ThreadInfo record written when it
/// claims a slot. Call before the thread's first event; a later call applies from the next
/// recorder on.
///
/// ```
/// use typhon_recorder::recorder::{set_thread_info, ThreadKind};
/// set_thread_info("net-io", ThreadKind::Worker);
/// ```
pub fn set_thread_info(name: &str, kind: ThreadKind) {
    let _ = OWNER.try_with(|o| {
        if let Ok(mut o) = o.try_borrow_mut() {
            o.name = Some(name.to_owned());
            o.kind = Some(kind);
        }
    });
}

/// Claims the calling thread's slot of the installed recorder now, writing its ThreadInfo record,
/// so that the thread's first event costs what every later one does. A claim takes a ring (a
/// spare one, see [`RecorderBuilder::spare_rings`], costs a few microseconds; once the spares are
/// gone a new one is allocated and its pages faulted in: 0.8–1.5 ms for the default 2 MiB ring
/// on a small VM) and is otherwise paid by the thread's first event. Call it at thread start, after
/// [`set_thread_info`]. Returns whether the thread now has a slot: `false` with no recorder
/// installed, or with all 255 slots taken (the thread's events are then counted as no-slot).
/// Registering writes no event, so nothing is counted for the call itself.
///
/// ```
/// use typhon_recorder::{recorder::RecorderBuilder, register_thread, sink::NullSink};
/// # let _g = typhon_recorder::recorder::doc_lock();
/// assert!(!register_thread()); // no recorder installed
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// let t = std::thread::spawn(|| {
///     let registered = register_thread();
///     typhon_recorder::ingress_received(1, 2, 3, 64); // no slot claim on this path now
///     registered
/// });
/// assert!(t.join().unwrap());
/// let stats = rec.finish().unwrap();
/// assert_eq!(stats.user_written(), 2); // the ThreadInfo, written when it registered, and the event
/// ```
pub fn register_thread() -> bool {
    if cfg!(feature = "compile-out") {
        return false;
    }
    HOT.with(|h| {
        // SAFETY: as in `with_writer`: `HOT` is this thread's own and no other reference to it is
        // live (this is not called from inside a write, and `claim` is the only other user here).
        let h = unsafe { &mut *h.get() };
        // Unlike a write, a thread without a slot counts nothing here: no event was lost.
        refresh(h);
        h.writer.is_some()
    })
}

/// Writes a record of any kind: `payload` is everything after the 12-byte common header. A
/// kind of the kind table must hold a record its decoder accepts (the exact size for fixed
/// kinds; for variable ones the NUL or length of their name, span flags agreeing with the kind,
/// one valid CeLog event): the payload is checked with
/// [`decode_payload`](codec::records::decode_payload) before anything is written. Other kinds
/// are the engine's own and are taken as they are. No record exceeds 65534 bytes.
///
/// # Errors
/// [`WriteError::Invalid`] for a payload its kind's decoder rejects, and
/// [`WriteError::TooLarge`] for a record over 65534 bytes, both whether or not a recorder
/// runs; [`WriteError::TooLarge`] also for a record larger than the running recorder's pages
/// hold. While a recorder runs, every refused write is counted once, as refused, against the
/// writing thread's slot (as no-slot for a thread that finds every slot taken).
///
/// ```
/// use typhon_recorder::{codec::TraceEventKind, recorder::WriteError};
/// typhon_recorder::write_record(TraceEventKind(100), &[1, 2, 3], None).unwrap();
/// assert!(typhon_recorder::write_record(TraceEventKind::TICK_END, &[1], None).is_err());
/// // A NamedSpan payload: the 25-byte span extension, then its name, NUL-terminated.
/// let mut span = [0u8; 26];
/// typhon_recorder::write_record(TraceEventKind::NAMED_SPAN, &span, None).unwrap(); // name ""
/// span[25] = b'x'; // a name without its NUL is not a NamedSpan
/// assert!(matches!(
///     typhon_recorder::write_record(TraceEventKind::NAMED_SPAN, &span, None),
///     Err(WriteError::Invalid(_))
/// ));
/// assert!(matches!(
///     typhon_recorder::write_record(TraceEventKind(100), &vec![0; 65_535], None),
///     Err(WriteError::TooLarge { size: 65_547, max: 65_534 })
/// ));
/// ```
pub fn write_record(
    kind: TraceEventKind,
    payload: &[u8],
    ts: Option<u64>,
) -> Result<(), WriteError> {
    let size = codec::CommonHeader::SIZE + payload.len();
    if size > codec::CommonHeader::MAX_RECORD {
        return Err(refused(WriteError::TooLarge {
            size,
            max: codec::CommonHeader::MAX_RECORD,
        }));
    }
    if let Some(def) = codec::kind_def(kind) {
        let header = codec::CommonHeader {
            size: size as u16,
            kind,
            slot: 0,
            timestamp: 0,
        };
        if let Err(e) = codec::records::decode_payload(header, payload) {
            return Err(refused(WriteError::Invalid(format!(
                "{} payload of {} bytes: {e}",
                def.name,
                payload.len()
            ))));
        }
    }
    if cfg!(feature = "compile-out") {
        return Ok(());
    }
    let state = kind_state(kind);
    if state != KIND_ON {
        if state == KIND_FILTERED {
            count_filtered();
        }
        return Ok(());
    }
    with_writer(|w| {
        if size > w.core.max_record {
            w.refuse();
            return Err(WriteError::TooLarge {
                size,
                max: w.core.max_record,
            });
        }
        let t = w.ts(ts) as i64;
        let slot = w.slot;
        w.put(size, |d| {
            codec::CommonHeader {
                size: size as u16,
                kind,
                slot,
                timestamp: t,
            }
            .write(d);
            d[codec::CommonHeader::SIZE..size].copy_from_slice(payload);
        });
        Ok(())
    })
    .unwrap_or(Ok(()))
}

/// CeLogSetZones: which CeLog zones are recorded. An event is recorded iff
/// `(zone_ce & its dwZoneCE) != 0 || (zone_user & its dwZoneUser) != 0`. `zone_process` is
/// accepted for API parity and, as in CE, unused.
///
/// ```
/// typhon_recorder::celog_set_zones(0, typhon_recorder::codec::celog::CELZONE_MISC, 0);
/// typhon_recorder::celog_set_zones(u32::MAX, u32::MAX, u32::MAX);
/// ```
pub fn celog_set_zones(zone_user: u32, zone_ce: u32, zone_process: u32) {
    let _ = zone_process;
    let ce = codec::celog::validate_zones(zone_ce);
    // Relaxed: configuration flags; writers pick up the change on their next event.
    ZONE_USER.store(zone_user, Ordering::Relaxed);
    ZONE_CE.store(ce, Ordering::Relaxed);
}

/// CeLogData: records one CeLog event (CEL_HEADER_V3) of id `id` with `data`, if its zones are
/// enabled. `timestamp` false records no CeLog timestamp and reads no clock (the record takes the
/// time of the thread's previous record); `flagged` adds the flag word with `flag`.
///
/// # Errors
/// [`WriteError::Invalid`], whether or not a recorder runs, for `data` over 4095 bytes and for
/// the ids CE's CeLogData does not take: 0x3FFF (`CELID_MAX`) and above, and 90
/// (`CELID_FLAGGED`, which only marks a flagged event's header). [`WriteError::TooLarge`] if
/// the event does not fit in the recorder's pages. While a recorder runs, each is counted as
/// refused.
///
/// ```
/// use typhon_recorder::codec::celog::{CELID_FLAGGED, CELID_USER, CELZONE_MISC};
/// typhon_recorder::celog_data(true, CELID_USER, b"hello", 0, CELZONE_MISC, 0, false).unwrap();
/// assert!(typhon_recorder::celog_data(true, CELID_USER, &[0; 4096], 0, CELZONE_MISC, 0, false).is_err());
/// assert!(typhon_recorder::celog_data(true, CELID_FLAGGED, b"x", 0, CELZONE_MISC, 0, false).is_err());
/// ```
pub fn celog_data(
    timestamp: bool,
    id: u16,
    data: &[u8],
    zone_user: u32,
    zone_ce: u32,
    flag: u16,
    flagged: bool,
) -> Result<(), WriteError> {
    celog_data_at(
        timestamp.then_some(None),
        id,
        data,
        zone_user,
        zone_ce,
        flag,
        flagged,
    )
}

/// [`celog_data`] with a caller-supplied timestamp: `Some(Some(ticks))` records that time,
/// `Some(None)` reads the clock, `None` records no CeLog timestamp.
///
/// ```
/// use typhon_recorder::codec::celog::{CELID_USER, CELZONE_MISC};
/// typhon_recorder::celog_data_at(Some(Some(99)), CELID_USER, b"x", 0, CELZONE_MISC, 3, true).unwrap();
/// ```
pub fn celog_data_at(
    timestamp: Option<Option<u64>>,
    id: u16,
    data: &[u8],
    zone_user: u32,
    zone_ce: u32,
    flag: u16,
    flagged: bool,
) -> Result<(), WriteError> {
    let flag = flagged.then_some(flag);
    // Validate before the gate, so bad input is reported whether or not a recorder runs.
    if data.len() > codec::celog::MAX_DATA_SIZE {
        return Err(refused(WriteError::Invalid(format!(
            "CeLog data of {} bytes exceeds {}",
            data.len(),
            codec::celog::MAX_DATA_SIZE
        ))));
    }
    // As CE's CeLogData: ids below CELID_MAX (0x3FFF), and never CELID_FLAGGED (90), which
    // marks a flagged event's header and is not an event id of its own.
    if id >= codec::celog::CELID_MAX || id == codec::celog::CELID_FLAGGED {
        return Err(refused(WriteError::Invalid(format!(
            "CeLog id {id:#x} is reserved: ids go up to 0x3FFE, and 90 (CELID_FLAGGED) marks \
             a flagged event"
        ))));
    }
    let size = records::celog_record_len(data.len(), timestamp.is_some(), flag.is_some(), 0);
    if cfg!(feature = "compile-out") {
        return Ok(());
    }
    if !enabled(TraceEventKind::CELOG)
        || !codec::celog::zones_enabled(
            zone_user,
            zone_ce,
            ZONE_USER.load(Ordering::Relaxed),
            ZONE_CE.load(Ordering::Relaxed),
        )
    {
        count_filtered();
        return Ok(());
    }
    // SAFETY: sched_getcpu has no preconditions; it returns -1 on failure, handled below.
    let cpu = unsafe { libc::sched_getcpu() };
    let cel_cpu = if cpu < 0 { 0 } else { cpu as u32 + 1 };
    let size = if cel_cpu >= 15 { size + 4 } else { size };
    with_writer(|w| {
        if size > w.core.max_record {
            w.refuse();
            return Err(WriteError::TooLarge {
                size,
                max: w.core.max_record,
            });
        }
        let t = match timestamp {
            Some(at) => w.ts(at),
            None => w.last_raw,
        } as i64;
        let slot = w.slot;
        let mut res = Ok(());
        // The ring publishes whatever the fill leaves, so the fill must not fail: the id and
        // the data length were checked above and `size` is the event's exact length, which
        // leaves `write_celog_record` nothing to refuse. (`res` stays as a debug check.)
        w.put(size, |d| {
            // The CeLog timestamp field is filled by the flusher from the record time (1 µs
            // ticks on the monotonic base), so it is written as 0 here.
            let ev = codec::celog::CelEvent {
                id,
                timestamp: timestamp.map(|_| 0),
                flag,
                cpu: cel_cpu,
                data,
            };
            if let Err(e) = records::write_celog_record(d, slot, t, &ev) {
                res = Err(WriteError::Invalid(e.to_string()));
            }
        });
        debug_assert!(
            res.is_ok(),
            "a checked CeLog event failed to encode: {res:?}"
        );
        res
    })
    .unwrap_or(Ok(()))
}

/// An open span; dropping it ends the span and writes its record (NamedSpan, or TracedSpan when
/// it carries a trace context). Not `Send`: a span begins and ends on one thread.
///
/// # Nesting, order and recorders
///
/// A thread's open spans (guards and [`span_begin`] spans alike) form a stack; a new span's
/// parent is the innermost one still open (0 at top level). The recorder keeps the stack with
/// each span's name, so that it can end spans whose guards never do:
/// - dropping a guard that is not the innermost (a `Vec` of guards dropped outermost first)
///   ends it **and every span opened inside it that is still open**, at the same time; the
///   inner guards' own drops then write nothing. So every span ends within its parent.
/// - a guard that is never dropped (`mem::forget`, a leak) stays open until its parent ends
///   (it is then ended with it), or until its thread exits (every span still open is ended
///   then). A span still open when its recorder finishes is not in the file; the spans it
///   parents are.
/// - a guard opened under one recorder belongs to that one. Dropped after it finished, it
///   writes nothing: under a later recorder the drop is counted as refused there (the span
///   cannot be recorded anywhere), with no recorder installed it does nothing.
///
/// The invariant: in a recording, every span's parent is 0 or a span of the same slot that
/// was open when it began, and that parent is in the recording too unless it was still open
/// when the recorder finished. With the recorder's clock (no `*_at` times), a span's interval
/// lies within its parent's.
///
/// A guard whose span the recorder refused (a name with a NUL byte, a record larger than a
/// page) opens nothing and is counted as refused: [`try_span`] returns that error instead.
///
/// Cost: the stack lives in the thread's writer, made with room for 64 open spans and 4 KiB of
/// their names when the thread claims its slot; a thread that goes past either allocates once
/// more for each new high mark (never on later spans that stay within it).
///
/// ```
/// # let _g = typhon_recorder::recorder::doc_lock();
/// use typhon_recorder::recorder::RecorderBuilder;
/// let rec = RecorderBuilder::new().sink(typhon_recorder::sink::NullSink).start().unwrap();
/// let guards = vec![typhon_recorder::span("a"), typhon_recorder::span("b")];
/// drop(guards); // "a" ends first, and "b" with it
/// let later = typhon_recorder::span("c");
/// drop(later); // a top-level span: its parent is 0, not "b"
/// assert_eq!(rec.finish().unwrap().user_written(), 4); // ThreadInfo + 3 spans
/// ```
#[must_use = "a span ends when this guard is dropped"]
pub struct SpanGuard<'a> {
    /// The span's id, 0 when nothing is recorded.
    id: u64,
    /// The generation of the recorder it was opened under.
    gen: u64,
    /// Not `Send`; the lifetime is the name's, kept so the API stays as it was (the recorder
    /// copies the name).
    _marker: std::marker::PhantomData<(&'a str, *const ())>,
}

impl SpanGuard<'_> {
    /// This span's id (`slot << 56 | counter`), 0 when nothing is recorded.
    ///
    /// ```
    /// let s = typhon_recorder::span("x");
    /// assert_eq!(s.id(), 0); // no recorder installed
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Ends the span at a caller-supplied time in raw ticks (spans opened inside it and still
    /// open end then too).
    ///
    /// ```
    /// let s = typhon_recorder::span_at("x", 10);
    /// s.end_at(20);
    /// ```
    #[inline]
    pub fn end_at(mut self, ts: u64) {
        if self.id != 0 {
            close_guard(self.id, self.gen, Some(ts));
        }
        self.id = 0;
    }

    #[inline(always)]
    fn inert() -> Self {
        SpanGuard {
            id: 0,
            gen: 0,
            _marker: std::marker::PhantomData,
        }
    }
}

impl Drop for SpanGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.id != 0 {
            close_guard(self.id, self.gen, None);
        }
    }
}

/// A span the thread has open: what its record needs when it ends (see [`SpanGuard`]).
#[derive(Clone, Copy)]
struct OpenSpan {
    start: u64,
    id: u64,
    parent: u64,
    /// The trace context, if `traced` (kept as plain words: see [`Writer::end_innermost`]).
    trace_hi: u64,
    trace_lo: u64,
    traced: bool,
    /// Where its name starts in [`Writer::span_names`] (it runs to the next span's, or to the
    /// end for the innermost).
    name_at: usize,
}

/// Appends `name` to a thread's span names. Names are short and copied on every span begin, so
/// those of up to 16 bytes are copied by hand, in at most two overlapping word moves, instead
/// of a call to `memcpy` (as `extend_from_slice` makes for a length it does not know).
#[inline(always)]
fn push_name(names: &mut Vec<u8>, name: &[u8]) {
    let n = name.len();
    if n > 16 || names.capacity() - names.len() < 16 {
        names.extend_from_slice(name);
        return;
    }
    let len = names.len();
    // SAFETY: at least 16 bytes of spare capacity were checked above, so `dst..dst + n` (n <=
    // 16) is inside the allocation; the moves read only within `name`, write only within
    // `dst..dst + n`, and after them those `n` bytes are initialised, so `set_len` is sound.
    unsafe {
        let dst = names.as_mut_ptr().add(len);
        let src = name.as_ptr();
        if n >= 8 {
            let a = src.cast::<u64>().read_unaligned();
            let b = src.add(n - 8).cast::<u64>().read_unaligned();
            dst.cast::<u64>().write_unaligned(a);
            dst.add(n - 8).cast::<u64>().write_unaligned(b);
        } else if n >= 4 {
            let a = src.cast::<u32>().read_unaligned();
            let b = src.add(n - 4).cast::<u32>().read_unaligned();
            dst.cast::<u32>().write_unaligned(a);
            dst.add(n - 4).cast::<u32>().write_unaligned(b);
        } else {
            for i in 0..n {
                *dst.add(i) = *src.add(i);
            }
        }
        names.set_len(len + n);
    }
}

/// Open spans a thread can have before its span stack grows (an allocation, once per new
/// depth), and bytes of their names.
const SPAN_DEPTH: usize = 64;
const SPAN_NAME_BYTES: usize = 4096;

impl Writer {
    /// Opens a span of record size `size` (checked here against the page, counted as refused
    /// when it does not fit) and returns its id.
    #[inline(always)]
    fn open_span(
        &mut self,
        name: &str,
        ctx: Option<TraceContext>,
        at: Option<u64>,
        size: usize,
    ) -> Result<u64, WriteError> {
        if size > self.max_record {
            self.refuse();
            return Err(WriteError::TooLarge {
                size,
                max: self.max_record,
            });
        }
        let start = self.ts(at);
        let id = (self.slot as u64) << 56 | (self.span_counter & ((1 << 56) - 1));
        self.span_counter += 1;
        let parent = self.spans.last().map_or(0, |e| e.id);
        let name_at = self.span_names.len();
        push_name(&mut self.span_names, name.as_bytes());
        let (traced, c) = match ctx {
            Some(c) => (true, c),
            None => (false, TraceContext::default()),
        };
        self.spans.push(OpenSpan {
            start,
            id,
            parent,
            trace_hi: c.hi,
            trace_lo: c.lo,
            traced,
            name_at,
        });
        Ok(id)
    }

    /// Ends the open span at `i` at `end` (raw ticks), and every span opened inside it that is
    /// still open, innermost first; each is written.
    #[inline(always)]
    fn end_spans_from(&mut self, i: usize, end: u64) {
        let Some(target) = self.spans.get(i).map(|e| e.id) else {
            return;
        };
        while self.spans.len() > i {
            let top = self.spans.len() - 1;
            // Spans left open inside the target end with it, never before they began.
            let e = &self.spans[top];
            let t = if e.id == target {
                end
            } else {
                end.max(e.start)
            };
            self.end_innermost(t);
        }
        self.last_raw = end;
    }

    /// Ends the innermost open span at `end` (the common end: a guard dropped in order).
    ///
    /// The entry is read in place, field by field, not copied out: `pop` moved it with 16-byte
    /// loads, which cannot be forwarded from the 8-byte stores that wrote it at the span's
    /// begin, and the stall cost about 7 ns a span pair (13.6 against 6.2 ns).
    #[inline(always)]
    fn end_innermost(&mut self, end: u64) {
        let Some(top) = self.spans.len().checked_sub(1) else {
            return;
        };
        let e = &self.spans[top];
        let name_at = e.name_at;
        write_span(
            &mut self.producer,
            &self.span_names[name_at.min(self.span_names.len())..],
            e,
            self.slot,
            end,
        );
        if self.producer.passed_half() {
            self.wake_flusher();
        }
        // OpenSpan is Copy: nothing to drop.
        self.spans.truncate(top);
        self.span_names.truncate(name_at);
        self.last_raw = end;
    }
}

/// Writes the record of `e`, the thread's innermost open span, whose name is `name` (the end
/// of [`Writer::span_names`]), ending at `end`.
#[inline(always)]
fn write_span(producer: &mut Producer, name: &[u8], e: &OpenSpan, slot: u8, end: u64) {
    // SAFETY: `span_names` holds whole `&str`s, each pushed at its entry's `name_at` and cut
    // back only to an entry's `name_at`, so the bytes from the innermost's `name_at` to the end
    // are one whole UTF-8 name.
    let name = unsafe { std::str::from_utf8_unchecked(name) };
    let ctx = e.traced.then_some(TraceContext {
        hi: e.trace_hi,
        lo: e.trace_lo,
    });
    let size = match ctx {
        None => records::named_span_len(name),
        Some(_) => records::traced_span_len(name),
    };
    // Checked against the page when it opened (`open_span`), under this same recorder.
    producer.write(size, |d| {
        let ext = records::SpanExt {
            duration_ns: end.wrapping_sub(e.start) as i64,
            span_id: e.id,
            parent_span_id: e.parent,
        };
        records::fill_span(d, slot, e.start as i64, &ext, ctx, name)
    });
}

/// Ends the span of a guard (its drop or [`SpanGuard::end_at`]): the common case, the
/// thread's innermost span of the running recorder, here; the others out of line.
#[inline(never)]
fn close_guard(id: u64, gen: u64, at: Option<u64>) {
    // With no recorder installed there is no writer: nothing to write or count.
    with_writer(|w| {
        let n = w.spans.len();
        if w.core.gen == gen && n > 0 && w.spans[n - 1].id == id {
            let end = match at {
                Some(t) => t,
                None => w.clock.raw(),
            };
            w.end_innermost(end);
        } else {
            close_other(w, id, gen, at);
        }
    });
}

/// [`close_guard`] of a span that is not the innermost open one, or of another recorder.
#[cold]
#[inline(never)]
fn close_other(w: &mut Writer, id: u64, gen: u64, at: Option<u64>) {
    if w.core.gen != gen {
        // Its recorder has finished: the span can be written nowhere (see `SpanGuard`).
        w.refuse();
        return;
    }
    // Not found: it already ended, with a span that enclosed it.
    if let Some(i) = w.spans.iter().rposition(|e| e.id == id) {
        let end = match at {
            Some(t) => t,
            None => w.clock.raw(),
        };
        w.end_spans_from(i, end);
    }
}

/// A write refused for its input (whatever the recorder): counted as refused against the
/// thread's slot when a recorder runs (a thread without a slot counts it as no-slot), then
/// handed back for the caller.
#[cold]
#[inline(never)]
fn refused(e: WriteError) -> WriteError {
    if !cfg!(feature = "compile-out") && GEN.load(Ordering::Relaxed) != 0 {
        with_writer(|w| w.refuse());
    }
    e
}

/// Counts a write the C ABI refused for its arguments (NULL, bad UTF-8), as a refused write of
/// the Rust API is counted: once, as `refused` of the calling thread's slot (for `typhon-ffi`).
#[doc(hidden)]
pub fn count_refused() {
    let _ = refused(WriteError::Invalid(String::new()));
}

#[inline(always)]
fn begin_span(name: &str, ctx: Option<TraceContext>, at: Option<u64>) -> SpanGuard<'_> {
    // The disabled path stays here, inline: one load and a branch, as for instants.
    let kind = if ctx.is_some() {
        TraceEventKind::TRACED_SPAN
    } else {
        TraceEventKind::NAMED_SPAN
    };
    if cfg!(feature = "compile-out") || kind_state(kind) == KIND_OFF {
        return SpanGuard::inert();
    }
    guard_of(open_span(name, ctx, at).ok().flatten())
}

#[inline(always)]
fn guard_of<'a>(o: Option<(u64, u64)>) -> SpanGuard<'a> {
    match o {
        Some((id, gen)) => SpanGuard {
            id,
            gen,
            _marker: std::marker::PhantomData,
        },
        None => SpanGuard::inert(),
    }
}

/// Opens a span (the one begin path of guards and of [`span_begin`]): `Ok(Some((id,
/// generation)))`, `Ok(None)` when nothing is recorded (compiled out, no recorder, filtered, no
/// slot), `Err` for a span the recorder refuses (counted as refused while a recorder runs): a
/// name with a NUL, a record over 65534 bytes (whether or not a recorder runs), a record
/// larger than the running recorder's pages hold.
#[inline(always)]
fn open_span(
    name: &str,
    ctx: Option<TraceContext>,
    at: Option<u64>,
) -> Result<Option<(u64, u64)>, WriteError> {
    let (kind, size) = match ctx {
        None => (TraceEventKind::NAMED_SPAN, records::named_span_len(name)),
        Some(_) => (TraceEventKind::TRACED_SPAN, records::traced_span_len(name)),
    };
    if cfg!(feature = "compile-out") {
        return Ok(None);
    }
    if size > codec::CommonHeader::MAX_RECORD {
        return Err(refused(WriteError::TooLarge {
            size,
            max: codec::CommonHeader::MAX_RECORD,
        }));
    }
    if records::has_nul(name.as_bytes()) {
        // A NUL would end the name early in every reader: refuse rather than truncate.
        return Err(refused(WriteError::Invalid(
            "span name contains a NUL byte".into(),
        )));
    }
    let state = kind_state(kind);
    if state != KIND_ON {
        if state == KIND_FILTERED {
            count_filtered();
        }
        return Ok(None);
    }
    with_writer(|w| {
        w.open_span(name, ctx, at, size)
            .map(|id| Some((id, w.core.gen)))
    })
    .unwrap_or(Ok(None))
}

/// Opens a span without a guard, for callers that cannot hold one (the C ABI, engines whose
/// begin and end are separate calls): a NamedSpan, or a TracedSpan when `ctx` is given, starting
/// now or at `at` (raw ticks). End it with [`span_end`] on the same thread; spans end innermost
/// first. Returns the span id, or 0 when nothing is recorded (no recorder, filtered, no slot,
/// compiled out) — [`span_end`] accepts 0 as a no-op. A span still open when its thread exits
/// is ended then.
///
/// Guard spans ([`span`]) and these share one stack per thread: each one's parent is the
/// thread's innermost open span of either sort (see [`SpanGuard`]).
///
/// # Errors
/// [`WriteError::Invalid`] for a name with a NUL byte and [`WriteError::TooLarge`] for a record
/// over 65534 bytes, whether or not a recorder runs; [`WriteError::TooLarge`] also for a record
/// larger than the running recorder's pages hold. While a recorder runs each is counted as
/// refused.
///
/// ```
/// # let _g = typhon_recorder::recorder::doc_lock();
/// use typhon_recorder::recorder::{span_begin, span_end, RecorderBuilder, WriteError};
/// let sink = typhon_recorder::sink::MemorySink::new();
/// let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
/// let outer = span_begin("frame", None, None).unwrap();
/// let inner = span_begin("physics", None, None).unwrap();
/// assert!(span_end(outer, None).is_err()); // not the innermost
/// span_end(inner, None).unwrap();
/// span_end(outer, None).unwrap();
/// // A name too large for a 4 KiB page is refused, and counted.
/// let big = "x".repeat(5000);
/// assert!(matches!(span_begin(&big, None, None), Err(WriteError::TooLarge { .. })));
/// let stats = rec.finish().unwrap();
/// assert_eq!(stats.user_written(), 3); // ThreadInfo + 2 spans
/// assert_eq!(stats.slot(1).unwrap().refused, 1);
/// ```
pub fn span_begin(
    name: &str,
    ctx: Option<TraceContext>,
    at: Option<u64>,
) -> Result<u64, WriteError> {
    Ok(open_span(name, ctx, at)?.map_or(0, |(id, _)| id))
}

/// Ends the span `span_id` opened with [`span_begin`] (or a guard) on this thread, now or at
/// `at` (raw ticks), and writes its record. `span_id` 0 (nothing was recorded) is a no-op.
///
/// # Errors
/// [`WriteError::SpanMismatch`] if `span_id` is not this thread's innermost open span: nothing
/// is ended then (and nothing counted: the span stays open and can still end). A span of an
/// earlier recorder is not open in this one, so ending it is a mismatch too.
///
/// ```
/// use typhon_recorder::recorder::{span_begin, span_end};
/// let id = span_begin("x", None, Some(10)).unwrap(); // 0: no recorder installed
/// span_end(id, Some(20)).unwrap();
/// assert!(span_end(12345, None).is_err());
/// ```
pub fn span_end(span_id: u64, at: Option<u64>) -> Result<(), WriteError> {
    if span_id == 0 {
        return Ok(());
    }
    let mismatch = |innermost| WriteError::SpanMismatch { span_id, innermost };
    with_writer(|w| {
        let innermost = w.spans.last().map_or(0, |e| e.id);
        if innermost != span_id {
            return Err(mismatch(innermost));
        }
        let end = match at {
            Some(t) => t,
            None => w.clock.raw(),
        };
        w.end_innermost(end);
        Ok(())
    })
    .unwrap_or(Err(mismatch(0)))
}

/// Opens a NamedSpan; it ends when the guard drops. Its parent is the thread's innermost open
/// span. A span the recorder refuses (a name with a NUL byte, a record larger than a page) is
/// not opened and is counted as refused, never truncated; [`try_span`] reports it.
///
/// ```
/// let _outer = typhon_recorder::span("frame");
/// let _inner = typhon_recorder::span("physics");
/// ```
#[inline]
pub fn span(name: &str) -> SpanGuard<'_> {
    begin_span(name, None, None)
}

/// [`span`], [`span_at`], [`traced_span`] or [`traced_span_at`] that reports a refused span:
/// a TracedSpan when `ctx` is given, starting now or at `at` (raw ticks). The guard is inert
/// (id 0) when nothing is recorded (no recorder, filtered, no slot).
///
/// # Errors
/// As [`span_begin`]: [`WriteError::Invalid`] for a name with a NUL byte,
/// [`WriteError::TooLarge`] for a record over 65534 bytes or larger than the running
/// recorder's pages hold (each counted as refused while a recorder runs).
///
/// ```
/// use typhon_recorder::recorder::{try_span, WriteError};
/// let g = try_span("update", None, None).unwrap();
/// drop(g);
/// assert!(matches!(try_span("a\0b", None, None), Err(WriteError::Invalid(_))));
/// ```
#[inline]
pub fn try_span(
    name: &str,
    ctx: Option<TraceContext>,
    at: Option<u64>,
) -> Result<SpanGuard<'_>, WriteError> {
    Ok(guard_of(open_span(name, ctx, at)?))
}

/// [`span`] starting at a caller-supplied time in raw ticks (end it with [`SpanGuard::end_at`]
/// or by dropping it).
///
/// ```
/// let s = typhon_recorder::span_at("load", 100);
/// s.end_at(200);
/// ```
#[inline]
pub fn span_at(name: &str, start: u64) -> SpanGuard<'_> {
    begin_span(name, None, Some(start))
}

/// Opens a TracedSpan carrying a trace context: a W3C trace id
/// ([`TraceContext::from_w3c_bytes`]) or a command's causal id ([`command_causal_id`]).
///
/// ```
/// let (hi, lo) = typhon_recorder::command_causal_id(7, 100, 3);
/// let _s = typhon_recorder::traced_span("apply-command",
///     typhon_recorder::recorder::TraceContext { hi, lo });
/// ```
#[inline]
pub fn traced_span(name: &str, ctx: TraceContext) -> SpanGuard<'_> {
    begin_span(name, Some(ctx), None)
}

/// [`traced_span`] starting at a caller-supplied time in raw ticks.
///
/// ```
/// let s = typhon_recorder::traced_span_at("x", typhon_recorder::recorder::TraceContext { hi: 1, lo: 2 }, 5);
/// s.end_at(9);
/// ```
#[inline]
pub fn traced_span_at(name: &str, ctx: TraceContext, start: u64) -> SpanGuard<'_> {
    begin_span(name, Some(ctx), Some(start))
}

pub use crate::codec::correlation::{command_causal_id, is_command_causal_id};

/// Longest thread name a ThreadInfo record carries (longer names are cut at a character
/// boundary: a display name, not data).
pub const MAX_THREAD_NAME: usize = 64;

pub(crate) fn clamp_thread_name(name: &str) -> &str {
    if name.len() <= MAX_THREAD_NAME {
        return name;
    }
    let mut end = MAX_THREAD_NAME;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// Decodes a ThreadInfo record: (thread id, name, kind).
pub(crate) fn thread_info(r: &[u8]) -> Option<(i32, &str, ThreadKind)> {
    match records::decode(r) {
        Ok((
            _,
            records::Record::ThreadInfo {
                thread_id,
                name,
                kind,
            },
        )) => Some((thread_id, name, kind)),
        _ => None,
    }
}

/// Serialises doctests and tests that install the process-wide recorder.
#[doc(hidden)]
pub fn doc_lock() -> parking_lot::MutexGuard<'static, ()> {
    static L: Mutex<()> = Mutex::new(());
    L.lock()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spares(rec: &Recorder) -> usize {
        rec.core.registry.spare_count()
    }

    /// Waits (a minute at most, then fails) for the flusher's helper to bring the pool to `n`.
    fn wait_for_spares(rec: &Recorder, n: usize) {
        let t0 = std::time::Instant::now();
        while spares(rec) < n {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the pool stayed at {} spares, not {n}",
                spares(rec)
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A recorder into a NullSink with `spares` spare rings and an hour's flush interval: only
    /// a thread's exit (which wakes the flusher) and `drain` make it cycle, so the counts a
    /// test takes between drains are not racing its timer.
    fn drain_driven(spares: usize) -> Recorder {
        RecorderBuilder::new()
            .sink(crate::sink::NullSink)
            .spare_rings(spares)
            .flush_interval(Duration::from_secs(3600))
            .start()
            .unwrap()
    }

    #[test]
    fn first_claims_take_spare_rings_and_a_helper_makes_new_ones() {
        let _g = doc_lock();
        let rec = drain_driven(2);
        assert_eq!(
            spares(&rec),
            2,
            "start() makes the spares before it returns"
        );
        let core = rec.core.clone();
        std::thread::spawn(move || {
            crate::ingress_received(1, 2, 3, 4);
            assert_eq!(
                core.registry.spare_count(),
                1,
                "the first event took a spare"
            );
        })
        .join()
        .unwrap();
        // A cycle after the claim starts the helper.
        rec.drain();
        wait_for_spares(&rec, 2);
        assert_eq!(spares(&rec), 2, "the helper made one ring, no more");
        let stats = rec.finish().unwrap();
        assert_eq!(stats.total_missed(), 0);
    }

    #[test]
    fn taking_the_last_spare_has_it_replaced_without_waiting_for_the_timer() {
        let _g = doc_lock();
        let rec = drain_driven(1);
        let (claimed_tx, claimed) = std::sync::mpsc::channel();
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            crate::ingress_received(1, 2, 3, 4);
            claimed_tx.send(()).unwrap();
            let _ = hold.recv();
        });
        claimed.recv().unwrap();
        // No drain, and the thread has not exited (which would wake the flusher too): only the
        // claim's wake-up can have started the helper before the hour-long timer.
        wait_for_spares(&rec, 1);
        drop(release);
        t.join().unwrap();
        let stats = rec.finish().unwrap();
        assert_eq!(stats.user_written(), 2, "ThreadInfo and the event");
    }

    #[test]
    fn after_a_refused_spare_ring_the_next_try_waits_a_second() {
        let _g = doc_lock();
        let rec = drain_driven(1);
        {
            let mut hook = rec.core.registry.hook.lock().unwrap();
            hook.refuse = 1;
            hook.attempts.clear(); // `start()` made the first spare
        }
        std::thread::spawn(|| crate::ingress_received(1, 2, 3, 4))
            .join()
            .unwrap();
        // Each drain's cycle lets the flusher look at its helper; the pool is refilled by the
        // second try, which the refusal puts off by a second.
        let t0 = std::time::Instant::now();
        while spares(&rec) < 1 {
            assert!(t0.elapsed() < Duration::from_secs(60), "no spare ring made");
            rec.drain();
            std::thread::sleep(Duration::from_millis(5));
        }
        let attempts = rec.core.registry.hook.lock().unwrap().attempts.clone();
        assert_eq!(attempts.len(), 2, "one refused try, one that made the ring");
        let wait = attempts[1] - attempts[0];
        assert!(
            wait >= crate::flusher::SPARE_RETRY,
            "retried after {wait:?}"
        );
        let stats = rec.finish().unwrap();
        assert_eq!(stats.user_written(), 2, "ThreadInfo and the event");
    }

    #[test]
    fn stats_give_the_longest_gap_between_two_drains() {
        let _g = doc_lock();
        let t0 = std::time::Instant::now();
        let rec = drain_driven(DEFAULT_SPARE_RINGS);
        rec.drain();
        std::thread::sleep(Duration::from_millis(30));
        rec.drain();
        let gap = rec.stats().longest_drain_gap_ns;
        assert!(gap >= 30_000_000, "the drains were 30 ms apart: {gap} ns");
        assert!(gap <= t0.elapsed().as_nanos() as u64, "{gap} ns");
        let stats = rec.finish().unwrap();
        assert!(stats.longest_drain_gap_ns >= gap);
    }

    #[test]
    fn the_rings_are_drained_while_a_spare_ring_is_being_made() {
        let _g = doc_lock();
        let rec = drain_driven(1);
        // The next ring to be made waits until `kernel` is dropped: a kernel compacting memory.
        let (kernel, stall) = std::sync::mpsc::channel::<()>();
        rec.core.registry.hook.lock().unwrap().stall = Some(stall);
        std::thread::spawn(|| crate::ingress_received(1, 2, 3, 4))
            .join()
            .unwrap();
        // A flusher that made the ring itself would be stuck after one of these drains' cycles,
        // so the second could not be served.
        let (done, served) = std::sync::mpsc::channel();
        let (served, pool) = std::thread::scope(|s| {
            s.spawn(|| {
                rec.drain();
                rec.drain();
                let _ = done.send(());
            });
            let served = served.recv_timeout(Duration::from_secs(60)).is_ok();
            let pool = spares(&rec);
            drop(kernel);
            (served, pool)
        });
        assert!(served, "a drain waited for the spare ring to be made");
        assert_eq!(pool, 0, "the spare was still being made during the drains");
        assert_eq!(rec.stats().user_written(), 2, "ThreadInfo and the event");
        wait_for_spares(&rec, 1);
        let stats = rec.finish().unwrap();
        assert_eq!(stats.total_missed(), 0);
    }

    #[test]
    fn without_spares_a_first_claim_allocates_its_ring() {
        let _g = doc_lock();
        let rec = RecorderBuilder::new()
            .sink(crate::sink::NullSink)
            .spare_rings(0)
            .start()
            .unwrap();
        std::thread::spawn(|| crate::ingress_received(1, 2, 3, 4))
            .join()
            .unwrap();
        rec.drain();
        assert_eq!(spares(&rec), 0);
        assert_eq!(rec.stats().user_written(), 2, "ThreadInfo and the event");
        rec.finish().unwrap();
    }

    #[test]
    fn a_thread_moves_from_a_finished_recorder_to_the_next() {
        let _g = doc_lock();
        // One thread, two recorders in turn: its writer (kept in the thread-local since the
        // boxed writer went) is retired from the first and a new one claimed in the second.
        let (a, b) = std::thread::spawn(|| {
            let rec = RecorderBuilder::new()
                .sink(crate::sink::NullSink)
                .start()
                .unwrap();
            for i in 0..3 {
                crate::ingress_received(i, 1, 2, 3);
            }
            let a = rec.finish().unwrap();
            crate::ingress_received(9, 9, 9, 9); // between the two: nothing installed
            let rec = RecorderBuilder::new()
                .sink(crate::sink::NullSink)
                .start()
                .unwrap();
            crate::ingress_received(4, 1, 2, 3);
            crate::ingress_received(5, 1, 2, 3);
            let b = rec.finish().unwrap();
            (a, b)
        })
        .join()
        .unwrap();
        assert_eq!(a.user_written(), 4, "ThreadInfo and three events");
        assert_eq!(b.user_written(), 3, "ThreadInfo and two events");
        for s in [&a, &b] {
            assert_eq!((s.no_slot, s.total_missed()), (0, 0));
        }
    }

    #[test]
    fn a_write_from_a_later_thread_local_destructor_counts_as_no_slot() {
        let _g = doc_lock();
        struct WritesOnDrop;
        impl Drop for WritesOnDrop {
            fn drop(&mut self) {
                crate::ingress_received(7, 7, 7, 7);
            }
        }
        thread_local! {
            static LATE: RefCell<Option<WritesOnDrop>> = const { RefCell::new(None) };
        }
        let rec = RecorderBuilder::new()
            .sink(crate::sink::NullSink)
            .start()
            .unwrap();
        std::thread::spawn(|| {
            // Registered before the thread's first event registers its owner, so destroyed
            // after it (reverse order): the write finds the writer gone and the thread done.
            LATE.with(|l| *l.borrow_mut() = Some(WritesOnDrop));
            crate::ingress_received(1, 2, 3, 4);
        })
        .join()
        .unwrap();
        let stats = rec.finish().unwrap();
        assert_eq!(stats.user_written(), 2, "ThreadInfo and the event");
        assert_eq!(
            stats.no_slot, 1,
            "the destructor's write, counted, not written"
        );
        assert_eq!(stats.total_missed(), 0);
    }

    #[test]
    fn the_gate_records_on_counts_filtered_and_ignores_off() {
        let _g = doc_lock();
        // Off (no recorder installed): nothing recorded, nothing counted.
        crate::tick_start();
        crate::ingress_received(1, 2, 3, 4);
        let rec = RecorderBuilder::new()
            .sink(crate::sink::NullSink)
            .disable(TraceEventKind::TICK_START)
            .disable(TraceEventKind::NAMED_SPAN)
            .start()
            .unwrap();
        std::thread::spawn(|| {
            crate::ingress_received(1, 2, 3, 4); // on (claims the thread's slot)
            crate::tick_start(); // filtered, counted against the slot
            crate::tick_start();
            drop(crate::span("filtered"));
        })
        .join()
        .unwrap();
        // A thread whose every write is filtered takes no slot; its writes are still counted.
        std::thread::spawn(|| {
            crate::tick_start();
            drop(crate::span("filtered"));
        })
        .join()
        .unwrap();
        let stats = rec.finish().unwrap();
        assert_eq!(
            stats.filtered_no_slot, 2,
            "the slotless thread's tick and span"
        );
        assert_eq!(
            stats.total_filtered(),
            5,
            "two ticks and a span open, then two more"
        );
        assert_eq!(
            stats.user_written(),
            2,
            "ThreadInfo and the IngressReceived"
        );
        assert_eq!(stats.slots.len(), 2, "the recorder's slot and one thread's");
        assert_eq!(stats.total_missed(), 0);
    }

    #[test]
    fn default_thread_name_is_what_format_would_write() {
        for tid in [0, 7, 10, 12_345, i32::MAX, -1, i32::MIN] {
            let mut buf = [0u8; DEFAULT_NAME_MAX];
            assert_eq!(default_thread_name(tid, &mut buf), format!("thread-{tid}"));
        }
    }

    #[test]
    fn more_spares_than_user_slots_is_a_config_error() {
        let e = RecorderBuilder::new()
            .sink(crate::sink::NullSink)
            .spare_rings(SLOTS)
            .start();
        assert!(matches!(e, Err(RecorderError::Config(m)) if m.contains("spare rings")));
    }
}
