/*
 * typhon_recorder.h — C ABI of typhon-recorder, a nanosecond-cost profiler recorder.
 *
 * Link: the static library (libtyphon_ffi.a; add -lpthread -ldl -lm -lrt -lgcc_s) or the
 * shared one (libtyphon_ffi.so, -ltyphon_recorder). Linux x86-64/aarch64, glibc.
 *
 * Lifecycle. typhon_start() starts one recorder for the whole process and installs it; from
 * then on any thread records with the typhon_* write functions; typhon_finish() writes out
 * everything written before it, assembles the trace.dat (trace-cmd v6) and returns the final
 * counters. typhon_start_ex() starts it from a TyphonConfigEx, which also sets window mode
 * (the newest records kept in memory, written out by typhon_snapshot(),
 * typhon_request_snapshot() or a trigger), rotating segments and the page age.
 *
 * Versioned structs. TyphonConfig and TyphonStats are fixed: they never change. TyphonConfigEx
 * and TyphonSnapshot carry their size in their first field, `size`, which the caller sets to
 * sizeof(the struct) as its header declares it. Fields are only added at the end, and 0/NULL
 * is always a field's default: a host built against an older header passes a smaller size
 * and the fields it does not reach take their defaults; a host built against a newer header
 * works with an older library as long as the fields that library does not know are 0, and
 * gets TYPHON_ERR_STRUCT_SIZE otherwise (also for a size under the struct's *_MIN_SIZE, over
 * 4096, or ending inside a field).
 *
 * Writes while no recorder runs record nothing and return TYPHON_OK; malformed input (a NUL
 * in a span name, a reserved CeLog id, a payload its kind's decoder rejects, a record over
 * 65534 bytes) returns its error code either way.
 *
 * Errors. Every function returning int32_t returns TYPHON_OK (0) or a negative TYPHON_ERR_*
 * code; typhon_error_name() names it. No function unwinds or aborts on bad input: NULL
 * pointers give TYPHON_ERR_NULL, bad UTF-8 TYPHON_ERR_UTF8, and a panic inside the recorder
 * (a bug) is caught and returned as TYPHON_ERR_PANIC.
 *
 * Pointers. A (ptr, len) pair must point to len readable bytes for the duration of the call;
 * strings are UTF-8, not NUL-terminated (len excludes any NUL), except the configs' paths and
 * names and typhon_request_snapshot's reason, which are NUL-terminated. Nothing is retained
 * after a call returns. Out-pointers must be writable and aligned. The functions are
 * thread-safe. A thread's first write claims its slot
 * (an allocation, a gettid call). After that, write functions never wait for the flusher or
 * for another thread, and allocate nothing and make no system call, with two exceptions: the
 * write that takes a ring past half full wakes the flusher (a brief lock and a futex wake, once
 * per half ring), and typhon_span_begin grows the thread's buffer of open span names the first
 * time the thread nests deeper, or uses a longer name at a depth, than before.
 *
 * Timestamps. Every write has an _at variant taking raw ticks: from typhon_now(), or converted
 * from CLOCK_MONOTONIC nanoseconds with typhon_ns_to_ticks(). Files store nanoseconds.
 *
 * Threads created by the host (pthreads, std::thread, .NET threads). A thread gets one of 255
 * slots (a private lock-free ring) at its first write; call typhon_set_thread_info() before
 * that to name it. The slot is retired when the thread exits: its state lives in Rust
 * thread-locals whose destructors glibc runs at exit of every thread, including threads the
 * host created (they are registered with __cxa_thread_atexit_impl, the mechanism behind C++
 * thread_local destructors). The flusher then drains the ring and the slot is reused by a later
 * thread (tests/c/ffi_host.c checks this). The host must not:
 *   - call typhon_* from its own thread-exit hooks (pthread_key_create destructors, C++
 *     thread_local destructors) that may run after the recorder's: such calls are dropped,
 *     and a thread whose first call comes from there never retires its slot;
 *   - cancel a thread (pthread_cancel) or longjmp/unwind out of it while it is inside a typhon_*
 *     call, or kill a thread any other way than by returning / pthread_exit: its slot is then
 *     never retired (and forced unwinding through the recorder's frames is unsupported:
 *     it may abort the process);
 *   - call typhon_* in the child of fork() before exec;
 *   - call typhon_* from a signal handler: the functions are not async-signal-safe, and a
 *     handler that interrupts a typhon_* call on the same thread corrupts that thread's state.
 * More than 255 live writer threads: the extra threads' events are counted in no_slot.
 * .NET: threads of the managed thread pool live for the whole process, so their slots stay
 * claimed; record from a small set of long-lived threads and name each with
 * typhon_set_thread_info() (kind TYPHON_THREAD_POOL for pool threads). Declare BOOL
 * parameters (typhon_celog_data) as int, not bool.
 */

#ifndef TYPHON_RECORDER_H
#define TYPHON_RECORDER_H

