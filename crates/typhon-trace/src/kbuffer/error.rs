//! [`KBufferError`]: why a page could not be (fully) read. The C library has no such errors;
//! they mark the places where it would read out of bounds or loop, and this reader stops.

use core::fmt;

/// Why a page could not be (fully) read.
///
/// ```
/// use typhon_trace::kbuffer::{Endian, KBuffer, KBufferError, LongSize};
/// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
/// assert_eq!(kb.load_subbuffer(&[0u8; 10]), Err(KBufferError::HeaderTruncated { len: 10, need: 16 }));
/// println!("{}", KBufferError::NotLoaded);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KBufferError {
    /// No sub-buffer has been loaded.
    NotLoaded,
    /// The buffer is shorter than the sub-buffer header.
    HeaderTruncated {
        /// Length of the buffer given.
        len: usize,
        /// Bytes the header needs (12 or 16).
        need: usize,
    },
    /// Reading the page needed bytes past the end of the buffer (the C library would read out of
    /// bounds here).
    OutOfBounds {
        /// Offset (from the sub-buffer start) of the first byte needed.
        offset: usize,
        /// Number of bytes needed there.
        len: usize,
        /// Length of the buffer.
        buffer_len: usize,
    },
    /// A record's length would move the walk backwards or nowhere (the C library could loop
    /// forever here).
    NoProgress {
        /// Offset (from the sub-buffer start) of the record header.
        offset: usize,
    },
}

impl fmt::Display for KBufferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            KBufferError::NotLoaded => f.write_str("no sub-buffer loaded"),
            KBufferError::HeaderTruncated { len, need } => {
                write!(f, "sub-buffer of {len} bytes is shorter than its {need}-byte header")
            }
            KBufferError::OutOfBounds { offset, len, buffer_len } => write!(
                f,
                "corrupt sub-buffer: {len} bytes at offset {offset} are past its end ({buffer_len} bytes)"
            ),
            KBufferError::NoProgress { offset } => write!(
                f,
                "corrupt sub-buffer: the record at offset {offset} does not advance the walk"
            ),
        }
    }
}

impl KBufferError {
    /// Where in the sub-buffer the damage is, when the error knows: the byte past the end a
    /// record needed, or the header of a record that does not advance the walk.
    ///
    /// ```
    /// use typhon_trace::kbuffer::KBufferError;
    /// assert_eq!(KBufferError::NoProgress { offset: 24 }.offset(), Some(24));
    /// assert_eq!(KBufferError::NotLoaded.offset(), None);
    /// ```
    pub fn offset(&self) -> Option<usize> {
        match *self {
            KBufferError::OutOfBounds { offset, .. } | KBufferError::NoProgress { offset } => {
                Some(offset)
            }
            KBufferError::NotLoaded | KBufferError::HeaderTruncated { .. } => None,
        }
    }
}

impl std::error::Error for KBufferError {}
