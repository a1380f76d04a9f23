//! The recorder's lifecycle: [`RecorderBuilder`] configures and starts a recording (installing it
//! process-wide and starting its flusher), [`Recorder`] is its handle, and [`Recorder::finish`]
//! writes out every record written before the call and returns the final [`Stats`].
//!
//! ```
//! use typhon_recorder::{sink::MemorySink, RecorderBuilder};
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

use crate::codec::{self, TraceEventKind};
pub use crate::error::{RecorderError, Unfinished};
use crate::session::{Core, Ending};
use crate::sink::Sink;
use crate::stats::Stats;
use crate::write::clock::Clock;
use crate::write::gate::*;
use crate::write::slots::{Registry, SLOTS};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Recorder configuration.
///
/// ```
/// use std::time::Duration;
/// use typhon_recorder::RecorderBuilder;
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
    compression: crate::tracedat::Compression,
    finish_on_termination: bool,
    on_termination: Option<crate::term::Callback>,
    rotate: Option<(u64, usize)>,
    window: crate::window::Builder,
}

impl Default for RecorderBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// Default bytes per slot ring: 2 MiB, one huge page ([`crate::write::ring::HUGE_PAGE`]).
///
/// Typhon's primary ring is 1 MiB. Twice that costs a megabyte more per thread and buys two
/// things: where the kernel gives transparent huge pages, the whole ring sits under one TLB
/// entry (why that shortens the writes' tail, with figures: [`crate::write::ring`]'s `Pages`), and a
/// producer the scheduler holds back can fall ~38 ms behind at 2.5 M records/s before it
/// drops, where 1 MiB held ~19 ms.
pub const DEFAULT_RING_BYTES: usize = crate::write::ring::HUGE_PAGE;
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
    /// let b = typhon_recorder::RecorderBuilder::new();
    /// assert!(b.validate().is_ok());
    /// ```
    pub fn new() -> Self {
        Self {
            sink: None,
            output: None,
            page_size: crate::flush::page::DEFAULT_PAGE_SIZE,
            ring_bytes: DEFAULT_RING_BYTES,
            flush_interval: DEFAULT_FLUSH_INTERVAL,
            max_page_age: Duration::from_secs(1),
            spare_rings: DEFAULT_SPARE_RINGS,
            disabled: Vec::new(),
            compression: crate::tracedat::Compression::None,
            finish_on_termination: false,
            on_termination: None,
            rotate: None,
            window: Default::default(),
        }
    }

    /// Writes the [`output`](Self::output) `OUT` as rotating segments (SPEC §16): `OUT.000001`,
    /// `OUT.000002`, … each a complete trace.dat readable alone (threads, definitions and the
    /// clock restated), cut after a flush cycle once it holds `segment_bytes` of pages (before
    /// compression), finished on a background thread, and keeping the newest `keep` complete
    /// ones. A kill leaves the current segment for `typhon-rec recover OUT`; what deleted
    /// segments held is counted in [`Stats::rotated_out_records`].
    ///
    /// ```
    /// let b = typhon_recorder::RecorderBuilder::new().output("/tmp/x.dat").rotate(8 << 20, 4);
    /// assert!(b.validate().is_ok());
    /// assert!(typhon_recorder::RecorderBuilder::new().rotate(8 << 20, 0).validate().is_err());
    /// ```
    pub fn rotate(mut self, segment_bytes: u64, keep: usize) -> Self {
        self.rotate = Some((segment_bytes, keep));
        self
    }

    /// Finishes the recording when the process is told to end, so that the output is a complete
    /// file (as [`Recorder::finish`] would leave it) rather than `<out>.parts/`:
    ///
    /// - on **SIGINT or SIGTERM**, everything written before the signal is written out, the
    ///   signals' previous dispositions are restored and the signal is raised again, so the
    ///   process ends as it would have without the recorder (killed by that signal, or in the
    ///   program's own handler, installed before `start()`, which then runs). A signal the
    ///   process ignores stays ignored. A second SIGINT or SIGTERM while the file is being
    ///   finished does not wait: it acts at once as before (a second Ctrl-C kills; the pages are
    ///   then left for `typhon-rec recover`);
    /// - on **`exit`** (`std::process::exit`, a return from `main`, C's `exit`) with the
    ///   recorder still running (kept in a static, leaked, or never dropped before `exit`), an
    ///   `atexit` hook finishes it before the process ends.
    ///
    /// Threads still writing meanwhile are not held up: their writes after the finish point are
    /// not recorded, as after [`Recorder::finish`]. The handler itself only writes a byte to a
    /// pipe (a helper thread, `typhon-signals`, does the finish) and is installed with
    /// `SA_RESTART`, so system calls it interrupts are restarted. A handler the program installs
    /// *after* `start()` replaces this one (chain to the previous handler from it to keep both).
    /// Ends when the recorder is finished: the dispositions are put back as they were.
    ///
    /// ```
    /// # let _g = typhon_recorder::doc_lock();
    /// let rec = typhon_recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink)
    ///     .finish_on_termination()
    ///     .start()
    ///     .unwrap();
    /// rec.finish().unwrap(); // the previous SIGINT and SIGTERM handling is back
    /// ```
    pub fn finish_on_termination(mut self) -> Self {
        self.finish_on_termination = true;
        self
    }

    /// [`finish_on_termination`](Self::finish_on_termination), and `f` is called once the
    /// recording has been finished that way, with the cause and the outcome: on the
    /// `typhon-signals` thread just before the signal is raised again, or in the `atexit` hook.
    /// (Rust's standard output still works there; keep it short, the process is ending.)
    ///
    /// ```
    /// # let _g = typhon_recorder::doc_lock();
    /// use typhon_recorder::{RecorderBuilder, Termination};
    /// let rec = RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink)
    ///     .on_termination(|why: Termination, outcome| match outcome {
    ///         Ok(stats) => eprintln!("{why}: recording complete, {} records", stats.user_written()),
    ///         Err(e) => eprintln!("{why}: {e}"),
    ///     })
    ///     .start()
    ///     .unwrap();
    /// rec.finish().unwrap(); // finished by the program: `f` is not called
    /// ```
    pub fn on_termination(
        mut self,
        f: impl FnOnce(crate::term::Termination, Result<Stats, RecorderError>) + Send + 'static,
    ) -> Self {
        self.finish_on_termination = true;
        self.on_termination = Some(Box::new(f));
        self
    }

    /// How the output file is written (SPEC §11): [`Compression::None`] (the default: a
    /// trace.dat version 6) or [`Compression::Zstd`], a version 7 file whose pages the flusher
    /// compresses into zstd chunks while recording, so the disk sees only compressed bytes.
    /// Applies to [`Self::output`]; a [`Self::sink`] of your own gets pages as they are.
    ///
    /// [`Compression::None`]: crate::tracedat::Compression::None
    /// [`Compression::Zstd`]: crate::tracedat::Compression::Zstd
    ///
    /// ```
    /// use typhon_recorder::{tracedat::Compression, RecorderBuilder};
    /// let b = RecorderBuilder::new().compression(Compression::Zstd { level: 1 });
    /// assert!(b.validate().is_ok());
    /// let b = RecorderBuilder::new().compression(Compression::Zstd { level: 42 });
    /// assert!(b.validate().is_err());
    /// ```
    pub fn compression(mut self, c: crate::tracedat::Compression) -> Self {
        self.compression = c;
        self
    }

    /// Pages go to this sink.
    ///
    /// ```
    /// let b = typhon_recorder::RecorderBuilder::new()
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
    /// let b = typhon_recorder::RecorderBuilder::new().output("/tmp/x.dat");
    /// # drop(b);
    /// ```
    pub fn output(mut self, path: impl Into<PathBuf>) -> Self {
        self.output = Some(path.into());
        self
    }

    /// Window mode (SPEC §16): keep only the newest `d` of records, in memory, and write them on
    /// [`Recorder::snapshot`], [`request_snapshot`](crate::request_snapshot) or a trigger
    /// ([`snapshot_when`](Self::snapshot_when)). No file grows; set no output, sink or rotation. The
    /// byte budget ([`window_bytes`](Self::window_bytes), 64 MiB unless set) wins over `d`.
    ///
    /// ```
    /// let b = typhon_recorder::RecorderBuilder::new().window(std::time::Duration::from_secs(30));
    /// assert!(b.validate().is_ok());
    /// ```
    pub fn window(mut self, d: Duration) -> Self {
        self.window.duration = Some(d);
        self
    }

    /// Window mode with at most `bytes` held (pages and their index): the oldest pages are
    /// evicted past it, whatever [`window`](Self::window) says.
    ///
    /// ```
    /// let b = typhon_recorder::RecorderBuilder::new().window_bytes(256 << 20);
    /// assert!(b.validate().is_ok());
    /// assert!(typhon_recorder::RecorderBuilder::new().window_bytes(10).validate().is_err());
    /// ```
    pub fn window_bytes(mut self, bytes: u64) -> Self {
        self.window.bytes = Some(bytes);
        self
    }

    /// Where snapshots are written (default: the working directory at `start()`); made
    /// absolute at `start()`.
    ///
    /// ```
    /// let b = typhon_recorder::RecorderBuilder::new()
    ///     .window(std::time::Duration::from_secs(5)).snapshot_dir("/tmp");
    /// assert!(b.validate().is_ok());
    /// ```
    pub fn snapshot_dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.window.dir = Some(path.into());
        self
    }

    /// A snapshot of the window whenever `t` holds (several calls add rules).
    ///
    /// ```
    /// use std::time::Duration;
    /// use typhon_recorder::{RecorderBuilder, Trigger};
    /// let b = RecorderBuilder::new().window(Duration::from_secs(5))
    ///     .snapshot_when(Trigger::tick_over(Duration::from_millis(20)));
    /// assert!(b.validate().is_ok());
    /// ```
    pub fn snapshot_when(mut self, t: crate::window::Trigger) -> Self {
        self.window.rules.push(t);
        self
    }

    /// Page (sub-buffer) size: a power of two from 4096 to 1 MiB.
    ///
    /// ```
    /// let b = typhon_recorder::RecorderBuilder::new().page_size(16384);
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
    /// let b = typhon_recorder::RecorderBuilder::new().ring_bytes(4096);
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
    /// [`Backing`](crate::write::ring::Backing)); each may take milliseconds when the kernel must compact
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
    /// let b = typhon_recorder::RecorderBuilder::new().spare_rings(4);
    /// assert!(b.validate().is_ok());
    /// assert!(typhon_recorder::RecorderBuilder::new().spare_rings(300).validate().is_err());
    /// ```
    pub fn spare_rings(mut self, n: usize) -> Self {
        self.spare_rings = n;
        self
    }

    /// How often the flusher drains the rings while one fills fast (all slow: up to 5× this, not
    /// in window mode, which bounds a kill's loss); it also wakes when a ring passes half full.
    ///
    /// ```
    /// let b = typhon_recorder::RecorderBuilder::new()
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
    /// let b = typhon_recorder::RecorderBuilder::new()
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
    /// slot, and its filtered writes are counted in [`Stats::filtered_no_slot`]. A compact
    /// kind (221–224) is a form, not a filter: disabled, its full kind is written instead.
    ///
    /// ```
    /// use typhon_recorder::codec::TraceEventKind;
    /// let b = typhon_recorder::RecorderBuilder::new().disable(TraceEventKind::TICK_START);
    /// # drop(b);
    /// ```
    pub fn disable(mut self, kind: TraceEventKind) -> Self {
        self.disabled.push(kind);
        self
    }

    /// Checks the configuration without starting anything.
    ///
    /// ```
    /// let e = typhon_recorder::RecorderBuilder::new().ring_bytes(3000).validate();
    /// assert!(e.is_err());
    /// ```
    pub fn validate(&self) -> Result<(), RecorderError> {
        crate::flush::page::validate_page_size(self.page_size)
            .map_err(|e| RecorderError::Config(e.to_string()))?;
        if !self.ring_bytes.is_power_of_two()
            || self.ring_bytes < crate::write::ring::MIN_CAPACITY
            || self.ring_bytes > crate::write::ring::MAX_CAPACITY
        {
            return Err(RecorderError::Config(format!(
                "ring size {} must be a power of two between {} and {}",
                self.ring_bytes,
                crate::write::ring::MIN_CAPACITY,
                crate::write::ring::MAX_CAPACITY
            )));
        }
        self.compression.check().map_err(RecorderError::Config)?;
        if self.flush_interval.is_zero() {
            return Err(RecorderError::Config("flush interval must be > 0".into()));
        }
        if let Some((bytes, keep)) = self.rotate {
            if keep == 0 || bytes < self.page_size as u64 {
                return Err(RecorderError::Config(format!(
                    "rotate({bytes}, {keep}): a segment holds at least one page ({} bytes) and at least one segment is kept",
                    self.page_size
                )));
            }
        }
        self.window.check(self.page_size)?;
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
    /// # let _g = typhon_recorder::doc_lock();
    /// let r = typhon_recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// assert!(typhon_recorder::RecorderBuilder::new()
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
        let window = self.window.make(
            self.compression,
            self.sink.is_some() || self.output.is_some() || self.rotate.is_some(),
        )?;
        let mut rotation = None;
        let sink: Box<dyn Sink> = match (self.sink, &self.output) {
            (None, None) if window.is_some() => Box::new(crate::sink::NullSink),
            (Some(_), None) if self.rotate.is_some() => {
                return Err(RecorderError::Config(
                    "rotate needs an output path, not a sink".into(),
                ))
            }
            (Some(s), None) => s,
            (None, Some(path)) if path.as_os_str().is_empty() => {
                return Err(RecorderError::Config("the output path is empty".into()))
            }
            // The path is made absolute now: a later `chdir` changes nothing. A path that is
            // not one a recording can be written to (a FIFO, a device, a symlink, a directory,
            // a missing directory) is the caller's configuration, not an I/O failure.
            (None, Some(path)) if self.rotate.is_some() => {
                let path = crate::sink::output_path(path)
                    .map_err(|e| RecorderError::Config(e.to_string()))?;
                let (bytes, keep) = self.rotate.unwrap_or_default();
                let s = crate::sink::RotatingSink::create(
                    path,
                    self.page_size,
                    self.compression,
                    0,
                    bytes,
                    keep,
                )?;
                rotation = Some(s.rotation());
                Box::new(s)
            }
            (None, Some(path)) => {
                let path = crate::sink::output_path(path)
                    .map_err(|e| RecorderError::Config(e.to_string()))?;
                Box::new(crate::sink::FileSink::create_with(
                    path,
                    self.page_size,
                    self.compression,
                    0,
                )?)
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
        let hub = Arc::new(Hub {
            gen,
            clock: Clock::new(),
            registry,
            // A record's size is a u16 (at most 65534), whatever a large page could hold.
            max_record: crate::flush::page::max_record_size(self.page_size)
                .min(codec::CommonHeader::MAX_RECORD),
            pid: std::process::id() as i32,
            wakeup: crate::flush::wake::Wake::new(),
            definitions: Default::default(),
            window: window.as_ref().map(|w| w.1.clone()),
        });
        let core = Arc::new(Core {
            hub,
            page_size: self.page_size,
            flush_interval: self.flush_interval,
            max_page_age: self.max_page_age,
            no_slot: AtomicU64::new(0),
            filtered_no_slot: AtomicU64::new(0),
            progress: crate::stats::Progress::default(),
            ending: parking_lot::Mutex::new(Ending::Starting),
            flusher_thread: AtomicU64::new(0),
            rotation,
        });
        #[cfg(unix)]
        if let Some((cfg, shared)) = &window {
            // The socket's thread asks through a function, holding the recorder weakly: the
            // window's side names no lifecycle type.
            let weak = Arc::downgrade(&core);
            shared.start_control(
                &cfg.dir,
                Box::new(move || {
                    let core = weak.upgrade()?;
                    Some(
                        core.snapshot("typhon-rec snapshot")
                            .map(|s| s.path)
                            .map_err(|e| e.to_string()),
                    )
                }),
            )?;
        }
        let window = window.map(|(cfg, shared)| crate::window::Window::new(cfg, shared));
        let flusher = crate::flush::flusher::spawn(core.clone(), sink, window)?;
        #[cfg(unix)]
        core.flusher_thread.store(
            std::os::unix::thread::JoinHandleExt::as_pthread_t(&flusher) as u64,
            Ordering::Relaxed,
        );
        *core.ending.lock() = Ending::Running(flusher);
        *active = Some(core.hub.clone());
        SLOTLESS.reset();
        // Relaxed: threads that see the new generation take the slow path, which reads ACTIVE
        // under its lock; the lock orders the Core's construction.
        GEN.store(gen, Ordering::Relaxed);
        for (k, flag) in KIND_STATE.iter().enumerate() {
            let on = !self.disabled.contains(&TraceEventKind(k as u8));
            flag.store(if on { KIND_ON } else { KIND_FILTERED }, Ordering::Relaxed);
        }
        drop(active);
        let rec = Recorder {
            core,
            finished: false,
        };
        // After ACTIVE's lock is released: a signal's finish takes it.
        if self.finish_on_termination {
            rec.arm(self.on_termination)?;
        }
        Ok(rec)
    }
}

/// The running recorder. Dropping it finishes it (errors are then only logged to stderr).
pub struct Recorder {
    core: Arc<Core>,
    /// `finish` ran (the Drop after it has nothing to do).
    finished: bool,
}

/// What [`Recorder::slot_definitions`] returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlotDefinitions {
    /// The slot's NameDefinition records, in id order.
    pub records: Vec<Box<[u8]>>,
    /// Records of the slot that carried their static name inline: its table had no room.
    pub inline: u64,
}