/* Generated by cbindgen from src/ffi.rs. Do not edit: change the Rust code and run
 * TYPHON_BLESS=1 cargo test -p typhon-ffi --test header */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Success.
#define TYPHON_OK 0

// A required pointer argument was NULL.
#define TYPHON_ERR_NULL -1

// A name or path was not valid UTF-8.
#define TYPHON_ERR_UTF8 -2

// A configuration value is out of range (page size not a power of two from 4096 to 1 MiB,
// ring bytes not a power of two from 4096 to 1 GiB).
#define TYPHON_ERR_CONFIG -3

// `typhon_start`: a recorder is already running in this process.
#define TYPHON_ERR_ALREADY_STARTED -4

// `typhon_finish`, `typhon_stats`, `typhon_longest_drain_gap`, `typhon_drain`,
// `typhon_register_thread`, `typhon_snapshot`, `typhon_request_snapshot`: no recorder was
// started with `typhon_start` or `typhon_start_ex`.
#define TYPHON_ERR_NOT_STARTED -5

// An I/O error creating or writing the output file.
#define TYPHON_ERR_IO -6

// The record does not fit in one page (size > page size − 24; a larger page size records it),
// or is larger than any record can be (65534 bytes). For a span, reported when it begins; also
// for a span begun while its thread has 64 spans open, or 4096 bytes of their names (the
// recorder's fixed room for open spans; nothing is opened, and it is counted as refused).
#define TYPHON_ERR_TOO_LARGE -7

// Malformed input: a NUL inside a span name, a CeLog id of 0x3FFF or above or of 90
// (`CELID_FLAGGED`), CeLog data above 4095 bytes, a payload its kind's decoder rejects, a
// length above `PTRDIFF_MAX`.
#define TYPHON_ERR_INVALID -8

// `typhon_span_end`: the span is not this thread's innermost open span (nothing was ended).
#define TYPHON_ERR_SPAN_MISMATCH -9

// The recorder panicked inside the call (a bug; the panic did not cross the boundary).
#define TYPHON_ERR_PANIC -10

// The flusher thread panicked; the recording may be incomplete.
#define TYPHON_ERR_FLUSHER -11

// `typhon_register_thread`: all 255 thread slots are taken; this thread's events are counted
// as no-slot.
#define TYPHON_ERR_NO_SLOT -12

// A size-prefixed struct (`TyphonConfigEx`, `TyphonSnapshot`) has a `size` this library
// refuses: smaller than the struct's first version, not at a field boundary, over 4096, or
// larger than this library's struct with a non-zero byte past its end (a field of a newer
// header this library does not know, so cannot honour). The message gives both sizes.
#define TYPHON_ERR_STRUCT_SIZE -13

// `typhon_snapshot`, `typhon_request_snapshot`: the running recorder keeps no window (start
// it with `typhon_start_ex` and `window_ns` or `window_bytes`).
#define TYPHON_ERR_NOT_WINDOWED -14

// `typhon_snapshot`: the snapshot was written, but its path (and the NUL) does not fit in
// `path_cap` bytes; `info->path_len` has its length and the error message the path.
#define TYPHON_ERR_BUFFER -15

// `typhon_request_snapshot`: a snapshot is already pending or being written (at most one is
// in flight); this request was not placed.
#define TYPHON_ERR_BUSY -16

// The smallest `TyphonConfigEx.size` accepted: the `size` field and the settings
// `TyphonConfig` has (through `reserved`). Every later field is optional by size.
#define TYPHON_CONFIG_EX_MIN_SIZE 48

// The smallest `TyphonSnapshot.size` accepted: `size`, `from_ns` and `to_ns`.
#define TYPHON_SNAPSHOT_MIN_SIZE 24

// Thread kind for `typhon_set_thread_info`: the main (game loop) thread.
#define TYPHON_THREAD_MAIN 0

// Thread kind: a dedicated worker thread.
#define TYPHON_THREAD_WORKER 1

// Thread kind: a thread of a pool.
#define TYPHON_THREAD_POOL 2

// Thread kind: any other thread.
#define TYPHON_THREAD_OTHER 3

// Recorder configuration for `typhon_start`. Numeric fields left 0 take the default. Settings
// not listed here take the Rust builder's defaults (every kind enabled, pages older than 1 s
// flushed, two spare rings kept faulted in for threads' first events).
typedef struct TyphonConfig {
  // Path of the trace.dat to write (NUL-terminated UTF-8; required). Pages stream to
  // `<path>.parts/` while recording; `typhon_finish` assembles the file. Only read during
  // `typhon_start`.
  const char *output_path;
  // Page (sub-buffer) size in bytes: a power of two from 4096 to 1 MiB (0 = 4096).
  size_t page_size;
  // Ring bytes per thread slot: a power of two from 4096 to 1 GiB (0 = 2 MiB). A record
  // larger than the ring can never be written: it is dropped and counted as missed.
  size_t ring_bytes;
  // How often the flusher drains the rings, in microseconds (0 = 10 000).
  uint64_t flush_interval_us;
  // 0: an uncompressed trace.dat version 6. 1..=19: a trace.dat version 7 whose pages are
  // compressed with zstd at this level while recording (1 is the fastest and, on Typhon
  // records, about as small as 3: BENCHMARKS.md). Other values: `TYPHON_ERR_CONFIG`.
  uint32_t zstd_level;
} TyphonConfig;

