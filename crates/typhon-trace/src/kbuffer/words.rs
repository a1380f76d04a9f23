//! Bounds-checked reads and writes of the fixed-size words of a page, in the page's byte
//! order: every byte a record's length or offset points at is checked against the buffer,
//! so a corrupt page gives a [`KBufferError`], never an out-of-bounds access.

use super::error::KBufferError;
use super::machine::LongSize;

/// The 4-byte word at `at`, big-endian if `big`.
pub(super) fn read4(big: bool, page: &[u8], at: usize) -> Result<u32, KBufferError> {
    let b = bytes_at::<4>(page, at)?;
    Ok(if big {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    })
}

/// The 8-byte word at `at`, big-endian if `big`.
pub(super) fn read8(big: bool, page: &[u8], at: usize) -> Result<u64, KBufferError> {
    let b = bytes_at::<8>(page, at)?;
    Ok(if big {
        u64::from_be_bytes(b)
    } else {
        u64::from_le_bytes(b)
    })
}

/// The kernel `long` at `at`.
pub(super) fn read_long(
    long: LongSize,
    big: bool,
    page: &[u8],
    at: usize,
) -> Result<u64, KBufferError> {
    match long {
        LongSize::Four => read4(big, page, at).map(u64::from),
        LongSize::Eight => read8(big, page, at),
    }
}

/// Writes `v` as the 4-byte word at `at` (the caller checked the room).
pub(super) fn write4(big: bool, buf: &mut [u8], at: usize, v: u32) {
    let b = if big {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    };
    buf[at..at + 4].copy_from_slice(&b);
}

/// Writes `v` as the 8-byte word at `at` (the caller checked the room).
pub(super) fn write8(big: bool, buf: &mut [u8], at: usize, v: u64) {
    let b = if big {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    };
    buf[at..at + 8].copy_from_slice(&b);
}

/// The `len` bytes at `at`.
pub(super) fn bytes_range(buf: &[u8], at: usize, len: usize) -> Result<&[u8], KBufferError> {
    buf.get(at..at.saturating_add(len))
        .ok_or(KBufferError::OutOfBounds {
            offset: at,
            len,
            buffer_len: buf.len(),
        })
}

/// The `N` bytes at `at`, as an array.
fn bytes_at<const N: usize>(buf: &[u8], at: usize) -> Result<[u8; N], KBufferError> {
    let s = bytes_range(buf, at, N)?;
    let mut b = [0u8; N];
    b.copy_from_slice(s);
    Ok(b)
}
