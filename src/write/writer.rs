//! The thread's writer: its claim on a slot of the installed recorder, kept in a thread-local so
//! that a write finds its ring one load from the thread pointer, and given back at thread exit.

use crate::codec::records::{clamp_thread_name, ThreadKind};
use crate::codec::TraceEventKind as K;
use crate::codec::{records, TraceEventKind};
use crate::write::clock::ThreadClock;
use crate::write::gate::*;
use crate::write::ring::Producer;
use crate::write::slots::{Parked, SLOTS};
use crate::write::stack::OwnStack;
use crate::write::WriteError;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A thread's claim on a slot of one recorder.
///
/// `repr(C)`, in the order a write reads it: inside [`Hot`], the first cache line holds
/// `Hot::gen`, the clock (16 bytes) and the producer's fields from `base` to `wake_at`; the
/// second its `shared` with `last_raw` and `slot`; the third the span fields. Left to the
/// compiler, a write's fields were spread over four lines (the clock's 40 bytes first); after
/// the host or an interrupt evicted them, each was a miss the write waited for (BENCHMARKS.md,
/// "p99.9").
#[repr(C)]
pub(crate) struct Writer {
    /// Its tag is also `Hot::writer`'s `None` (see [`ThreadClock`]).
    pub(crate) clock: ThreadClock,
    /// Its fast-path fields first (see [`Producer`]).
    pub(crate) producer: std::mem::ManuallyDrop<Producer>,
    /// Raw time of this slot's last record (the time of CeLog events written without one).
    pub(crate) last_raw: u64,
    pub(crate) slot: u8,
    /// How many spans are open (the stack's depth, kept only here).
    pub(crate) depth: usize,
    /// The innermost open span's id, 0 when none is: kept beside `depth` so that a span's
    /// begin (its parent) and a guard's end (is it the innermost?) read no stack entry.
    pub(crate) top_id: u64,
    pub(crate) span_counter: u64,
    /// `slot << 56`, the top byte of this writer's span ids (one OR makes an id).
    pub(crate) span_id_base: u64,
    /// Entries of fewer ticks than this, of a key that fits 32 bits, are written as a
    /// TracingEntryShort (their duration fits its u32 in ticks, and in ns once the flusher
    /// converts it); 0 when that kind is off.
    pub(crate) short_entry_ticks: u64,
    /// The key of the last TracingEntry this writer wrote and its ring's `head` after it: a
    /// span closing with nothing written on the thread since its last exit needs no close
    /// record (see [`crate::bridge::close`]).
    pub(crate) last_entry: (u64, u64),
    /// The thread's open spans under this recorder, innermost last (see [`SpanGuard`]): the
    /// slot's fixed stack, shared with the flusher, which writes those still open at finish.
    pub(crate) stack: OwnStack,
    /// The `&'static str` (address, length) this thread's last static name was, with its id
    /// in the slot's names (`static_id`, never 0; see `crate::write::names`): a static name
    /// does not change, so a record named by the same one again (a loop, a frame's spans)
    /// finds its id with one compare. Null when there is none yet.
    pub(crate) static_checked: (*const u8, usize),
    pub(crate) static_id: u32,
    /// This writer's epoch in the slot's names (see `NameTable::claim`).
    pub(crate) name_epoch: u32,
    /// The slot's static names, shared with the flusher (which restates them).
    pub(crate) names: Arc<crate::write::names::NameTable>,
    /// `core.max_record`, copied so the span begin does not reach into the `Hub` for it.
    pub(crate) max_record: usize,
    pub(crate) core: Arc<Hub>,
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
/// level of loads is a miss the write waits for, and so is each line: aligned to one, with
/// the fields a write reads first (see [`Writer`]), a write touches two.
#[repr(C, align(64))]
pub(crate) struct Hot {
    /// Generation of the recorder `writer` belongs to ([`DEAD`] once the thread is exiting).
    pub(crate) gen: u64,
    /// This thread's writer, `None` when the thread has none. `ManuallyDrop` keeps `Hot` free
    /// of drop glue; the writer is dropped (its slot retired) by [`claim`] at the thread's
    /// first event after its recorder finished (under the next recorder, or with none
    /// installed) and by [`Owner::drop`] when the thread exits.
    pub(crate) writer: std::mem::ManuallyDrop<Option<Writer>>,
}

/// The next span counter of each slot, across recorders: a slot's counter is never reset (SPEC
/// §2), so a span id of a finished recorder is never that of a span open under the next one
/// (`span_end` of a stale id is then a mismatch, never the end of another span). Raised when a
/// writer retires, read when one claims: both cold.
pub(crate) static SPAN_COUNTERS: [AtomicU64; SLOTS] = [const { AtomicU64::new(1) }; SLOTS];

/// `Hot::gen` of a thread whose thread-locals are being destroyed: never claims again.
pub(crate) const DEAD: u64 = u64::MAX;

/// The thread's ThreadInfo settings, and the destructor that retires its slot at thread exit
/// (`Hot` has none). Registered by its first use: a claim, or `set_thread_info` before it.
pub(crate) struct Owner {
    pub(crate) name: Option<String>,
    pub(crate) kind: Option<ThreadKind>,
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
            if w.depth > 0 && w.core.gen == GEN.load(Ordering::Relaxed) {
                let now = w.clock.raw();
                w.end_spans_from(0, now);
            }
            // What a `TrackingAllocator` counted since its last sample (Relaxed: as above).
            if w.core.gen == GEN.load(Ordering::Relaxed) && enabled(TraceEventKind::COUNTER) {
                crate::write::alloc_state::flush_exiting(&mut w);
            }
            drop(w); // retires the slot
        }
    }
}