// Counters of a session, summed over every slot (slot 0, the recorder's own stream,
// included). Once finished, `attempted == written + missed + sink_lost` exactly; in a live
// snapshot records still in rings are in none of the three.
typedef struct TyphonStats {
  // Records writers attempted.
  uint64_t attempted;
  // Records delivered in pages.
  uint64_t written;
  // Records dropped because a ring was full.
  uint64_t missed;
  // Writes not recorded because their kind or CeLog zone was disabled (those of threads
  // without a slot included).
  uint64_t filtered;
  // Writes refused while a recorder ran, each counted once: records too large for its pages
  // or for any record, span names with a NUL byte, malformed payloads and arguments (NULL
  // pointers, bad UTF-8). Each such call also returned its error code.
  uint64_t refused;
  // Events not recorded because all 255 user slots were taken.
  uint64_t no_slot;
  // Pages handed to the output.
  uint64_t pages;
  // Bytes handed to the output.
  uint64_t bytes;
  // Errors the output returned (e.g. disk full).
  uint64_t sink_errors;
  // Records in pages the output failed to store.
  uint64_t sink_lost;
  // Slots that recorded anything (slot 0 included).
  uint64_t slots;
} TyphonStats;

// Configuration for `typhon_start_ex`: everything `TyphonConfig` has, window mode, rotation,
// snapshot triggers and the page age, in a struct that can grow without breaking the ABI.
//
// Versioning rule: set `size` to `sizeof(TyphonConfigEx)` as your header declares it (zero
// the struct first, e.g. `TyphonConfigEx c = {.size = sizeof c, ...}`). Fields are only ever
// added at the end, never removed, reordered or retyped, and 0 (or NULL) is always the
// default. The library reads the fields that lie wholly within `size` and gives the others
// their defaults, so a host built against an older header keeps working. A `size` larger than
// the library's struct (a newer header) works when every byte past the library's struct is 0,
// and is refused with `TYPHON_ERR_STRUCT_SIZE` otherwise; so is a `size` under
// `TYPHON_CONFIG_EX_MIN_SIZE`, over 4096, or ending inside a field.
//
// With `window_ns` or `window_bytes` set the recorder keeps only the newest records, in
// memory (SPEC §16), `output_path` must be NULL, and `typhon_snapshot`,
// `typhon_request_snapshot` and the triggers write them to `snapshot_dir`.
typedef struct TyphonConfigEx {
  // `sizeof(TyphonConfigEx)` as the caller's header declares it (see the versioning rule).
  size_t size;
  // The trace.dat to write (NUL-terminated UTF-8), as `TyphonConfig.output_path`; required
  // without a window, NULL with one. With rotation, the segments' base name.
  const char *output_path;
  // As `TyphonConfig.page_size` (0 = 4096).
  size_t page_size;
  // As `TyphonConfig.ring_bytes` (0 = 2 MiB).
  size_t ring_bytes;
  // As `TyphonConfig.flush_interval_us` (0 = 10 000).
  uint64_t flush_interval_us;
  // As `TyphonConfig.zstd_level` (0 = uncompressed v6; 1..=19 = zstd v7, snapshots too).
  uint32_t zstd_level;
  // 0 (room for flags; anything else is `TYPHON_ERR_CONFIG`).
  uint32_t reserved;
  // How old a partly filled page may get before it is flushed, in microseconds (0 = what
  // `typhon_set_max_page_age_us` set, else 1 s).
  uint64_t max_page_age_us;
  // Window mode: keep the newest `window_ns` nanoseconds of records in memory (0 = no limit
  // by time; with `window_bytes` 0 too, no window).
  uint64_t window_ns;
  // Window mode: hold at most this many bytes of pages; it wins over `window_ns` (0 = no
  // byte budget of its own: 64 MiB when `window_ns` is set).
  uint64_t window_bytes;
  // Window mode: the directory snapshots go to (NUL-terminated UTF-8; NULL = the working
  // directory at start). Files are `<program>-<UTC time>-<n>.dat`.
  const char *snapshot_dir;
  // Rotating segments: cut `output_path` into `OUT.000001`, `OUT.000002`, … of this many
  // bytes of pages each (0 = one file).
  uint64_t rotate_segment_bytes;
  // Rotating segments: how many complete segments to keep (at least 1 with rotation).
  uint64_t rotate_keep;
  // Trigger: a snapshot when a tick (`typhon_tick_start` to `typhon_tick_end` on one
  // thread) lasts longer than this many ns (0 = no tick trigger).
  uint64_t tick_over_ns;
  // Trigger: a snapshot when a span of this name (NUL-terminated UTF-8) lasts longer than
  // `span_over_ns` (NULL = no span trigger).
  const char *span_over_name;
  // The span trigger's duration bound, ns.
  uint64_t span_over_ns;
  // Both triggers: keep recording this many ns after the trigger before the snapshot is cut.
  uint64_t trigger_keep_after_ns;
  // Both triggers: at most one snapshot per trigger in this many ns (0 = no spacing).
  uint64_t trigger_at_most_every_ns;
} TyphonConfigEx;

