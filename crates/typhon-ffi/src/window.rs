//! The configuration that can grow ([`TyphonConfigEx`], [`typhon_start_ex`]) and window mode's
//! calls: a snapshot on demand ([`typhon_snapshot`], blocking) or requested
//! ([`typhon_request_snapshot`], not blocking).
//!
//! `TyphonConfig` is a fixed struct compiled into hosts: a field added to it would make an
//! older host's struct too short for a newer library to read. The structs here carry their own
//! size as their first field, the rule of Linux's `clone3`/`openat2` (`copy_struct_from_user`):
//! a caller built against an older header passes a smaller size and the fields it does not
//! reach take their defaults; a caller built against a newer header passes a larger one, which
//! works as long as the bytes this library does not know are zero (the newer fields left at
//! their defaults), and is refused otherwise, since this library cannot honour them.

use crate::error::*;
use crate::guard::{guarded, try_code};
use crate::lifecycle::{basic, install, with_max_page_age, RECORDER, WINDOWED};
use std::ffi::{c_char, CStr};
use std::mem::{offset_of, size_of};
use std::sync::atomic::Ordering;
use std::time::Duration;
use typhon_recorder::{RecorderBuilder, Trigger};

/// The smallest `TyphonConfigEx.size` accepted: the `size` field and the settings
/// `TyphonConfig` has (through `reserved`). Every later field is optional by size.
pub const TYPHON_CONFIG_EX_MIN_SIZE: usize = 48;

/// The smallest `TyphonSnapshot.size` accepted: `size`, `from_ns` and `to_ns`.
pub const TYPHON_SNAPSHOT_MIN_SIZE: usize = 24;

/// A size above this is refused outright: no version of a struct will be this large, so it is
/// an uninitialised `size` field, and reading that far could fault.
const MAX_STRUCT_SIZE: usize = 4096;

/// Configuration for `typhon_start_ex`: everything `TyphonConfig` has, window mode, rotation,
/// snapshot triggers and the page age, in a struct that can grow without breaking the ABI.
///
/// Versioning rule: set `size` to `sizeof(TyphonConfigEx)` as your header declares it (zero
/// the struct first, e.g. `TyphonConfigEx c = {.size = sizeof c, ...}`). Fields are only ever
/// added at the end, never removed, reordered or retyped, and 0 (or NULL) is always the
/// default. The library reads the fields that lie wholly within `size` and gives the others
/// their defaults, so a host built against an older header keeps working. A `size` larger than
/// the library's struct (a newer header) works when every byte past the library's struct is 0,
/// and is refused with `TYPHON_ERR_STRUCT_SIZE` otherwise; so is a `size` under
/// `TYPHON_CONFIG_EX_MIN_SIZE`, over 4096, or ending inside a field.
///
/// With `window_ns` or `window_bytes` set the recorder keeps only the newest records, in
/// memory (SPEC §16), `output_path` must be NULL, and `typhon_snapshot`,
/// `typhon_request_snapshot` and the triggers write them to `snapshot_dir`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TyphonConfigEx {
    /// `sizeof(TyphonConfigEx)` as the caller's header declares it (see the versioning rule).
    pub size: usize,
    /// The trace.dat to write (NUL-terminated UTF-8), as `TyphonConfig.output_path`; required
    /// without a window, NULL with one. With rotation, the segments' base name.
    pub output_path: *const c_char,
    /// As `TyphonConfig.page_size` (0 = 4096).
    pub page_size: usize,
    /// As `TyphonConfig.ring_bytes` (0 = 2 MiB).
    pub ring_bytes: usize,
    /// As `TyphonConfig.flush_interval_us` (0 = 10 000).
    pub flush_interval_us: u64,
    /// As `TyphonConfig.zstd_level` (0 = uncompressed v6; 1..=19 = zstd v7, snapshots too).
    pub zstd_level: u32,
    /// 0 (room for flags; anything else is `TYPHON_ERR_CONFIG`).
    pub reserved: u32,
    /// How old a partly filled page may get before it is flushed, in microseconds (0 = what
    /// `typhon_set_max_page_age_us` set, else 1 s).
    pub max_page_age_us: u64,
    /// Window mode: keep the newest `window_ns` nanoseconds of records in memory (0 = no limit
    /// by time; with `window_bytes` 0 too, no window).
    pub window_ns: u64,
    /// Window mode: hold at most this many bytes of pages; it wins over `window_ns` (0 = no
    /// byte budget of its own: 64 MiB when `window_ns` is set).
    pub window_bytes: u64,
    /// Window mode: the directory snapshots go to (NUL-terminated UTF-8; NULL = the working
    /// directory at start). Files are `<program>-<UTC time>-<n>.dat`.
    pub snapshot_dir: *const c_char,
    /// Rotating segments: cut `output_path` into `OUT.000001`, `OUT.000002`, … of this many
    /// bytes of pages each (0 = one file).
    pub rotate_segment_bytes: u64,
    /// Rotating segments: how many complete segments to keep (at least 1 with rotation).
    pub rotate_keep: u64,
    /// Trigger: a snapshot when a tick (`typhon_tick_start` to `typhon_tick_end` on one
    /// thread) lasts longer than this many ns (0 = no tick trigger).
    pub tick_over_ns: u64,
    /// Trigger: a snapshot when a span of this name (NUL-terminated UTF-8) lasts longer than
    /// `span_over_ns` (NULL = no span trigger).
    pub span_over_name: *const c_char,
    /// The span trigger's duration bound, ns.
    pub span_over_ns: u64,
    /// Both triggers: keep recording this many ns after the trigger before the snapshot is cut.
    pub trigger_keep_after_ns: u64,
    /// Both triggers: at most one snapshot per trigger in this many ns (0 = no spacing).
    pub trigger_at_most_every_ns: u64,
}