impl Recorder {
    /// A snapshot of the counters now.
    ///
    /// ```
    /// # let _g = typhon_recorder::doc_lock();
    /// let r = typhon_recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// typhon_recorder::tick_start();
    /// let live = r.stats(); // records still in rings are not counted yet
    /// assert!(live.user_attempted() <= 2);
    /// assert_eq!(r.finish().unwrap().user_attempted(), 2); // ThreadInfo + TickStart
    /// ```
    pub fn stats(&self) -> Stats {
        self.core.stats()
    }

    /// The definition records (SPEC §15; today the `tracing` callsites) this recording has
    /// written so far, one per id, each as its first write made it, and how many were not kept
    /// (past a bound of 65 536 records or 16 MiB). A snapshot or a segment that starts a new
    /// file restates them (SPEC §16): a record that uses an id is only readable with its
    /// definition in the same file.
    ///
    /// ```
    /// # let _g = typhon_recorder::doc_lock();
    /// use typhon_recorder::codec::records::Callsite;
    /// let r = typhon_recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// let c = Callsite { id: 7, level: 3, line: 1, name: "req", target: "app", file: "", field_names: "" };
    /// assert!(typhon_recorder::bridge::callsite(&c));
    /// let (defs, overflow) = r.definition_records();
    /// assert_eq!((defs.len(), overflow), (1, 0));
    /// r.finish().unwrap();
    /// ```
    pub fn definition_records(&self) -> (Vec<Box<[u8]>>, u64) {
        self.core.definition_records()
    }