// What `typhon_snapshot` reports about the file it wrote; size-prefixed like
// `TyphonConfigEx`: set `size` to `sizeof(TyphonSnapshot)`, and the library fills the fields
// that lie wholly within it (at least `TYPHON_SNAPSHOT_MIN_SIZE`; over 4096 or ending inside
// a field is `TYPHON_ERR_STRUCT_SIZE`), leaving the bytes past its own struct alone.
typedef struct TyphonSnapshot {
  // `sizeof(TyphonSnapshot)` as the caller's header declares it; not written.
  size_t size;
  // The interval's start (exclusive), CLOCK_MONOTONIC ns: every slot in the file covers
  // `(from_ns, to_ns]`.
  uint64_t from_ns;
  // The cut (inclusive), CLOCK_MONOTONIC ns.
  uint64_t to_ns;
  // Records in the file, all slots, restatements and open spans included.
  uint64_t records;
  // Records dropped (rings full) inside the interval.
  uint64_t missed;
  // Spans open at the cut, written ending at it.
  uint64_t open_spans;
  // Records the snapshot restates (a ThreadInfo per slot, the session header, definitions).
  uint64_t restated;
  // Records evicted from the window before the cut (the recording's total so far).
  uint64_t evicted_records;
  // The length of the file's path in bytes, without the NUL.
  uint64_t path_len;
} TyphonSnapshot;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// The recorder's version, a static NUL-terminated string (e.g. `"0.1.0"`); never NULL, never
// freed.
const char *typhon_version(void);

// The name of an error code (`"TYPHON_OK"`, `"TYPHON_ERR_NULL"`, …; `"TYPHON_ERR_UNKNOWN"` for
// a code this version does not define), a static NUL-terminated string; never NULL, never
// freed.
const char *typhon_error_name(int32_t code);

// The calling thread's last error message: what went wrong in its most recent call into the
// library that returned an error code, prefixed with the function's name (e.g.
// `"typhon_start: invalid recorder configuration: page size 5000 ..."`); an empty string if
// none of its calls has failed. A NUL-terminated UTF-8 string owned by the library, never NULL.
//
// Lifetime: the pointer is valid until the same thread's next call into the library (copy the
// text first if you need it longer); other threads' calls do not touch it. Calls that succeed
// leave the message as it was (like `errno`), so read it right after the failing call.
const char *typhon_last_error_message(void);

// Starts a recorder writing to `config->output_path` and installs it process-wide; every
// thread of the process then records through the write functions. The recorder runs one
// thread of its own, `typhon-flusher`, and while threads are taking the spare rings a
// short-lived second one, `typhon-spares`, that makes new ones; `typhon_finish` joins both.
//
// Returns `TYPHON_ERR_NULL` (config or path NULL), `TYPHON_ERR_UTF8`,
// `TYPHON_ERR_CONFIG`, `TYPHON_ERR_ALREADY_STARTED` or `TYPHON_ERR_IO` on failure.
//
// # Safety
// `config` must be NULL or point to a readable `TyphonConfig` whose `output_path` is NULL or a
// NUL-terminated string readable for the duration of the call.
int32_t typhon_start(const struct TyphonConfig *config);

// Finishes the recorder started by `typhon_start`: writes out everything written before the
// call, assembles the trace.dat and stores the final counters in `*out` (when `out` is not
// NULL). Returns `TYPHON_ERR_NOT_STARTED` when none runs, `TYPHON_ERR_IO` or
// `TYPHON_ERR_FLUSHER` when the recording could not be completed (the recorder is stopped
// either way). On `TYPHON_ERR_IO` from a full disk the final counters are still stored in
// `*out`, and the pages are kept in `OUT.parts/` for `typhon-rec recover OUT`. A write still running on another thread when the recorder is uninstalled may
// be in neither the file nor a counter: join or stop the writing threads first when every
// record must be accounted for.
//
// # Safety
// `out` must be NULL or point to writable storage for a `TyphonStats`.
int32_t typhon_finish(struct TyphonStats *out);