/// What `typhon_snapshot` reports about the file it wrote; size-prefixed like
/// `TyphonConfigEx`: set `size` to `sizeof(TyphonSnapshot)`, and the library fills the fields
/// that lie wholly within it (at least `TYPHON_SNAPSHOT_MIN_SIZE`; over 4096 or ending inside
/// a field is `TYPHON_ERR_STRUCT_SIZE`), leaving the bytes past its own struct alone.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TyphonSnapshot {
    /// `sizeof(TyphonSnapshot)` as the caller's header declares it; not written.
    pub size: usize,
    /// The interval's start (exclusive), CLOCK_MONOTONIC ns: every slot in the file covers
    /// `(from_ns, to_ns]`.
    pub from_ns: u64,
    /// The cut (inclusive), CLOCK_MONOTONIC ns.
    pub to_ns: u64,
    /// Records in the file, all slots, restatements and open spans included.
    pub records: u64,
    /// Records dropped (rings full) inside the interval.
    pub missed: u64,
    /// Spans open at the cut, written ending at it.
    pub open_spans: u64,
    /// Records the snapshot restates (a ThreadInfo per slot, the session header, definitions).
    pub restated: u64,
    /// Records evicted from the window before the cut (the recording's total so far).
    pub evicted_records: u64,
    /// The length of the file's path in bytes, without the NUL.
    pub path_len: u64,
}

/// The field ends of a struct's versions: a `size` must be one of them (or past the last).
fn check_size(what: &str, size: usize, min: usize, ours: usize, ends: &[usize]) -> Result<(), i32> {
    let refuse = |why: &str| {
        Err(fail(
            TYPHON_ERR_STRUCT_SIZE,
            format_args!(
                "{what}->size {size}: {why} (this library's {what} is {ours} bytes, the \
                 smallest accepted {min})"
            ),
        ))
    };
    if size < min {
        return refuse("smaller than the first version of the struct");
    }
    if size > MAX_STRUCT_SIZE {
        return refuse("over 4096 bytes: not a size of any version (uninitialised?)");
    }
    if size < ours && !ends.contains(&size) {
        return refuse("ends inside a field");
    }
    Ok(())
}

