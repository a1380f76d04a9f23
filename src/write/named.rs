//! Instants and phases that carry their names (NamedInstant, NamedPhaseStart, NamedPhaseEnd):
//! the record holds the name, so every reader shows it without a table to join. The name is
//! checked (no NUL, fits a record) and copied into the ring; a refused one is counted, never
//! truncated. A `&'static str` name ([`named_instant_static`], [`phase`], `instant!` of a
//! literal) is written once per slot as a definition, and its records carry its id (SPEC §15).

use crate::codec::{self, records, TraceEventKind as K};
use crate::write::writer::*;
use crate::write::WriteError;

/// A named record of `size` bytes: refused (and counted while a recorder runs) for a NUL in
/// `name` or a size over 65534, whether or not a recorder runs; then [`put_variable`] (the
/// gate, the page limit, the ring).
#[inline]
pub(crate) fn put_named(
    kind: K,
    size: usize,
    name: &str,
    at: Option<u64>,
    fill: impl FnOnce(&mut [u8], u8, i64),
) -> Result<(), WriteError> {
    if cfg!(feature = "compile-out") {
        return Ok(());
    }
    if records::has_nul(name.as_bytes()) {
        return Err(refused(WriteError::Invalid(format!(
            "a {kind} name contains a NUL byte"
        ))));
    }
    if size > codec::CommonHeader::MAX_RECORD {
        return Err(refused(WriteError::TooLarge {
            size,
            max: codec::CommonHeader::MAX_RECORD,
        }));
    }
    put_variable(kind, size, at, fill)
}

/// A record of `kind` named by the static `name`: its id form (`id_size` bytes, filled by
/// `by_id(record, slot, time, id)`) when the slot has an id for the name, else `inline()` (the
/// inline kind's path, which also counts what is filtered or refused).
#[inline(always)]
pub(crate) fn put_static(
    kind: K,
    name: &'static str,
    at: Option<u64>,
    id_size: usize,
    by_id: impl FnOnce(&mut [u8], u8, i64, u32),
    inline: impl FnOnce() -> Result<(), WriteError>,
) -> Result<(), WriteError> {
    if cfg!(feature = "compile-out") {
        return Ok(());
    }
    if kind_state(kind) != crate::write::gate::KIND_ON {
        return inline();
    }
    let w = current_writer();
    if w.is_null() {
        return Ok(());
    }
    // SAFETY: the thread's own writer, used only within this call, which does not reenter the
    // recorder (see `current_writer`); no reference to it is live across `inline`.
    let id = unsafe { (*w).static_name_id(name, at) };
    if id == 0 {
        return inline();
    }
    // SAFETY: as above.
    let w = unsafe { &mut *w };
    let t = w.ts(at) as i64;
    let slot = w.slot;
    w.put(id_size, |d| by_id(d, slot, t, id));
    Ok(())
}

/// [`named_instant`] for a name that lives as long as the program (a literal, what
/// [`instant!`](crate::instant!) of a literal calls): the name is written once per slot (a
/// NameDefinition) and each instant carries its id (a NamedInstantId, 20 bytes). Readers show
/// it as a NamedInstant; checks and counts are those of [`named_instant`].
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::{sink::NullSink, RecorderBuilder};
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// for i in 0..3 {
///     typhon_recorder::named_instant_static("collision", i);
/// }
/// // ThreadInfo, the name's definition and the 3 instants.
/// assert_eq!(rec.finish().unwrap().user_written(), 5);
/// ```
#[inline]
pub fn named_instant_static(name: &'static str, payload: i32) {
    let _ = put_static(
        K::NAMED_INSTANT,
        name,
        None,
        records::NAMED_INSTANT_ID_SIZE,
        |d, slot, t, id| {
            let _ = records::write_named_instant_id(d, slot, t, payload, id);
        },
        || try_named_instant(name, payload, None),
    );
}