// Finishes the recorder started by `typhon_start` when the process is told to end, so that
// the output is a complete trace.dat rather than `OUT.parts/` (the Rust builder's
// `finish_on_termination`):
// - on SIGINT or SIGTERM, everything written before the signal is written out, the previous
//   dispositions are restored and the signal is raised again, so the process ends as it would
//   have (killed by the signal, or in a handler the host installed before this call, which then
//   runs; a signal the process ignores stays ignored). A second one while the file is being
//   finished acts at once. The handler only writes a byte to a pipe; a thread of the recorder's,
//   `typhon-signals`, does the finish; it is installed with `SA_RESTART`;
// - on `exit` (or a return from `main`) with the recorder still running, an `atexit` hook
//   finishes it.
//
// Threads still writing meanwhile are not held up; their writes after the finish point are not
// recorded. Ends with `typhon_finish`, which puts the dispositions back (after a signal's
// finish it returns `TYPHON_OK` and the final counters). Calling it twice changes nothing.
// Returns `TYPHON_ERR_NOT_STARTED` without a recorder, `TYPHON_ERR_IO` if the pipe or the
// thread could not be made.
int32_t typhon_finish_on_termination(void);

// A snapshot of the running recorder's counters into `*out`. Returns `TYPHON_ERR_NULL` or
// `TYPHON_ERR_NOT_STARTED`.
//
// # Safety
// `out` must be NULL or point to writable storage for a `TyphonStats`.
int32_t typhon_stats(struct TyphonStats *out);

// The longest time so far, in ns, between two drains of the rings (the flusher's cycles),
// into `*out_ns`; 0 before the second. A ring fills in its size divided by its thread's write
// rate (about 38 ms for the default 2 MiB at 2.5 M records/s): a longer gap can drop that
// thread's records, because the flusher was not scheduled or its output held it up. It is a
// call of its own rather than a field of `TyphonStats`, whose layout hosts have compiled in.
// Returns `TYPHON_ERR_NULL` or `TYPHON_ERR_NOT_STARTED`.
//
// # Safety
// `out_ns` must be NULL or point to a writable `uint64_t`.
int32_t typhon_longest_drain_gap(uint64_t *out_ns);

// Sets how old a partly filled page may get before the flusher hands it to the output, in
// microseconds, for the recorders `typhon_start` starts after this call (0 = the default,
// 1 000 000: 1 s). It bounds how long a quiet thread's records wait before a viewer following
// the recording (`typhon-rec live`) or a crash's `recover` sees them; smaller values write
// less-full pages. A call of its own rather than a field of `TyphonConfig`, whose layout
// hosts have compiled in. Returns `TYPHON_OK`, or `TYPHON_ERR_CONFIG` for more than an
// hour (3 600 000 000), which keeps the setting as it was.
int32_t typhon_set_max_page_age_us(uint64_t us);

// Window mode (SPEC §16): records aged out of the window so far, into `*out` (0 without a
// window). They are in `written` (they reached the window), not a loss. A call of its own, like
// `typhon_longest_drain_gap`, because `TyphonStats`'s layout is compiled into hosts.
// Returns `TYPHON_ERR_NULL` or `TYPHON_ERR_NOT_STARTED`.
//
// # Safety
// `out` must be NULL or point to a writable `uint64_t`.
int32_t typhon_evicted_records(uint64_t *out);

// Window mode: pages aged out of the window so far, into `*out` (see
// `typhon_evicted_records`). Returns `TYPHON_ERR_NULL` or `TYPHON_ERR_NOT_STARTED`.
//
// # Safety
// `out` must be NULL or point to a writable `uint64_t`.
int32_t typhon_evicted_pages(uint64_t *out);

// How many records had a time more than 10 s ahead of the recorder's clock (a `*_at` time far
// in the future) and were written at their thread's previous record time instead, so that
// they did not pin the thread's later records at that future time; all slots, into `*out`.
// The running recorder's count, or, when none runs, the final count of the last one
// `typhon_finish` stopped. The file's metadata has it per slot (`clamped`). A call of its own,
// like `typhon_longest_drain_gap`, because `TyphonStats`'s layout is compiled into hosts.
// Returns `TYPHON_ERR_NULL`, or `TYPHON_ERR_NOT_STARTED` if no recorder ever ran.
//
// # Safety
// `out` must be NULL or point to a writable `uint64_t`.
int32_t typhon_clamped(uint64_t *out);

// Waits until the flusher has drained every record written before this call (on this thread,
// or on threads joined before it) and freed the slots of threads that have exited, so that
// `typhon_stats` counts those records. Returns `TYPHON_ERR_NOT_STARTED` without a recorder.
// Other calls on other threads are not held up while it waits (`typhon_finish` waits for it).
int32_t typhon_drain(void);

// Starts the process-wide recorder, as `typhon_start`, from a size-prefixed
// `TyphonConfigEx`: a plain recording, rotating segments, or window mode with its snapshot
// directory and triggers.
//
// Returns `TYPHON_ERR_NULL` (config NULL, or `output_path` NULL without a window),
// `TYPHON_ERR_STRUCT_SIZE` (see the versioning rule), `TYPHON_ERR_UTF8`,
// `TYPHON_ERR_CONFIG` (a value out of range, `output_path` with a window, a trigger setting
// without a trigger), `TYPHON_ERR_ALREADY_STARTED` or `TYPHON_ERR_IO`.
//
// # Safety
// `config` must be NULL or point to `config->size` readable bytes whose string fields are
// NULL or NUL-terminated strings readable for the duration of the call.
int32_t typhon_start_ex(const struct TyphonConfigEx *config);