/// The end offsets of `TyphonConfigEx`'s fields from `TYPHON_CONFIG_EX_MIN_SIZE` on.
fn config_ends() -> [usize; 12] {
    macro_rules! end {
        ($f:ident, $t:ty) => {
            offset_of!(TyphonConfigEx, $f) + size_of::<$t>()
        };
    }
    [
        end!(reserved, u32),
        end!(max_page_age_us, u64),
        end!(window_ns, u64),
        end!(window_bytes, u64),
        end!(snapshot_dir, *const c_char),
        end!(rotate_segment_bytes, u64),
        end!(rotate_keep, u64),
        end!(tick_over_ns, u64),
        end!(span_over_name, *const c_char),
        end!(span_over_ns, u64),
        end!(trigger_keep_after_ns, u64),
        end!(trigger_at_most_every_ns, u64),
    ]
}

/// Reads the caller's config: its `size` first, then the bytes it covers over a zeroed struct
/// (the defaults), after checking that any bytes past ours are zero.
///
/// # Safety
/// `config` must be non-null and point to `config->size` readable bytes.
unsafe fn read_config(config: *const TyphonConfigEx) -> Result<TyphonConfigEx, i32> {
    // SAFETY: non-null; every version starts with `size`, so the first usize is readable.
    let size = unsafe { config.cast::<usize>().read_unaligned() };
    let ours = size_of::<TyphonConfigEx>();
    check_size(
        "config",
        size,
        TYPHON_CONFIG_EX_MIN_SIZE,
        ours,
        &config_ends(),
    )?;
    if size > ours {
        // SAFETY: the caller guarantees `size` readable bytes at `config`; `ours < size`.
        let extra =
            unsafe { std::slice::from_raw_parts(config.cast::<u8>().add(ours), size - ours) };
        if let Some(i) = extra.iter().position(|&b| b != 0) {
            return Err(fail(
                TYPHON_ERR_STRUCT_SIZE,
                format_args!(
                    "config->size {size}: byte {} is not 0, past the {ours} bytes of this \
                     library's TyphonConfigEx (a setting of a newer header this library does \
                     not know)",
                    ours + i
                ),
            ));
        }
    }
    let mut cfg = std::mem::MaybeUninit::<TyphonConfigEx>::zeroed();
    // SAFETY: `min(size, ours)` bytes are readable at `config` (the caller's guarantee) and
    // writable in `cfg`; the two do not overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(
            config.cast::<u8>(),
            cfg.as_mut_ptr().cast::<u8>(),
            size.min(ours),
        )
    };
    // SAFETY: every field is an integer or a raw pointer, for which all-zero bytes and any bytes
    // the caller wrote are valid values.
    Ok(unsafe { cfg.assume_init() })
}

/// A NUL-terminated UTF-8 string field, or None for NULL.
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string readable for the call.
unsafe fn c_str<'a>(field: &str, p: *const c_char) -> Result<Option<&'a str>, i32> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null; the caller guarantees a NUL-terminated string readable for the call.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map(Some).map_err(|e| {
        fail(
            TYPHON_ERR_UTF8,
            format_args!(
                "config->{field} {:?} is not UTF-8: {e}",
                s.to_string_lossy()
            ),
        )
    })
}

