//! Encoders of counters (kinds 234 and 235): a value over time, an i64 or an f64 stored as its
//! bits (`flags` bit 0), named inline (Counter) or by the slot's static-name id (CounterId,
//! SPEC §15). The id form is the inline kind with the id in the name's place.

use super::{has_nul, reserve};
use crate::codec::kinds::{min_size, off};
use crate::codec::{header, put_u32, put_u64, EncodeError, TraceEventKind as K};

const VALUE: usize = off(K::COUNTER, "value");
const FLAGS: usize = off(K::COUNTER, "flags");
const NAME: usize = off(K::COUNTER, "name");
const ID_NAME: usize = off(K::COUNTER_ID, "name_id");
/// Size of a CounterId record (25 bytes).
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::COUNTER_ID_SIZE, 25);
/// ```
pub const COUNTER_ID_SIZE: usize = min_size(K::COUNTER_ID);

/// Counter flags bit 0: the value field holds an f64's bits (`f64::to_bits`), not an i64.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::COUNTER_F64, 1);
/// ```
pub const COUNTER_F64: u8 = 1;

const _: () = {
    assert!(min_size(K::COUNTER) == NAME + 1);
    assert!(VALUE == off(K::COUNTER_ID, "value") && FLAGS == off(K::COUNTER_ID, "flags"));
    assert!(ID_NAME == NAME && COUNTER_ID_SIZE == ID_NAME + 4);
};

/// A counter's value as stored: the 8 value bytes and the flags byte that says how to read
/// them. Integers only, so records compare exactly (an f64 compares by its bits).
///
/// ```
/// use typhon_recorder::codec::records::CounterValue;
/// let v = CounterValue::from_f64(2.5);
/// assert!(v.is_f64());
/// assert_eq!(v.as_f64(), 2.5);
/// assert_eq!(CounterValue::from_i64(-3).as_f64(), -3.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CounterValue {
    /// The value field: the i64, or the f64's bits.
    pub raw: i64,
    /// The flags byte ([`COUNTER_F64`]; other bits are 0 when written, ignored when read).
    pub flags: u8,
}

impl CounterValue {
    /// An integer value.
    ///
    /// ```
    /// # use typhon_recorder::codec::records::CounterValue;
    /// assert_eq!(CounterValue::from_i64(7).as_i64(), Some(7));
    /// ```
    #[inline]
    pub const fn from_i64(v: i64) -> Self {
        CounterValue { raw: v, flags: 0 }
    }

    /// A floating-point value.
    ///
    /// ```
    /// # use typhon_recorder::codec::records::CounterValue;
    /// assert_eq!(CounterValue::from_f64(0.5).as_i64(), None);
    /// ```
    #[inline]
    pub fn from_f64(v: f64) -> Self {
        CounterValue {
            raw: v.to_bits() as i64,
            flags: COUNTER_F64,
        }
    }

    /// Whether the value is an f64.
    ///
    /// ```
    /// # use typhon_recorder::codec::records::CounterValue;
    /// assert!(!CounterValue::from_i64(1).is_f64());
    /// ```
    #[inline]
    pub const fn is_f64(self) -> bool {
        self.flags & COUNTER_F64 != 0
    }

    /// The integer, or `None` for an f64 value.
    ///
    /// ```
    /// # use typhon_recorder::codec::records::CounterValue;
    /// assert_eq!(CounterValue::from_i64(i64::MIN).as_i64(), Some(i64::MIN));
    /// ```
    #[inline]
    pub const fn as_i64(self) -> Option<i64> {
        if self.is_f64() {
            None
        } else {
            Some(self.raw)
        }
    }

    /// The value as an f64 (an i64 converted, so large ones round).
    ///
    /// ```
    /// # use typhon_recorder::codec::records::CounterValue;
    /// assert_eq!(CounterValue::from_f64(-0.25).as_f64(), -0.25);
    /// ```
    #[inline]
    pub fn as_f64(self) -> f64 {
        if self.is_f64() {
            f64::from_bits(self.raw as u64)
        } else {
            self.raw as f64
        }
    }
}

impl std::fmt::Display for CounterValue {
    /// An i64 as an integer, an f64 as Rust prints it (`2.5`, `NaN`).
    ///
    /// ```
    /// # use typhon_recorder::codec::records::CounterValue;
    /// assert_eq!(CounterValue::from_i64(-4).to_string(), "-4");
    /// assert_eq!(CounterValue::from_f64(2.5).to_string(), "2.5");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.as_i64() {
            Some(v) => write!(f, "{v}"),
            None => write!(f, "{}", self.as_f64()),
        }
    }
}

/// Size of a Counter record: `22 + name.len()`.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::counter_len("depth"), 27);
/// ```
#[inline]
pub const fn counter_len(name: &str) -> usize {
    NAME + name.len() + 1
}

#[inline(always)]
fn fill_value(d: &mut [u8], value: CounterValue) {
    put_u64(d, VALUE, value.raw as u64);
    d[FLAGS] = value.flags;
}

/// Writes a Counter record (name inline).
///
/// # Errors
/// [`EncodeError::NameHasNul`], [`EncodeError::RecordTooLarge`] (over 65534 bytes),
/// [`EncodeError::DstTooSmall`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 32];
/// let value = CounterValue::from_i64(9);
/// let n = write_counter(&mut d, 1, 5, value, "depth").unwrap();
/// assert_eq!(decode(&d[..n]).unwrap().1, Record::Counter { value, name: "depth" });
/// ```
pub fn write_counter(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    value: CounterValue,
    name: &str,
) -> Result<usize, EncodeError> {
    let size = counter_len(name);
    if has_nul(name.as_bytes()) {
        return Err(EncodeError::NameHasNul);
    }
    if size > crate::codec::CommonHeader::MAX_RECORD {
        return Err(EncodeError::RecordTooLarge(size));
    }
    let d = reserve(d, size)?;
    header(d, size, K::COUNTER, slot, ts);
    fill_value(d, value);
    d[NAME..size - 1].copy_from_slice(name.as_bytes());
    d[size - 1] = 0;
    Ok(size)
}

/// Writes a CounterId record (25 bytes): a Counter named by the slot's definition `name_id`.
///
/// # Errors
/// [`EncodeError::DstTooSmall`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 25];
/// let value = CounterValue::from_f64(0.5);
/// assert_eq!(write_counter_id(&mut d, 1, 5, value, 7), Ok(COUNTER_ID_SIZE));
/// assert_eq!(decode(&d).unwrap().1, Record::CounterId { value, name_id: 7 });
/// ```
pub fn write_counter_id(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    value: CounterValue,
    name_id: u32,
) -> Result<usize, EncodeError> {
    let d = reserve(d, COUNTER_ID_SIZE)?;
    header(d, COUNTER_ID_SIZE, K::COUNTER_ID, slot, ts);
    fill_value(d, value);
    put_u32(d, ID_NAME, name_id);
    Ok(COUNTER_ID_SIZE)
}