// Writes a snapshot of the window (SPEC §16) and returns once the file is complete (waiting
// first for a snapshot already in flight): its path, NUL-terminated, into `path_out`
// (`path_cap` bytes), and what it holds into `*info`. Either may be NULL (`path_out` only with
// `path_cap` 0). It takes about the time of writing the window out (SPEC §16); the writers are
// not held up meanwhile.
//
// Returns `TYPHON_ERR_NOT_STARTED`, `TYPHON_ERR_NOT_WINDOWED` (a recorder without a
// window), `TYPHON_ERR_STRUCT_SIZE` (`info->size`; checked before anything is written),
// `TYPHON_ERR_NULL`, `TYPHON_ERR_IO` (the file could not be written; the window goes on)
// or `TYPHON_ERR_BUFFER`: the snapshot was written but its path does not fit, and then
// `*info` is filled, `path_out` holds an empty string and the error message the path.
//
// # Safety
// `path_out` must be NULL or point to `path_cap` writable bytes; `info` must be NULL or point
// to `info->size` writable bytes, aligned for a `TyphonSnapshot`.
int32_t typhon_snapshot(char *path_out,
                        size_t path_cap,
                        struct TyphonSnapshot *info);

// Asks the running recorder for a snapshot of its window and returns at once, from any
// thread; the flusher writes it to the snapshot directory, with `reason` (NUL-terminated
// UTF-8, cut to 256 characters; NULL = `"typhon_request_snapshot"`) in its metadata. At most
// one snapshot is in flight.
//
// Returns `TYPHON_OK` (placed), `TYPHON_ERR_BUSY` (one is already pending or being
// written: this one was not placed), `TYPHON_ERR_NOT_STARTED`, `TYPHON_ERR_NOT_WINDOWED`
// or `TYPHON_ERR_UTF8`.
//
// # Safety
// `reason` must be NULL or a NUL-terminated string readable for the duration of the call.
int32_t typhon_request_snapshot(const char *reason);

// The clock now, in raw ticks: the unit of every `*_at` function's timestamp. Valid with or
// without a running recorder (0 only if the clock panicked).
uint64_t typhon_now(void);

// Converts CLOCK_MONOTONIC nanoseconds (e.g. `clock_gettime(CLOCK_MONOTONIC)`) to raw ticks
// for the `*_at` functions.
uint64_t typhon_ns_to_ticks(uint64_t ns);

// Claims the calling thread's slot now and writes its ThreadInfo record, so that its first
// event costs what every later one does (the claim takes one of the spare rings in a few
// microseconds, or, once they are used up, allocates a ring and faults its pages in: 0.8–1.5 ms
// for the default ring on a small VM). Call it at thread start, after
// `typhon_set_thread_info`. Returns `TYPHON_OK`, `TYPHON_ERR_NOT_STARTED` without a recorder,
// or `TYPHON_ERR_NO_SLOT` when all 255 slots are taken.
int32_t typhon_register_thread(void);

// Names the calling thread (`name`: `name_len` bytes of UTF-8, cut to 64 bytes) and sets its
// kind (`TYPHON_THREAD_*`) for the ThreadInfo record written at the thread's first event.
// Call it before the thread's first write; a later call applies from the next recorder on.
//
// # Safety
// `name` must point to `name_len` readable bytes (see the module's pointer contracts).
int32_t typhon_set_thread_info(const char *name,
                               size_t name_len,
                               uint8_t kind);

// Computes a command's causal id (CorrelationInstantCodec.CommandCausalId) into `*hi`, `*lo`,
// the trace context of the span that processes the command.
//
// # Safety
// `hi` and `lo` must be NULL (giving `TYPHON_ERR_NULL`) or point to writable `uint64_t`s.
int32_t typhon_command_causal_id(uint32_t session,
                                 uint32_t drain_tick,
                                 uint16_t seq,
                                 uint64_t *hi,
                                 uint64_t *lo);

// Records IngressReceived: a message of `bytes` bytes arrived for `session`.
int32_t typhon_ingress_received(uint32_t session, uint16_t seq, uint16_t wire_idx, uint16_t bytes);

// `typhon_ingress_received` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
int32_t typhon_ingress_received_at(uint64_t ts,
                                   uint32_t session,
                                   uint16_t seq,
                                   uint16_t wire_idx,
                                   uint16_t bytes);

// Records IngressAdmitted: the message was admitted for drain tick `drain_tick`.
int32_t typhon_ingress_admitted(uint32_t session,
                                uint16_t seq,
                                uint16_t wire_idx,
                                uint32_t drain_tick);