/// Starts the process-wide recorder, as `typhon_start`, from a size-prefixed
/// [`TyphonConfigEx`]: a plain recording, rotating segments, or window mode with its snapshot
/// directory and triggers.
///
/// Returns [`TYPHON_ERR_NULL`] (config NULL, or `output_path` NULL without a window),
/// [`TYPHON_ERR_STRUCT_SIZE`] (see the versioning rule), [`TYPHON_ERR_UTF8`],
/// [`TYPHON_ERR_CONFIG`] (a value out of range, `output_path` with a window, a trigger setting
/// without a trigger), [`TYPHON_ERR_ALREADY_STARTED`] or [`TYPHON_ERR_IO`].
///
/// # Safety
/// `config` must be NULL or point to `config->size` readable bytes whose string fields are
/// NULL or NUL-terminated strings readable for the duration of the call.
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_ffi::*;
/// let dir = std::env::temp_dir().join(format!("typhon-ffi-ex-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let d = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
/// let mut cfg: TyphonConfigEx = unsafe { std::mem::zeroed() };
/// cfg.size = std::mem::size_of::<TyphonConfigEx>();
/// cfg.window_ns = 10_000_000_000;
/// cfg.snapshot_dir = d.as_ptr();
/// let mut bad = cfg;
/// bad.size = 8;
/// unsafe {
///     assert_eq!(typhon_start_ex(&bad), TYPHON_ERR_STRUCT_SIZE);
///     assert_eq!(typhon_start_ex(&cfg), TYPHON_OK);
///     assert_eq!(typhon_instant(1, 2), TYPHON_OK);
///     let mut path = [0u8; 4096];
///     let mut info = TyphonSnapshot { size: std::mem::size_of::<TyphonSnapshot>(), ..Default::default() };
///     assert_eq!(typhon_snapshot(path.as_mut_ptr().cast(), path.len(), &mut info), TYPHON_OK);
///     assert!(info.from_ns < info.to_ns && info.records > 0);
///     assert_eq!(typhon_finish(std::ptr::null_mut()), TYPHON_OK);
/// }
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_start_ex(config: *const TyphonConfigEx) -> i32 {
    guarded("typhon_start_ex", || {
        if config.is_null() {
            return fail(TYPHON_ERR_NULL, "config is NULL");
        }
        // SAFETY: non-null; the caller guarantees `config->size` readable bytes.
        let cfg = try_code!(unsafe { read_config(config) });
        if cfg.reserved != 0 {
            return fail(
                TYPHON_ERR_CONFIG,
                format_args!("config->reserved is {}, not 0", cfg.reserved),
            );
        }
        let windowed = cfg.window_ns != 0 || cfg.window_bytes != 0;
        // SAFETY (the three): the caller guarantees NULL or NUL-terminated strings.
        let output = try_code!(unsafe { c_str("output_path", cfg.output_path) });
        let dir = try_code!(unsafe { c_str("snapshot_dir", cfg.snapshot_dir) });
        let span = try_code!(unsafe { c_str("span_over_name", cfg.span_over_name) });
        let mut b = RecorderBuilder::new();
        match output {
            Some(p) => b = b.output(p),
            None if !windowed => {
                return fail(
                    TYPHON_ERR_NULL,
                    "config->output_path is NULL (required without a window)",
                )
            }
            None => {}
        }
        b = basic(
            b,
            cfg.page_size,
            cfg.ring_bytes,
            cfg.flush_interval_us,
            cfg.zstd_level,
        );
        b = with_max_page_age(b, cfg.max_page_age_us);
        if cfg.window_ns != 0 {
            b = b.window(Duration::from_nanos(cfg.window_ns));
        }
        if cfg.window_bytes != 0 {
            b = b.window_bytes(cfg.window_bytes);
        }
        if let Some(d) = dir {
            b = b.snapshot_dir(d);
        }
        if cfg.rotate_segment_bytes != 0 || cfg.rotate_keep != 0 {
            let keep = usize::try_from(cfg.rotate_keep).unwrap_or(usize::MAX);
            b = b.rotate(cfg.rotate_segment_bytes, keep);
        }
        let timing = |t: Trigger| {
            t.keep_after(Duration::from_nanos(cfg.trigger_keep_after_ns))
                .at_most_every(Duration::from_nanos(cfg.trigger_at_most_every_ns))
        };
        let mut triggers = 0;
        if cfg.tick_over_ns != 0 {
            b = b.snapshot_when(timing(Trigger::tick_over(Duration::from_nanos(
                cfg.tick_over_ns,
            ))));
            triggers += 1;
        }
        if let Some(name) = span {
            b = b.snapshot_when(timing(Trigger::span_over(
                name,
                Duration::from_nanos(cfg.span_over_ns),
            )));
            triggers += 1;
        } else if cfg.span_over_ns != 0 {
            return fail(
                TYPHON_ERR_CONFIG,
                "config->span_over_ns is set but span_over_name is NULL",
            );
        }
        if triggers == 0 && (cfg.trigger_keep_after_ns != 0 || cfg.trigger_at_most_every_ns != 0) {
            return fail(
                TYPHON_ERR_CONFIG,
                "config->trigger_keep_after_ns / trigger_at_most_every_ns are set without a \
                 trigger (tick_over_ns or span_over_name)",
            );
        }
        install(b, windowed)
    })
}