thread_local! {
    pub(crate) static HOT: std::cell::UnsafeCell<Hot> = const {
        std::cell::UnsafeCell::new(Hot {
            gen: 0,
            writer: std::mem::ManuallyDrop::new(None),
        })
    };
    pub(crate) static OWNER: RefCell<Owner> = const { RefCell::new(Owner { name: None, kind: None }) };
}

pub(crate) fn os_tid() -> i32 {
    crate::platform::os_tid()
}

/// Room for [`default_thread_name`]: `thread-`, an optional sign and the ten digits of an `i32`.
pub(crate) const DEFAULT_NAME_MAX: usize = 18;

/// `thread-{tid}`, the name a ThreadInfo carries for a thread with none, written into `buf`
/// by hand: `format!` would bring the formatting machinery's cold code into a thread's first
/// event, which measured 0.6–1.8 µs of its ~3 µs on a small VM.
pub(crate) fn default_thread_name(tid: i32, buf: &mut [u8; DEFAULT_NAME_MAX]) -> &str {
    pub(crate) const PREFIX: &[u8] = b"thread-";
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
pub(crate) fn claim(h: &mut Hot, gen: u64) {
    if h.gen == DEAD {
        return;
    }
    // A claim allocates (a ring, a clock, the old writer's retirement) while it holds `h`.
    let _busy = crate::write::alloc_state::RecorderBusy::enter();
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
        let stack = OwnStack::new(core.registry.span_stack(slot));
        let (names, name_epoch) = core.registry.names(slot);
        let short_entry_ticks = if kind_state(TraceEventKind::TRACING_ENTRY_SHORT) == KIND_ON {
            // The ring holds the duration in ticks, the file in ns: both must fit.
            core.clock
                .ticks_within_ns(u64::from(u32::MAX))
                .min(u64::from(u32::MAX))
        } else {
            0
        };
        let mut w = Writer {
            clock: core.clock.raw_clock().into(),
            max_record: core.max_record,
            core,
            slot,
            producer: std::mem::ManuallyDrop::new(parked.producer),
            span_id_base: (slot as u64) << 56,
            last_entry: (0, 0),
            short_entry_ticks,
            // Relaxed: see SPAN_COUNTERS.
            span_counter: parked
                .span_counter
                .max(SPAN_COUNTERS[slot as usize].load(Ordering::Relaxed)),
            last_raw: 0,
            stack,
            depth: 0,
            top_id: 0,
            static_checked: (std::ptr::null(), 0),
            static_id: 0,
            name_epoch,
            names,
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
pub(crate) fn count_no_slot() {
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
pub(crate) fn with_writer<R>(f: impl FnOnce(&mut Writer) -> R) -> Option<R> {
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

/// This thread's writer as it is, null when it has none, without bringing it up to the
/// installed recorder (no claim, nothing counted): for the end of a guard or of a `tracing`
/// span's entry, which writes only when that span is open in the writer's stack.
///
/// Then the writer is the one the span began under. A guard ends on its own thread (it is not
/// `Send`), and a thread's span ids never repeat: a later writer of the thread that takes the
/// same slot starts above every id of the earlier one (`claim` retires the old writer, raising
/// [`SPAN_COUNTERS`], before it claims), and one of another slot has another top byte. If the
/// span's recorder has finished since (and wrote the span as unclosed), the record goes into
/// that recorder's ring, which nothing reads any more; the thread's next write or begin takes
/// the writer up to the next recorder. The same rules as for [`current_writer`]'s pointer apply.
#[inline(always)]
pub(crate) fn writer_as_is() -> *mut Writer {
    // SAFETY: see `hot`.
    let h = unsafe { &mut *hot() };
    match h.writer.as_mut() {
        Some(w) => w,
        None => std::ptr::null_mut(),
    }
}

/// [`with_writer`] without the closure, for a span's begin: this thread's writer
/// for the installed recorder (claiming a slot first if needed), null when it has none (then
/// counted as `no_slot`, as `with_writer` does). A closure of a span's size, being neither
/// generic nor small, is compiled once in this crate and called out of line from a caller in
/// another one; straight-line code here inlines.
///
/// The caller may turn the pointer into a `&mut Writer` for as long as a `with_writer`
/// closure could run, under the same rules: no reentry, nothing else reaching `HOT` meanwhile.
#[inline(always)]
pub(crate) fn current_writer() -> *mut Writer {
    // SAFETY: see `hot`.
    let h = unsafe { &mut *hot() };
    let gen = refresh(h);
    match h.writer.as_mut() {
        Some(w) => w,
        None => {
            if gen != 0 {
                count_no_slot();
            }
            std::ptr::null_mut()
        }
    }
}

/// This thread's [`Hot`]. The caller may make a `&mut Hot` of it for the length of one call of
/// the recorder, as `with_writer` does: `HOT` has no destructor and is this thread's own, and
/// no other reference to it is live then.
#[inline(always)]
fn hot() -> *mut Hot {
    HOT.with(|h| h.get())
}

/// Brings this thread's hot state up to the installed recorder (claiming a slot if the thread
/// has none of it yet) and returns the recorder generation it is now at (0: none installed).
#[inline(always)]
pub(crate) fn refresh(h: &mut Hot) -> u64 {
    // Relaxed: only compared with this thread's cached generation; a mismatch takes the
    // slow path, which synchronises through ACTIVE's lock.
    let gen = GEN.load(Ordering::Relaxed);
    if h.gen != gen {
        claim(h, gen);
    }
    gen
}

#[inline(always)]
pub(crate) fn enabled(kind: TraceEventKind) -> bool {
    // Relaxed: a racy read of a configuration flag is fine; at worst one write around a
    // start/finish is taken or skipped, which `Recorder::finish` documents.
    kind_state(kind) == KIND_ON
}

#[inline(always)]
pub(crate) fn kind_state(kind: TraceEventKind) -> u8 {
    // Relaxed: as in `enabled`.
    KIND_STATE[kind.0 as usize].load(Ordering::Relaxed)
}

/// Whether a record of `kind` goes on now: `false` while the kind is off (no recorder, or
/// disabled), a filtered kind counted as such.
#[inline(always)]
pub(crate) fn admitted(kind: TraceEventKind) -> bool {
    let state = kind_state(kind);
    if state == KIND_FILTERED {
        count_filtered();
    }
    state == KIND_ON
}

#[cold]
#[inline(never)]
pub(crate) fn count_filtered() {
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
    pub(crate) fn ts(&mut self, at: Option<u64>) -> u64 {
        let t = match at {
            Some(t) => t,
            None => self.clock.raw(),
        };
        self.last_raw = t;
        t
    }

    #[inline(always)]
    pub(crate) fn put(&mut self, size: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        let ok = self.producer.write(size, fill);
        if self.producer.passed_half() {
            self.wake_flusher();
        }
        ok
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn wake_flusher(&self) {
        self.core.wake();
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn refuse(&self) {
        self.core
            .registry
            .slot(self.slot)
            .refused
            .fetch_add(1, Ordering::Relaxed);
    }
}

/// A write refused for its input (whatever the recorder): counted as refused against the
/// thread's slot when a recorder runs (a thread without a slot counts it as no-slot), then
/// handed back for the caller.
#[cold]
#[inline(never)]
pub(crate) fn refused(e: WriteError) -> WriteError {
    if !cfg!(feature = "compile-out") && GEN.load(Ordering::Relaxed) != 0 {
        with_writer(|w| w.refuse());
    }
    e
}

/// Writes a variable-size record of `size` bytes (checked by the caller against the u16 size
/// field), filled by `fill(record, slot, timestamp)`: the gate (nothing while disabled; a
/// filtered kind is counted), then the running recorder's page limit (a larger record is
/// refused and counted), then the thread's ring. `ts` is a caller timestamp in raw ticks,
/// `None` to read the clock. The one path of `write_record` and the `tracing` bridge.
pub(crate) fn put_variable(
    kind: TraceEventKind,
    size: usize,
    ts: Option<u64>,
    fill: impl FnOnce(&mut [u8], u8, i64),
) -> Result<(), WriteError> {
    if cfg!(feature = "compile-out") {
        return Ok(());
    }
    if !admitted(kind) {
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
        w.put(size, |d| fill(d, slot, t));
        Ok(())
    })
    .unwrap_or(Ok(()))
}

// The static names (SPEC §15): a slot's `NameTable` (`crate::write::names`) gives a name its
// id; the writer defines it in its own records first.
impl Writer {
    /// The id `name` has in this slot's records, defining it there first if it has none in
    /// this writer's records yet; 0 for a name to write inline (no room in the table, the
    /// definition not written, or a name no record can carry: the inline path refuses it).
    /// `at`: the time of the record that asks (raw ticks, `None`: now), the definition's.
    #[inline(always)]
    pub(crate) fn static_name_id(&mut self, name: &'static str, at: Option<u64>) -> u32 {
        if self.static_checked == (name.as_ptr(), name.len()) {
            return self.static_id;
        }
        self.static_lookup(name, at)
    }

    #[inline]
    fn static_lookup(&mut self, name: &'static str, at: Option<u64>) -> u32 {
        match self.names.find(name, self.name_epoch) {
            Some(id) => {
                self.static_checked = (name.as_ptr(), name.len());
                self.static_id = id;
                id
            }
            None => self.static_define(name, at),
        }
    }

    #[cold]
    #[inline(never)]
    fn static_define(&mut self, name: &'static str, at: Option<u64>) -> u32 {
        let size = records::name_definition_len(name);
        // A recorder that filters any of the kinds of static names writes them all inline.
        let kinds = [
            K::NAME_DEFINITION,
            K::NAMED_SPAN_ID,
            K::NAMED_INSTANT_ID,
            K::NAMED_PHASE_START_ID,
            K::NAMED_PHASE_END_ID,
            K::COUNTER_ID,
        ];
        if kinds.iter().any(|&k| kind_state(k) != KIND_ON)
            || size > self.max_record
            || records::has_nul(name.as_bytes())
        {
            return 0;
        }
        // A clone, in this cold path, so that the definition's write can borrow the writer.
        let names = self.names.clone();
        let t = self.ts(at) as i64;
        let slot = self.slot;
        let id = names.define(name, self.name_epoch, |id| {
            self.put(size, |d| {
                records::fill_name_definition(d, slot, t, id, name)
            })
        });
        match id {
            Some(id) => {
                self.static_checked = (name.as_ptr(), name.len());
                self.static_id = id;
                id
            }
            None => 0,
        }
    }
}

/// The allocation counters' samples go into the writer (see `crate::write::alloc_state`).
impl crate::write::alloc_state::SampleTarget for Writer {
    fn now(&mut self) -> u64 {
        self.clock.raw()
    }

    fn to_ns(&self, raw: u64) -> u64 {
        self.core.clock.to_ns(raw)
    }

    fn recorder_gen(&self) -> u64 {
        self.core.gen
    }

    /// Its id form once the slot has the name's definition, else inline (as `counter` does).
    fn put_counter(&mut self, name: &'static str, value: u64, t: u64) {
        let value = records::CounterValue::from_i64(i64::try_from(value).unwrap_or(i64::MAX));
        self.last_raw = t;
        let slot = self.slot;
        let id = self.static_name_id(name, Some(t));
        if id != 0 {
            self.put(records::COUNTER_ID_SIZE, |d| {
                let _ = records::write_counter_id(d, slot, t as i64, value, id);
            });
        } else {
            self.put(records::counter_len(name), |d| {
                let _ = records::write_counter(d, slot, t as i64, value, name);
            });
        }
    }
}

// The slot's interned value strings (`crate::write::strings`): an id for a string that
// repeats, its definition written in this writer's records first.
impl Writer {
    /// The id string `s` of a record's values has in this slot (its definition written
    /// first when it needs one), or 0 to write it inline.
    #[inline]
    pub(crate) fn str_id(&mut self, s: &str) -> u32 {
        match self.names.strs().find(s, self.name_epoch) {
            crate::write::strings::Found::Id(id) => id,
            crate::write::strings::Found::Inline => 0,
            found => self.str_define(s, found),
        }
    }

    /// Writes the definition of `s` ([`crate::write::strings::Found::Stale`] or [`crate::write::strings::Found::New`]); its id, or 0 when
    /// it was not written (a full ring, a NUL, too large): inline this time.
    #[cold]
    #[inline(never)]
    fn str_define(&mut self, s: &str, found: crate::write::strings::Found) -> u32 {
        let size = crate::codec::records::name_definition_len(s);
        if size > self.max_record || crate::codec::records::has_nul(s.as_bytes()) {
            return 0;
        }
        // A clone, in this cold path, so that the definition's write can borrow the writer.
        let names = self.names.clone();
        let id = match found {
            crate::write::strings::Found::Stale(_, id) => id,
            _ => names.peek_id(),
        };
        let (t, slot, epoch) = (self.ts(None) as i64, self.slot, self.name_epoch);
        if !self.put(size, |d| {
            crate::codec::records::fill_name_definition(d, slot, t, id, s)
        }) {
            return 0;
        }
        match found {
            crate::write::strings::Found::Stale(i, _) => names.strs().restated(i, epoch),
            crate::write::strings::Found::New(i, h) => {
                names.take_id();
                names.strs().hold(i, h, s, id, epoch);
            }
            _ => {}
        }
        id
    }
}
