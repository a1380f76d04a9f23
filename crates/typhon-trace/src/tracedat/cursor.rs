//! `Cur`, the bounds-checked cursor every parser reads the file through: each read is checked
//! against the bytes it is given, so a length or offset from the file can only fail, never
//! index out of bounds or size an allocation.
//!
//! A parser that must stay inside one section gives the cursor that section's bytes only.

use super::error::{corrupt, Result, TraceDatError};

/// A bounds-checked cursor over the file bytes.
pub(super) struct Cur<'a> {
    /// The bytes it reads: the file, or one section or option of it.
    pub(super) d: &'a [u8],
    /// Offset of the next read in `d`.
    pub(super) pos: usize,
    /// Whether numbers are big-endian.
    pub(super) be: bool,
}

impl<'a> Cur<'a> {
    pub(super) fn at(d: &'a [u8], pos: usize, be: bool) -> Self {
        Self { d, pos, be }
    }
    pub(super) fn off(&self) -> u64 {
        self.pos as u64
    }
    pub(super) fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.d.len());
        match end {
            Some(e) => {
                let s = &self.d[self.pos..e];
                self.pos = e;
                Ok(s)
            }
            None => Err(TraceDatError::Truncated {
                what,
                at: self.off(),
            }),
        }
    }
    pub(super) fn bytes_u64(&mut self, n: u64, what: &'static str) -> Result<&'a [u8]> {
        let n = usize::try_from(n).map_err(|_| TraceDatError::Truncated {
            what,
            at: self.off(),
        })?;
        self.bytes(n, what)
    }
    fn num(&mut self, n: usize, what: &'static str) -> Result<u64> {
        let b = self.bytes(n, what)?;
        Ok(read_uint(b, self.be))
    }
    pub(super) fn u16(&mut self, what: &'static str) -> Result<u16> {
        Ok(self.num(2, what)? as u16)
    }
    pub(super) fn u32(&mut self, what: &'static str) -> Result<u32> {
        Ok(self.num(4, what)? as u32)
    }
    pub(super) fn u64(&mut self, what: &'static str) -> Result<u64> {
        self.num(8, what)
    }
    pub(super) fn cstr(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let rest = self.d.get(self.pos..).unwrap_or(&[]);
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                let s = &rest[..n];
                self.pos += n + 1;
                Ok(s)
            }
            None => Err(TraceDatError::Truncated {
                what,
                at: self.off(),
            }),
        }
    }
    pub(super) fn expect(&mut self, lit: &[u8], what: &'static str) -> Result<()> {
        let at = self.off();
        if self.bytes(lit.len(), what)? != lit {
            return corrupt(format!("expected {what}"), at);
        }
        Ok(())
    }
}

/// Reads an unsigned integer of 1..=8 bytes in the given byte order.
pub(super) fn read_uint(b: &[u8], be: bool) -> u64 {
    let mut v = 0u64;
    if be {
        for &x in b.iter().take(8) {
            v = (v << 8) | u64::from(x);
        }
    } else {
        for &x in b.iter().take(8).rev() {
            v = (v << 8) | u64::from(x);
        }
    }
    v
}