    /// The names slot `slot` has defined so far (SPEC §15: its static names and its interned
    /// value strings), as NameDefinition records of that slot stamped `ts` (readers match a
    /// definition by slot and id, not by time), in id order, and how many of the slot's
    /// records carried their name inline because its table was full. A slot's ids keep their
    /// meaning for the whole recording, whoever owns the slot, so a file that starts mid-way
    /// (a snapshot, a new segment, SPEC §16) writes these at the head of the slot's data,
    /// beside [`definition_records`](Self::definition_records), and every record it keeps
    /// resolves. It reads the slot's table under the slot entry's lock, which writers never take.
    ///
    /// ```
    /// # let _g = typhon_recorder::doc_lock();
    /// use typhon_recorder::codec::records::{decode, Record};
    /// let r = typhon_recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// drop(typhon_recorder::span_static("frame"));
    /// let defs = r.slot_definitions(1, 0);
    /// assert_eq!(defs.inline, 0);
    /// assert_eq!(decode(&defs.records[0]).unwrap().1, Record::NameDefinition { name_id: 1, name: "frame" });
    /// r.finish().unwrap();
    /// ```
    pub fn slot_definitions(&self, slot: u8, ts: i64) -> SlotDefinitions {
        let (records, inline) = self.core.registry.name_definitions(slot, ts);
        SlotDefinitions { records, inline }
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
    /// # let _g = typhon_recorder::doc_lock();
    /// let r = typhon_recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// typhon_recorder::tick_start();
    /// r.drain();
    /// assert_eq!(r.stats().user_written(), 2); // ThreadInfo + TickStart
    /// r.finish().unwrap();
    /// ```
    pub fn drain(&self) {
        self.core.drain(|| self.core.flusher_gone());
    }

    /// Writes a snapshot of the window (SPEC §16) and returns once the file is complete: the
    /// records of every slot in the same interval, ending now. Waits for a snapshot already in
    /// flight first. An error if the recorder keeps no window, if the file could not be written
    /// (the window goes on), or if the recorder finished first.
    ///
    /// ```
    /// # let _g = typhon_recorder::doc_lock();
    /// let dir = std::env::temp_dir().join(format!("typhon-doc-snap-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let r = typhon_recorder::RecorderBuilder::new()
    ///     .window(std::time::Duration::from_secs(10)).snapshot_dir(&dir).start().unwrap();
    /// typhon_recorder::instant(1, 2);
    /// let s = r.snapshot().unwrap();
    /// assert!(s.path.starts_with(&dir) && s.path.exists());
    /// assert!(s.from_ns < s.to_ns);
    /// r.finish().unwrap();
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn snapshot(&self) -> Result<crate::window::Snapshot, RecorderError> {
        self.core.snapshot("Recorder::snapshot")
    }

    /// Turns on [`RecorderBuilder::finish_on_termination`] for a recorder already running (the C
    /// ABI's `typhon_finish_on_termination`); doing it again changes nothing.
    ///
    /// ```
    /// # let _g = typhon_recorder::doc_lock();
    /// let r = typhon_recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// r.finish_on_termination().unwrap();
    /// r.finish().unwrap();
    /// ```
    pub fn finish_on_termination(&self) -> Result<(), RecorderError> {
        self.arm(None)
    }

    fn arm(&self, callback: Option<crate::term::Callback>) -> Result<(), RecorderError> {
        if self.finished {
            return Ok(());
        }
        #[cfg(target_os = "linux")]
        crate::term::arm(&self.core, callback)?;
        #[cfg(not(target_os = "linux"))]
        drop(callback);
        Ok(())
    }

    /// The recorder's clock now, in raw ticks (the unit of every `*_at` write).
    ///
    /// ```
    /// # let _g = typhon_recorder::doc_lock();
    /// let r = typhon_recorder::RecorderBuilder::new()
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
    /// # let _g = typhon_recorder::doc_lock();
    /// let r = typhon_recorder::RecorderBuilder::new()
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
    /// # let _g = typhon_recorder::doc_lock();
    /// let r = typhon_recorder::RecorderBuilder::new()
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
    /// A recording already finished for the program
    /// ([`RecorderBuilder::finish_on_termination`]: a signal whose previous handler let the
    /// process live on) is not finished again: this returns its final counters, or its error.
    ///
    /// ```
    /// # let _g = typhon_recorder::doc_lock();
    /// let r = typhon_recorder::RecorderBuilder::new()
    ///     .sink(typhon_recorder::sink::NullSink).start().unwrap();
    /// typhon_recorder::instant(1, 2);
    /// let s = r.finish().unwrap();
    /// assert_eq!(s.user_written(), 2);
    /// ```
    pub fn finish(mut self) -> Result<Stats, RecorderError> {
        self.finish_inner()
    }

    fn finish_inner(&mut self) -> Result<Stats, RecorderError> {
        if self.finished {
            return Ok(self.core.stats());
        }
        self.finished = true;
        // What a `TrackingAllocator` counted on this thread since its last sample.
        crate::write::alloc::flush_thread();
        let r = self.core.finish();
        #[cfg(target_os = "linux")]
        crate::term::disarm(self.core.gen);
        r
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Err(e) = self.finish_inner() {
            eprintln!("typhon-recorder: finishing on drop failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc_lock;
    use crate::write::writer::*;
    use std::cell::RefCell;

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
            wait >= crate::flush::flusher::SPARE_RETRY,
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