/// [`named_phase_start`] for a static name (see [`named_instant_static`]): a
/// NamedPhaseStartId, shown by readers as a NamedPhaseStart.
///
/// ```
/// typhon_recorder::named_phase_start_static(1, "physics");
/// typhon_recorder::named_phase_end_static(1, "physics");
/// ```
#[inline]
pub fn named_phase_start_static(phase: u8, name: &'static str) {
    let _ = named_phase_static(true, phase, name);
}

/// [`named_phase_end`] for a static name (see [`named_phase_start_static`]).
///
/// ```
/// typhon_recorder::named_phase_end_static(1, "physics");
/// ```
#[inline]
pub fn named_phase_end_static(phase: u8, name: &'static str) {
    let _ = named_phase_static(false, phase, name);
}

#[inline(always)]
fn named_phase_static(start: bool, phase: u8, name: &'static str) -> Result<(), WriteError> {
    let kind = if start {
        K::NAMED_PHASE_START
    } else {
        K::NAMED_PHASE_END
    };
    put_static(
        kind,
        name,
        None,
        records::NAMED_PHASE_ID_SIZE,
        |d, slot, t, id| {
            let _ = records::write_named_phase_id(d, slot, t, start, phase, id);
        },
        || named_phase_opt(None, start, phase, name),
    )
}

/// Records a NamedInstant: a point in time called `name`, with `payload`. Use it where
/// [`instant`](fn@crate::instant)'s numeric id would need a table to read; `report`, `stats`, the
/// exports and trace-cmd show the name. A name with a NUL byte, or too long for a page, is not
/// recorded and is counted as refused.
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::{sink::NullSink, RecorderBuilder};
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// typhon_recorder::named_instant("collision", 3);
/// typhon_recorder::named_instant("bad\0name", 0); // refused, counted
/// let stats = rec.finish().unwrap();
/// assert_eq!(stats.user_written(), 2); // ThreadInfo + the instant
/// assert_eq!(stats.slot(1).unwrap().refused, 1);
/// ```
#[inline]
pub fn named_instant(name: &str, payload: i32) {
    let _ = try_named_instant(name, payload, None);
}

/// [`named_instant`] at a caller-supplied time in raw ticks.
///
/// ```
/// typhon_recorder::named_instant_at(100, "collision", 3);
/// ```
#[inline]
pub fn named_instant_at(ts: u64, name: &str, payload: i32) {
    let _ = try_named_instant(name, payload, Some(ts));
}

/// [`named_instant`] (now, or at `at` in raw ticks) that says why it was refused.
///
/// # Errors
/// [`WriteError::Invalid`] for a name with a NUL byte and [`WriteError::TooLarge`] for a record
/// over 65534 bytes, whether or not a recorder runs; [`WriteError::TooLarge`] also for one
/// larger than the running recorder's pages hold. Each is counted as refused while a recorder
/// runs.
///
/// ```
/// use typhon_recorder::{try_named_instant, WriteError};
/// try_named_instant("hit", 1, None).unwrap();
/// assert!(matches!(try_named_instant("a\0b", 1, None), Err(WriteError::Invalid(_))));
/// ```
pub fn try_named_instant(name: &str, payload: i32, at: Option<u64>) -> Result<(), WriteError> {
    let size = records::named_instant_len(name);
    put_named(K::NAMED_INSTANT, size, name, at, |d, slot, t| {
        let r = records::write_named_instant(d, slot, t, payload, name);
        debug_assert!(r.is_ok(), "a checked named instant failed to encode: {r:?}");
    })
}

/// Records a NamedPhaseStart: phase `phase` starts, called `name`. It pairs with the next
/// [`named_phase_end`] (or [`phase_end`](crate::phase_end)) of the same phase on the thread, as
/// [`phase_start`](crate::phase_start) does; `stats` and the exports show the pair under the
/// name. Refused names are counted, as for [`named_instant`].
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::{sink::NullSink, RecorderBuilder};
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// typhon_recorder::named_phase_start(1, "physics");
/// typhon_recorder::named_phase_end(1, "physics");
/// assert_eq!(rec.finish().unwrap().user_written(), 3);
/// ```
#[inline]
pub fn named_phase_start(phase: u8, name: &str) {
    let _ = named_phase_opt(None, true, phase, name);
}

