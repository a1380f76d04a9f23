//! The errors of starting and finishing a recorder ([`RecorderError`]), apart from the lifecycle
//! so that the session's finish and the termination hooks name them without importing it.

use crate::stats::Stats;
use std::fmt;

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
/// use typhon_recorder::{RecorderError, Unfinished, Stats};
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
    /// assert!(typhon_recorder::RecorderError::AlreadyInstalled.stats().is_none());
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
