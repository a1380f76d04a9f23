//! The two facts about the traced machine a page walk needs: the size of its kernel `long`
//! ([`LongSize`]) and its byte order ([`Endian`]), libtraceevent's `kbuffer_alloc` arguments.

/// Size of the kernel `long` of the traced machine: it sets the width of the commit word and of
/// the stored missed count, and so where the records start (12 or 16).
///
/// ```
/// use typhon_trace::kbuffer::LongSize;
/// assert_eq!(LongSize::Eight.bytes(), 8);
/// if cfg!(target_pointer_width = "64") {
///     assert_eq!(LongSize::same_as_host(), LongSize::Eight);
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LongSize {
    /// `KBUFFER_LSIZE_4`: a 32-bit kernel (12-byte page header).
    Four,
    /// `KBUFFER_LSIZE_8`: a 64-bit kernel (16-byte page header).
    Eight,
}

impl LongSize {
    /// `KBUFFER_LSIZE_SAME_AS_HOST`: 8 if this program's `long` is 8 bytes or its target
    /// architecture name contains "64", else 4. (C asks `uname()` for the running kernel's machine
    /// name instead, which differs only for 32-bit programs on 64-bit kernels.)
    ///
    /// ```
    /// # use typhon_trace::kbuffer::LongSize;
    /// let _ = LongSize::same_as_host();
    /// ```
    pub fn same_as_host() -> LongSize {
        if cfg!(target_pointer_width = "64") || std::env::consts::ARCH.contains("64") {
            LongSize::Eight
        } else {
            LongSize::Four
        }
    }

    /// The size in bytes (4 or 8).
    ///
    /// ```
    /// # use typhon_trace::kbuffer::LongSize;
    /// assert_eq!(LongSize::Four.bytes(), 4);
    /// ```
    pub fn bytes(self) -> usize {
        match self {
            LongSize::Four => 4,
            LongSize::Eight => 8,
        }
    }
}

/// Byte order of the traced machine.
///
/// ```
/// use typhon_trace::kbuffer::Endian;
/// assert_eq!(Endian::same_as_host(), if cfg!(target_endian = "big") { Endian::Big } else { Endian::Little });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    /// `KBUFFER_ENDIAN_LITTLE`.
    Little,
    /// `KBUFFER_ENDIAN_BIG`: words are big-endian and the record header's bit fields are in
    /// big-endian order (`type_len` in the top 5 bits).
    Big,
}

impl Endian {
    /// `KBUFFER_ENDIAN_SAME_AS_HOST`.
    ///
    /// ```
    /// # use typhon_trace::kbuffer::Endian;
    /// let _ = Endian::same_as_host();
    /// ```
    pub fn same_as_host() -> Endian {
        if cfg!(target_endian = "big") {
            Endian::Big
        } else {
            Endian::Little
        }
    }
}