/// The end offsets of `TyphonSnapshot`'s fields from `TYPHON_SNAPSHOT_MIN_SIZE` on.
fn snapshot_ends() -> [usize; 7] {
    let end = |o: usize| o + size_of::<u64>();
    [
        end(offset_of!(TyphonSnapshot, to_ns)),
        end(offset_of!(TyphonSnapshot, records)),
        end(offset_of!(TyphonSnapshot, missed)),
        end(offset_of!(TyphonSnapshot, open_spans)),
        end(offset_of!(TyphonSnapshot, restated)),
        end(offset_of!(TyphonSnapshot, evicted_records)),
        end(offset_of!(TyphonSnapshot, path_len)),
    ]
}

/// Writes a snapshot of the window (SPEC §16) and returns once the file is complete (waiting
/// first for a snapshot already in flight): its path, NUL-terminated, into `path_out`
/// (`path_cap` bytes), and what it holds into `*info`. Either may be NULL (`path_out` only with
/// `path_cap` 0). It takes about the time of writing the window out (SPEC §16); the writers are
/// not held up meanwhile.
///
/// Returns [`TYPHON_ERR_NOT_STARTED`], [`TYPHON_ERR_NOT_WINDOWED`] (a recorder without a
/// window), [`TYPHON_ERR_STRUCT_SIZE`] (`info->size`; checked before anything is written),
/// [`TYPHON_ERR_NULL`], [`TYPHON_ERR_IO`] (the file could not be written; the window goes on)
/// or [`TYPHON_ERR_BUFFER`]: the snapshot was written but its path does not fit, and then
/// `*info` is filled, `path_out` holds an empty string and the error message the path.
///
/// # Safety
/// `path_out` must be NULL or point to `path_cap` writable bytes; `info` must be NULL or point
/// to `info->size` writable bytes, aligned for a `TyphonSnapshot`.
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_ffi::*;
/// let mut info = TyphonSnapshot { size: std::mem::size_of::<TyphonSnapshot>(), ..Default::default() };
/// assert_eq!(unsafe { typhon_snapshot(std::ptr::null_mut(), 0, &mut info) }, TYPHON_ERR_NOT_STARTED);
/// info.size = 4;
/// assert_eq!(unsafe { typhon_snapshot(std::ptr::null_mut(), 0, &mut info) }, TYPHON_ERR_STRUCT_SIZE);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_snapshot(
    path_out: *mut c_char,
    path_cap: usize,
    info: *mut TyphonSnapshot,
) -> i32 {
    guarded("typhon_snapshot", || {
        let ours = size_of::<TyphonSnapshot>();
        let info_size = if info.is_null() {
            0
        } else {
            // SAFETY: non-null and aligned: the caller guarantees `info->size` writable (so
            // readable) bytes, of which `size` is the first field of every version.
            let size = unsafe { (*info).size };
            try_code!(check_size(
                "info",
                size,
                TYPHON_SNAPSHOT_MIN_SIZE,
                ours,
                &snapshot_ends()
            ));
            size.min(ours)
        };
        if path_out.is_null() && path_cap != 0 {
            return fail(
                TYPHON_ERR_NULL,
                format_args!("path_out is NULL with path_cap {path_cap}"),
            );
        }
        let r = {
            let slot = RECORDER.lock();
            match slot.as_ref() {
                None => return TYPHON_ERR_NOT_STARTED,
                // Relaxed: WINDOWED is written under this lock.
                Some(_) if !WINDOWED.load(Ordering::Relaxed) => {
                    return fail(
                        TYPHON_ERR_NOT_WINDOWED,
                        "the recorder keeps no window (start it with typhon_start_ex and \
                         window_ns or window_bytes)",
                    )
                }
                // Cloned out of the lock: the snapshot's wait holds up no other call.
                Some(r) => r.clone(),
            }
        };
        let s = match r.snapshot() {
            Ok(s) => s,
            Err(e) => return recorder_error(&e),
        };
        drop(r);
        use std::os::unix::ffi::OsStrExt;
        let path = s.path.as_os_str().as_bytes();
        if info_size != 0 {
            let full = TyphonSnapshot {
                size: 0,
                from_ns: s.from_ns,
                to_ns: s.to_ns,
                records: s.records,
                missed: s.missed,
                open_spans: s.open_spans,
                restated: s.restated,
                evicted_records: s.evicted_records,
                path_len: path.len() as u64,
            };
            let at = size_of::<usize>();
            // SAFETY: the caller guarantees `info->size` writable bytes at `info`, and
            // `info_size` is at most that; bytes `at..info_size` of `full` are initialised
            // fields (no padding: every field is 8 bytes), and the two do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (&full as *const TyphonSnapshot).cast::<u8>().add(at),
                    info.cast::<u8>().add(at),
                    info_size - at,
                )
            };
        }
        if path_cap == 0 {
            return TYPHON_OK;
        }
        if path.len() >= path_cap {
            // SAFETY: path_out is non-null with at least one writable byte.
            unsafe { path_out.write(0) };
            return fail(
                TYPHON_ERR_BUFFER,
                format_args!(
                    "the snapshot {} was written, but its path ({} bytes and the NUL) does not \
                     fit in path_cap {path_cap}",
                    s.path.display(),
                    path.len()
                ),
            );
        }
        // SAFETY: path_out has `path_cap > path.len()` writable bytes; `path` is ours, no
        // overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(path.as_ptr(), path_out.cast::<u8>(), path.len());
            path_out.add(path.len()).write(0);
        }
        TYPHON_OK
    })
}

