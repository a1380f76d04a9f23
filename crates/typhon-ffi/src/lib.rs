//! The C ABI: the recorder for engines written in C, C++ or C# (P/Invoke).
//!
//! Every function is `extern "C"`, unmangled, prefixed `typhon_`, and never unwinds into the
//! caller: each body runs under [`std::panic::catch_unwind`] and a panic becomes
//! [`TYPHON_ERR_PANIC`]. Errors are `int32_t` codes, 0 = [`TYPHON_OK`], negative = an error,
//! named by [`typhon_error_name`] and explained by [`typhon_last_error_message`] (the calling
//! thread's last failure, in words: the configuration value, the path, the sizes). A write
//! that fails while a recorder runs is counted once as refused. The header
//! `include/typhon_recorder.h` is generated from this crate's sources with cbindgen
//! (`cbindgen.toml`; `TYPHON_BLESS=1 cargo test -p typhon-ffi --test header` rewrites it, and
//! that test fails while it is out of date).
//!
//! Pointer contracts, shared by every function that takes one:
//! - a `(ptr, len)` pair must point to `len` readable bytes that stay valid and unmodified for
//!   the duration of the call; `ptr` may not be NULL (NULL gives [`TYPHON_ERR_NULL`]) except
//!   that NULL with `len == 0` is an empty name or payload; `len` above `PTRDIFF_MAX` gives
//!   [`TYPHON_ERR_INVALID`];
//! - names are UTF-8 without a terminating NUL counted in `len` (bad UTF-8 gives
//!   [`TYPHON_ERR_UTF8`]); the recorder copies what it keeps, so the caller may reuse the buffer
//!   as soon as the call returns;
//! - out-pointers must be NULL (where a function allows it) or point to writable, properly
//!   aligned storage of the pointee type.
//!
//! Writes with no recorder running record nothing and return [`TYPHON_OK`], like the Rust API;
//! malformed input returns its error code either way, so a bad call shows with recording off too.
//!
//! ```
//! # let _g = typhon_recorder::doc_lock();
//! use typhon_ffi::*;
//! let dir = std::env::temp_dir().join(format!("typhon-ffi-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = std::ffi::CString::new(dir.join("t.dat").to_str().unwrap()).unwrap();
//! let cfg = TyphonConfig { output_path: path.as_ptr(), page_size: 0, ring_bytes: 0,
//!     flush_interval_us: 0, zstd_level: 0 };
//! unsafe {
//!     assert_eq!(typhon_start(&cfg), TYPHON_OK);
//!     assert_eq!(typhon_tick_start(), TYPHON_OK);
//!     let mut id = 0;
//!     assert_eq!(typhon_span_begin(b"update".as_ptr().cast(), 6, &mut id), TYPHON_OK);
//!     assert_eq!(typhon_span_end(id), TYPHON_OK);
//!     let mut st = TyphonStats::default();
//!     assert_eq!(typhon_finish(&mut st), TYPHON_OK);
//!     assert_eq!(st.attempted, st.written + st.missed + st.sink_lost);
//! }
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

// cbindgen reads this file's items first, then the modules in the order declared here, and the
// header's declarations keep that order (constants, then structs, then functions): the header
// reads from the basics to the writes. Each `mod` stands apart so that rustfmt keeps the order.

// The error codes and the calling thread's last error message.
mod error;

// The panic guard and the pointer-contract checks every C function's body runs under.
mod guard;

// Starting, draining and finishing the process-wide recorder; its counters.
mod lifecycle;

// The configuration that can grow, window mode and its snapshots.
mod window;

// Raw ticks for the `*_at` writes.
mod clock;

// The calling thread's name, kind and slot.
mod threads;

// The fixed-size writes.
mod writes;

// The writes that carry the caller's bytes: CeLog events and records of any kind.
mod payload;

// Spans opened and closed by id.
mod spans;

pub use clock::*;
pub use error::*;
pub use lifecycle::*;
pub use payload::*;
pub use spans::*;
pub use threads::*;
pub use window::*;
pub use writes::*;

use std::ffi::c_char;

/// The recorder's version, a static NUL-terminated string (e.g. `"0.1.0"`); never NULL, never
/// freed.
///
/// ```
/// let v = unsafe { std::ffi::CStr::from_ptr(typhon_ffi::typhon_version()) };
/// assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
/// ```
#[no_mangle]
pub extern "C" fn typhon_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