// `typhon_ingress_admitted` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
int32_t typhon_ingress_admitted_at(uint64_t ts,
                                   uint32_t session,
                                   uint16_t seq,
                                   uint16_t wire_idx,
                                   uint32_t drain_tick);

// Records IngressDropped: the message was dropped for `reason` (any byte; unknown values
// are kept as they are).
int32_t typhon_ingress_dropped(uint32_t session, uint16_t seq, uint8_t reason);

// `typhon_ingress_dropped` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
int32_t typhon_ingress_dropped_at(uint64_t ts, uint32_t session, uint16_t seq, uint8_t reason);

// Records CommandConsumed: system `sys_idx` consumed the command.
int32_t typhon_command_consumed(uint32_t session, uint16_t seq, uint16_t sys_idx);

// `typhon_command_consumed` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
int32_t typhon_command_consumed_at(uint64_t ts, uint32_t session, uint16_t seq, uint16_t sys_idx);

// Records EgressSent: `bytes` bytes with `acks` acknowledgements went to `session` at
// `tick`.
int32_t typhon_egress_sent(uint32_t session, uint32_t tick, uint32_t bytes, uint16_t acks);

// `typhon_egress_sent` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
int32_t typhon_egress_sent_at(uint64_t ts,
                              uint32_t session,
                              uint32_t tick,
                              uint32_t bytes,
                              uint16_t acks);

// Records TickStart.
int32_t typhon_tick_start(void);

// `typhon_tick_start` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
int32_t typhon_tick_start_at(uint64_t ts);

// Records TickEnd with the tick's overload level and multiplier.
int32_t typhon_tick_end(uint8_t overload_level, uint8_t tick_multiplier);

// `typhon_tick_end` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
int32_t typhon_tick_end_at(uint64_t ts, uint8_t overload_level, uint8_t tick_multiplier);

// Records PhaseStart.
int32_t typhon_phase_start(uint8_t phase);

// `typhon_phase_start` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
int32_t typhon_phase_start_at(uint64_t ts, uint8_t phase);

// Records PhaseEnd.
int32_t typhon_phase_end(uint8_t phase);

// `typhon_phase_end` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
int32_t typhon_phase_end_at(uint64_t ts, uint8_t phase);

// Records a generic Instant (`name_id` an id of the caller's, `payload` any value).
int32_t typhon_instant(int32_t name_id, int32_t payload);

// `typhon_instant` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
int32_t typhon_instant_at(uint64_t ts, int32_t name_id, int32_t payload);

// Records a NamedInstant called `name` (`name_len` bytes of UTF-8, no NUL inside) with
// `payload`: what `typhon_instant` records, with a name instead of a number.
//
// # Safety
// `name` must point to `name_len` readable bytes.
int32_t typhon_named_instant(const char *name, size_t name_len, int32_t payload);

// Records the value of the counter `name` (`name_len` bytes of UTF-8, no NUL inside): `stats`
// gives each counter's count, min, max, mean and last, the exports draw a counter track. The
// name is written in each record (a C caller's string has no static lifetime to key a
// definition by).
//
// # Safety
// As `typhon_named_instant`.
int32_t typhon_counter(const char *name, size_t name_len, int64_t value);

// `typhon_counter` with a double value (recorded exactly).
//
// # Safety
// As `typhon_named_instant`.
int32_t typhon_counter_f64(const char *name, size_t name_len, double value);

// `typhon_counter` at `ts` (raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`): a
// value sampled earlier, or read from another clock.
//
// # Safety
// As `typhon_named_instant`.
int32_t typhon_counter_at(uint64_t ts, const char *name, size_t name_len, int64_t value);

// `typhon_counter_f64` at `ts` (raw ticks).
//
// # Safety
// As `typhon_named_instant`.
int32_t typhon_counter_f64_at(uint64_t ts, const char *name, size_t name_len, double value);

// `typhon_named_instant` at `ts` (raw ticks).
//
// # Safety
// As `typhon_named_instant`.
int32_t typhon_named_instant_at(uint64_t ts, const char *name, size_t name_len, int32_t payload);

// Records a NamedPhaseStart: phase `phase`, called `name`, starts. It pairs with the next
// NamedPhaseEnd (or PhaseEnd) of the same phase on the thread.
//
// # Safety
// As `typhon_named_instant`.
int32_t typhon_named_phase_start(uint8_t phase, const char *name, size_t name_len);

// Records a NamedPhaseEnd: phase `phase`, called `name`, ends.
//
// # Safety
// As `typhon_named_instant`.
int32_t typhon_named_phase_end(uint8_t phase, const char *name, size_t name_len);

// `typhon_named_phase_start` at `ts` (raw ticks).
//
// # Safety
// As `typhon_named_instant`.
int32_t typhon_named_phase_start_at(uint64_t ts, uint8_t phase, const char *name, size_t name_len);