/// Asks the running recorder for a snapshot of its window and returns at once, from any
/// thread; the flusher writes it to the snapshot directory, with `reason` (NUL-terminated
/// UTF-8, cut to 256 characters; NULL = `"typhon_request_snapshot"`) in its metadata. At most
/// one snapshot is in flight.
///
/// Returns [`TYPHON_OK`] (placed), [`TYPHON_ERR_BUSY`] (one is already pending or being
/// written: this one was not placed), [`TYPHON_ERR_NOT_STARTED`], [`TYPHON_ERR_NOT_WINDOWED`]
/// or [`TYPHON_ERR_UTF8`].
///
/// # Safety
/// `reason` must be NULL or a NUL-terminated string readable for the duration of the call.
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_ffi::*;
/// assert_eq!(unsafe { typhon_request_snapshot(c"slow frame".as_ptr()) }, TYPHON_ERR_NOT_STARTED);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_request_snapshot(reason: *const c_char) -> i32 {
    guarded("typhon_request_snapshot", || {
        let reason = if reason.is_null() {
            "typhon_request_snapshot"
        } else {
            // SAFETY: non-null; the caller guarantees a NUL-terminated string.
            let r = unsafe { CStr::from_ptr(reason) };
            match r.to_str() {
                Ok(r) => r,
                Err(e) => {
                    return fail(
                        TYPHON_ERR_UTF8,
                        format_args!("reason {:?} is not UTF-8: {e}", r.to_string_lossy()),
                    )
                }
            }
        };
        // Held across the request (which only places it and wakes the flusher), so that a
        // finish in between cannot make a refusal look like a busy window.
        let slot = RECORDER.lock();
        if slot.is_none() {
            return TYPHON_ERR_NOT_STARTED;
        }
        // Relaxed: WINDOWED is written under this lock.
        if !WINDOWED.load(Ordering::Relaxed) {
            return fail(
                TYPHON_ERR_NOT_WINDOWED,
                "the recorder keeps no window (start it with typhon_start_ex and window_ns or \
                 window_bytes)",
            );
        }
        if typhon_recorder::request_snapshot(reason) {
            TYPHON_OK
        } else {
            fail(
                TYPHON_ERR_BUSY,
                "a snapshot is already pending or being written; this request was not placed",
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The accepted sizes are exactly the field ends: strictly increasing from the minimum (the
    /// TyphonConfig fields) to the struct's size, one per field past it, so a field added
    /// without its end in the list fails here.
    #[test]
    fn the_size_lists_cover_every_field() {
        let ends = config_ends();
        assert_eq!(ends[0], TYPHON_CONFIG_EX_MIN_SIZE);
        assert_eq!(
            TYPHON_CONFIG_EX_MIN_SIZE,
            offset_of!(TyphonConfigEx, max_page_age_us)
        );
        assert!(ends.windows(2).all(|w| w[0] < w[1]), "{ends:?}");
        assert_eq!(*ends.last().unwrap(), size_of::<TyphonConfigEx>());
        // 8-byte fields after the minimum: one end per field, no padding between them.
        assert_eq!(
            ends.len() - 1,
            (size_of::<TyphonConfigEx>() - TYPHON_CONFIG_EX_MIN_SIZE) / 8
        );
        let ends = snapshot_ends();
        assert_eq!(ends[0], TYPHON_SNAPSHOT_MIN_SIZE);
        assert!(ends.windows(2).all(|w| w[0] < w[1]), "{ends:?}");
        assert_eq!(*ends.last().unwrap(), size_of::<TyphonSnapshot>());
        assert_eq!(ends.len() + 2, size_of::<TyphonSnapshot>() / 8);
    }

    /// A config larger than ours is read up to our size; its zero tail is accepted, and a
    /// smaller one gives the fields past its size their defaults even when the memory there
    /// holds something else.
    #[test]
    fn sizes_smaller_and_larger_than_ours_are_read_as_the_rule_says() {
        #[repr(C)]
        struct Newer {
            c: TyphonConfigEx,
            more: [u64; 2],
        }
        // SAFETY: all-zero is a valid TyphonConfigEx (integers and raw pointers).
        let mut n = Newer {
            c: unsafe { std::mem::zeroed() },
            more: [0, 0],
        };
        n.c.size = size_of::<Newer>();
        n.c.window_ns = 5;
        n.c.trigger_at_most_every_ns = 9;
        // SAFETY: `n` has `size` readable bytes.
        let got = unsafe { read_config(&n.c) }.unwrap();
        assert_eq!((got.window_ns, got.trigger_at_most_every_ns), (5, 9));
        n.more[1] = 1;
        // SAFETY: as above.
        assert_eq!(
            unsafe { read_config(&n.c) }.unwrap_err(),
            TYPHON_ERR_STRUCT_SIZE
        );
        n.c.size = offset_of!(TyphonConfigEx, window_bytes);
        // SAFETY: as above (a smaller size).
        let got = unsafe { read_config(&n.c) }.unwrap();
        assert_eq!((got.window_ns, got.trigger_at_most_every_ns), (5, 0));
        assert_eq!(got.size, offset_of!(TyphonConfigEx, window_bytes));
    }
}
