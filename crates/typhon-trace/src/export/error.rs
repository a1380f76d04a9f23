//! [`ExportError`]: why an export failed, reading the file or writing the output.

use crate::tracedat::TraceDatError;
use std::fmt;

/// Why an export failed.
///
/// ```
/// use typhon_trace::export::ExportError;
/// let e = ExportError::Io(std::io::ErrorKind::WriteZero.into());
/// assert!(e.to_string().starts_with("writing the export"));
/// ```
#[derive(Debug)]
pub enum ExportError {
    /// The file's record data is damaged (the reader's error, after `records` good records).
    Read {
        /// Records read before the error.
        records: u64,
        /// The reader's error.
        error: TraceDatError,
    },
    /// Writing the output failed.
    Io(std::io::Error),
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::Read { records, error } => {
                write!(f, "after {records} records: {error}")
            }
            ExportError::Io(e) => write!(f, "writing the export: {e}"),
        }
    }
}

impl std::error::Error for ExportError {}

impl From<std::io::Error> for ExportError {
    fn from(e: std::io::Error) -> Self {
        ExportError::Io(e)
    }
}