// `typhon_named_phase_end` at `ts` (raw ticks).
//
// # Safety
// As `typhon_named_instant`.
int32_t typhon_named_phase_end_at(uint64_t ts, uint8_t phase, const char *name, size_t name_len);

// CeLogSetZones: which CeLog zones are recorded (an event is recorded iff
// `(zone_ce & dwZoneCE) != 0 || (zone_user & dwZoneUser) != 0`); `zone_process` is accepted
// for parity and unused. Applies process-wide from the next event on.
int32_t typhon_celog_set_zones(uint32_t zone_user, uint32_t zone_ce, uint32_t zone_process);

// CeLogData(fTimeStamp, wID, pData, wLen, dwZoneUser, dwZoneCE, wFlag, fFlagged): records one
// CeLog event of id `w_id` with `w_len` bytes at `p_data` (at most 4095), if its zones are
// enabled (else it is counted as filtered). `f_time_stamp` and `f_flagged` are Win32 `BOOL`s
// (non-zero = true): without a timestamp no clock is read and the event takes the time of the
// thread's previous record; flagged events carry `w_flag`.
//
// # Safety
// `p_data` must point to `w_len` readable bytes; it may be NULL when `w_len` is 0.
int32_t typhon_celog_data(int32_t f_time_stamp,
                          uint16_t w_id,
                          const void *p_data,
                          uint16_t w_len,
                          uint32_t dw_zone_user,
                          uint32_t dw_zone_ce,
                          uint16_t w_flag,
                          int32_t f_flagged);

// `typhon_celog_data` with a timestamp at `ts` (raw ticks; the event always carries a
// timestamp).
//
// # Safety
// As `typhon_celog_data`.
int32_t typhon_celog_data_at(uint64_t ts,
                             uint16_t w_id,
                             const void *p_data,
                             uint16_t w_len,
                             uint32_t dw_zone_user,
                             uint32_t dw_zone_ce,
                             uint16_t w_flag,
                             int32_t f_flagged);

// Writes a record of any kind: `payload` (`len` bytes) is everything after the 12-byte common
// header. Kinds of the recorder's kind table must hold a record their decoder accepts
// (`TYPHON_ERR_INVALID`: the size, a name's NUL or length, span flags, one valid CeLog
// event); other kinds are the engine's own. `TYPHON_ERR_TOO_LARGE` if it does not fit in a
// page or exceeds 65534 bytes.
//
// # Safety
// `payload` must point to `len` readable bytes; it may be NULL when `len` is 0.
int32_t typhon_write_record(uint8_t kind, const uint8_t *payload, size_t len);

// `typhon_write_record` at `ts` (raw ticks).
//
// # Safety
// As `typhon_write_record`.
int32_t typhon_write_record_at(uint64_t ts, uint8_t kind, const uint8_t *payload, size_t len);

// Opens a NamedSpan called `name` (`name_len` bytes of UTF-8, no NUL inside) and stores its id
// in `*span_id` (0 when nothing is recorded: no recorder, filtered, no slot). End it with
// `typhon_span_end` on the same thread, innermost first. Its parent is the thread's innermost
// open span.
//
// # Safety
// `name` must point to `name_len` readable bytes; `span_id` must point to a writable
// `uint64_t` (NULL gives `TYPHON_ERR_NULL`).
int32_t typhon_span_begin(const char *name,
                          size_t name_len,
                          uint64_t *span_id);

// `typhon_span_begin` starting at `ts` (raw ticks).
//
// # Safety
// As `typhon_span_begin`.
int32_t typhon_span_begin_at(uint64_t ts, const char *name, size_t name_len, uint64_t *span_id);

// Opens a TracedSpan carrying the trace context `(trace_hi, trace_lo)`: a W3C trace id (hi =
// its first 8 bytes as a little-endian u64, lo = the last 8) or a command's causal id from
// `typhon_command_causal_id`. Otherwise as `typhon_span_begin`.
//
// # Safety
// As `typhon_span_begin`.
int32_t typhon_traced_span_begin(const char *name,
                                 size_t name_len,
                                 uint64_t trace_hi,
                                 uint64_t trace_lo,
                                 uint64_t *span_id);

// `typhon_traced_span_begin` starting at `ts` (raw ticks).
//
// # Safety
// As `typhon_span_begin`.
int32_t typhon_traced_span_begin_at(uint64_t ts,
                                    const char *name,
                                    size_t name_len,
                                    uint64_t trace_hi,
                                    uint64_t trace_lo,
                                    uint64_t *span_id);

// Ends span `span_id` (from a `typhon_*span_begin*` call on this thread) now and writes its
// record. It must be the thread's innermost open span, else `TYPHON_ERR_SPAN_MISMATCH` and
// nothing ends. `span_id` 0 is a no-op.
int32_t typhon_span_end(uint64_t span_id);

// `typhon_span_end` at `ts` (raw ticks).
int32_t typhon_span_end_at(uint64_t span_id, uint64_t ts);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* TYPHON_RECORDER_H */
