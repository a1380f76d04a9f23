//! [`TraceDatError`], the one error type of the reader, and the `Result` every parser returns.
//!
//! Damage inside one page of record data is its own variant, [`TraceDatError::DamagedPage`],
//! because the record iterators report it and go on: it is counted, not the end of a reading.

use core::fmt;

/// Why a trace.dat file could not be read.
///
/// ```
/// use typhon_trace::tracedat::{TraceFile, TraceDatError};
/// assert!(matches!(TraceFile::parse(b"nope".to_vec()), Err(TraceDatError::Truncated { .. })));
/// assert!(matches!(TraceFile::parse(vec![0u8; 64]), Err(TraceDatError::BadMagic)));
/// ```
#[derive(Debug)]
pub enum TraceDatError {
    /// The file could not be read.
    Io(std::io::Error),
    /// The path names something other than a regular file (a FIFO, device, directory or
    /// socket): it is refused before anything is read.
    NotAFile {
        /// What it is ("FIFO (named pipe)", "character device", "directory", ...).
        kind: &'static str,
    },
    /// The file does not start with the trace.dat magic.
    BadMagic,
    /// A file version this reader does not handle (not 6 or 7).
    UnsupportedVersion(String),
    /// A version 7 file compressed with an algorithm other than zstd (its name).
    Compressed(String),
    /// The file ends inside a structure.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// File offset where it starts.
        at: u64,
    },
    /// A structure holds an impossible value.
    Corrupt {
        /// What is wrong.
        what: String,
        /// File offset of the structure.
        at: u64,
    },
    /// One page of a CPU's record data is damaged. The record iterators yield this once for the
    /// page, in place of the records from the damage to the page's end, and go on with the
    /// next page: the error is counted, not the end of the reading.
    DamagedPage {
        /// The CPU (thread slot) whose data holds the page.
        cpu: u32,
        /// File offset of the page.
        page_at: u64,
        /// File offset where the damage was found (the page's, or the bad record's).
        at: u64,
        /// Good records read from the page before the damage.
        records_before: u32,
        /// How many pages in a row, from `page_at`, this error stands for: 1, but for a chunk
        /// that does not decompress or the unread rest of a CPU's data, whose pages are one
        /// error (a file can declare millions of them in a few bytes of chunk headers: one
        /// error each made reading it take minutes).
        pages: u64,
        /// What is wrong.
        what: String,
    },
}

impl TraceDatError {
    /// The pages a [`TraceDatError::DamagedPage`] stands for; 0 for any other error.
    ///
    /// ```
    /// use typhon_trace::tracedat::TraceDatError;
    /// let e = TraceDatError::DamagedPage { cpu: 1, page_at: 0, at: 0, records_before: 0, pages: 3, what: "x".into() };
    /// assert_eq!(e.damaged_pages(), 3);
    /// assert_eq!(TraceDatError::BadMagic.damaged_pages(), 0);
    /// ```
    pub fn damaged_pages(&self) -> u64 {
        match self {
            TraceDatError::DamagedPage { pages, .. } => *pages,
            _ => 0,
        }
    }
}

impl fmt::Display for TraceDatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceDatError::Io(e) => write!(f, "cannot read trace.dat: {e}"),
            TraceDatError::NotAFile { kind } => {
                write!(
                    f,
                    "is a {kind}, not a regular file: a trace.dat must be a file"
                )
            }
            TraceDatError::BadMagic => f.write_str("not a trace.dat file (bad magic)"),
            TraceDatError::UnsupportedVersion(v) => {
                write!(f, "trace.dat version {v:?} is not supported (6 and 7 are)")
            }
            TraceDatError::Compressed(c) => write!(
                f,
                "trace.dat is compressed with {c:?}; only zstd and uncompressed files are \
                 supported (convert with `trace-cmd convert --compression zstd`)"
            ),
            TraceDatError::Truncated { what, at } => {
                write!(f, "trace.dat truncated: {what} at offset {at}")
            }
            TraceDatError::Corrupt { what, at } => {
                write!(f, "trace.dat corrupt at offset {at}: {what}")
            }
            TraceDatError::DamagedPage {
                cpu,
                page_at,
                at,
                records_before,
                pages: 1,
                what,
            } => write!(
                f,
                "cpu {cpu}: page at offset {page_at} damaged at offset {at} ({what}); \
                 skipped after its first {records_before} records"
            ),
            TraceDatError::DamagedPage {
                cpu,
                page_at,
                at,
                pages,
                what,
                ..
            } => write!(
                f,
                "cpu {cpu}: {pages} pages from offset {page_at} damaged at offset {at} ({what}); \
                 skipped"
            ),
        }
    }
}

impl std::error::Error for TraceDatError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceDatError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for TraceDatError {
    fn from(e: std::io::Error) -> Self {
        TraceDatError::Io(e)
    }
}

pub(super) type Result<T> = std::result::Result<T, TraceDatError>;

pub(super) fn corrupt<T>(what: impl Into<String>, at: u64) -> Result<T> {
    Err(TraceDatError::Corrupt {
        what: what.into(),
        at,
    })
}