/// Records a NamedPhaseEnd: phase `phase`, called `name`, ends (see [`named_phase_start`]).
///
/// ```
/// typhon_recorder::named_phase_end(1, "physics");
/// ```
#[inline]
pub fn named_phase_end(phase: u8, name: &str) {
    let _ = named_phase_opt(None, false, phase, name);
}

/// [`named_phase_start`] at a caller-supplied time in raw ticks.
///
/// ```
/// typhon_recorder::named_phase_start_at(100, 1, "physics");
/// ```
#[inline]
pub fn named_phase_start_at(ts: u64, phase: u8, name: &str) {
    let _ = named_phase_opt(Some(ts), true, phase, name);
}

/// [`named_phase_end`] at a caller-supplied time in raw ticks.
///
/// ```
/// typhon_recorder::named_phase_end_at(200, 1, "physics");
/// ```
#[inline]
pub fn named_phase_end_at(ts: u64, phase: u8, name: &str) {
    let _ = named_phase_opt(Some(ts), false, phase, name);
}

/// [`named_phase_start`] (now, or at `at` in raw ticks) that says why it was refused.
///
/// # Errors
/// As [`try_named_instant`].
///
/// ```
/// typhon_recorder::try_named_phase_start(1, "physics", None).unwrap();
/// assert!(typhon_recorder::try_named_phase_start(1, "a\0b", None).is_err());
/// ```
pub fn try_named_phase_start(phase: u8, name: &str, at: Option<u64>) -> Result<(), WriteError> {
    named_phase_opt(at, true, phase, name)
}

/// [`named_phase_end`] (now, or at `at` in raw ticks) that says why it was refused.
///
/// # Errors
/// As [`try_named_instant`].
///
/// ```
/// typhon_recorder::try_named_phase_end(1, "physics", Some(5)).unwrap();
/// ```
pub fn try_named_phase_end(phase: u8, name: &str, at: Option<u64>) -> Result<(), WriteError> {
    named_phase_opt(at, false, phase, name)
}

fn named_phase_opt(at: Option<u64>, start: bool, phase: u8, name: &str) -> Result<(), WriteError> {
    let kind = if start {
        K::NAMED_PHASE_START
    } else {
        K::NAMED_PHASE_END
    };
    let size = records::named_phase_len(name);
    put_named(kind, size, name, at, |d, slot, t| {
        let r = records::write_named_phase(d, slot, t, start, phase, name);
        debug_assert!(r.is_ok(), "a checked named phase failed to encode: {r:?}");
    })
}

/// An open named phase: [`phase`] started it, dropping the guard ends it (a NamedPhaseEnd
/// with the same phase and name). Not `Send`: a phase starts and ends on one thread.
///
/// ```
/// let p = typhon_recorder::phase(1, "physics");
/// drop(p); // NamedPhaseEnd 1 "physics"
/// ```
#[must_use = "the phase ends when this guard is dropped"]
#[derive(Debug)]
pub struct PhaseGuard {
    phase: u8,
    name: &'static str,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for PhaseGuard {
    #[inline]
    fn drop(&mut self) {
        named_phase_end_static(self.phase, self.name);
    }
}

/// Starts phase `phase` called `name` (a NamedPhaseStart) and returns the guard that ends it:
/// the name is written once in the code, and the end cannot be forgotten. The name is static:
/// written once per slot, its records carry its id ([`named_phase_start_static`]).
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::{sink::NullSink, RecorderBuilder};
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// {
///     let _physics = typhon_recorder::phase(1, "physics");
/// }
/// // ThreadInfo, the name's definition, start, end
/// assert_eq!(rec.finish().unwrap().user_written(), 4);
/// ```
#[inline]
pub fn phase(phase: u8, name: &'static str) -> PhaseGuard {
    named_phase_start_static(phase, name);
    PhaseGuard {
        phase,
        name,
        _not_send: std::marker::PhantomData,
    }
}
