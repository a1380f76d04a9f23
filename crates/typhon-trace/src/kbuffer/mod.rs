//! A safe Rust reader with the semantics of libtraceevent's `kbuffer` API.
//!
//! It walks ftrace ring-buffer sub-buffer pages (the format is described in [`typhon_recorder::page`]) and
//! answers every query with the number libtraceevent's `kbuffer_*` function gives on the same bytes,
//! its documented traps included:
//!
//! - a padding record's time delta *is* added to the running timestamp;
//! - zero bytes inside the commit decode as bogus records with `event_size() == -4` and
//!   `curr_size() == 4`;
//! - [`missed_events`](KBuffer::missed_events) is non-zero only while the current record sits at
//!   data offset 0 (a page that starts with a time extend hides its count), is `-1` when
//!   `MISSED_EVENTS` is set without `MISSED_STORED`, and truncates the stored count to a C `int`;
//! - [`read_at_offset`](KBuffer::read_at_offset) returns the first record whose header is at or
//!   after the offset (it rounds up);
//! - [`subbuffer_size`](KBuffer::subbuffer_size) is the commit size, not the page size;
//! - a type-31 absolute time stamp replaces the clock but keeps the clock's 5 top bits.
//!
//! The code is written from the documented behaviour (see `research/ftrace-kbuffer-format.md`),
//! not translated from the C source. Where the C library would read outside the buffer or loop
//! forever on a corrupt page, this reader stops instead: the walk ends, [`error`](KBuffer::error)
//! says why, and nothing panics on arbitrary bytes.
//!
//! The old (pre-2.6.31) ring-buffer format is not supported.
//!
//! The reader and its walk are here; the machine it reads for (`machine`), its errors
//! (`error`) and the bounds-checked word reads every step goes through (`words`) are their
//! own modules.
//!
//! ```
//! use typhon_trace::kbuffer::{Endian, KBuffer, LongSize};
//! use typhon_recorder::page::PageWriter;
//!
//! let mut w = PageWriter::new(4096).unwrap();
//! w.set_missed(3).unwrap();
//! w.try_push(1_000, b"hello").unwrap();
//! w.try_push(1_250, b"world!!!").unwrap();
//! let page = w.finish().to_vec();
//!
//! let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
//! kb.load_subbuffer(&page).unwrap();
//! assert_eq!(kb.missed_events(), 3);
//! let mut seen = Vec::new();
//! while let Some(ev) = kb.read_event() {
//!     seen.push((ev.timestamp, ev.data.to_vec()));
//!     kb.next_event();
//! }
//! assert_eq!(seen, vec![(1_000, b"hello\0\0\0".to_vec()), (1_250, b"world!!!".to_vec())]);
//! assert_eq!(kb.error(), None);
//! ```

mod error;
mod machine;
mod words;

pub use error::KBufferError;
pub use machine::{Endian, LongSize};

use words::{bytes_range, read4, read8, read_long, write4, write8};

const COMMIT_MASK: u32 = (1 << 27) - 1;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const TS_SHIFT: u32 = 27;
/// The top 5 bits of the clock, which a type-31 absolute stamp does not carry.
const TS_MSB: u64 = 0xF8 << 56;

const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;

/// One data record as [`KBuffer::read_event`] returns it.
///
/// ```
/// # use typhon_trace::kbuffer::*;
/// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
/// # w.try_push(9, &[1, 2, 3]).unwrap();
/// # let page = w.finish().to_vec();
/// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
/// kb.load_subbuffer(&page).unwrap();
/// let ev = kb.read_event().unwrap();
/// assert_eq!((ev.timestamp, ev.data, ev.data_offset), (9, &[1, 2, 3, 0][..], 20));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    /// The record's timestamp (the running clock of the page walk), as `*ts` in C.
    pub timestamp: u64,
    /// The payload, padded to 4 bytes: `event_size()` bytes at the pointer C returns (empty for the
    /// bogus negative-size records that zero words inside the commit produce).
    pub data: &'a [u8],
    /// Offset of the payload from the start of the sub-buffer (the C pointer minus the page).
    pub data_offset: usize,
}

/// The reader state: one loaded sub-buffer and a position in it (C's `struct kbuffer`).
///
/// All positions are `u32` with C's wrapping arithmetic so that corrupt lengths give the same
/// numbers as the C library; the getters return C's `int`.
#[derive(Clone, Debug)]
pub struct KBuffer<'a> {
    long_size: LongSize,
    big: bool,
    page: Option<&'a [u8]>,
    timestamp: u64,
    lost_events: i64,
    /// Payload of the current record, from the data start.
    index: u32,
    /// Header of the current record, from the data start.
    curr: u32,
    /// The record after the current one, from the data start.
    next: u32,
    /// Commit size.
    size: u32,
    /// Offset of the data from the sub-buffer start (12 or 16).
    start: u32,
    /// `curr` of the first data record.
    first: u32,
    fault: Option<KBufferError>,
}

impl<'a> KBuffer<'a> {
    /// `kbuffer_alloc(size, endian)`: a reader for pages of this long size and byte order.
    ///
    /// ```
    /// use typhon_trace::kbuffer::{Endian, KBuffer, LongSize};
    /// let kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// assert!(kb.read_event().is_none()); // nothing loaded yet
    /// ```
    pub fn new(long_size: LongSize, endian: Endian) -> Self {
        KBuffer {
            long_size,
            big: endian == Endian::Big,
            page: None,
            timestamp: 0,
            lost_events: 0,
            index: 0,
            curr: 0,
            next: 0,
            size: 0,
            start: 0,
            first: 0,
            fault: None,
        }
    }

    /// Splits a record header word into (type_len, time_delta).
    fn split_header(&self, w: u32) -> (u32, u32) {
        if self.big {
            (w >> 27, w & ((1 << 27) - 1))
        } else {
            (w & 31, w >> 5)
        }
    }

    /// Decodes the record at `curr`: updates the clock, `index` and `next`; returns its type_len.
    fn update_pointers(&mut self, page: &[u8]) -> Result<u32, KBufferError> {
        let at = self.start as usize + self.curr as usize;
        let (type_len, delta) = self.split_header(read4(self.big, page, at)?);
        let mut delta = u64::from(delta);
        let (payload_at, length): (usize, i32) = match type_len {
            TYPE_PADDING => (at + 4, read4(self.big, page, at + 4)? as i32),
            TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                let high = u64::from(read4(self.big, page, at + 4)?);
                let msb = if type_len == TYPE_TIME_STAMP {
                    self.timestamp & TS_MSB
                } else {
                    0
                };
                delta = ((high << TS_SHIFT).wrapping_add(delta)) | msb;
                (at + 8, 0)
            }
            0 => {
                let len = (read4(self.big, page, at + 4)?.wrapping_sub(4)) as i32;
                (at + 8, len.wrapping_add(3) & !3)
            }
            n => (at + 4, (n * 4) as i32),
        };
        if type_len == TYPE_TIME_STAMP {
            self.timestamp = delta;
        } else {
            self.timestamp = self.timestamp.wrapping_add(delta);
        }
        self.index = (payload_at - self.start as usize) as u32;
        self.next = self.index.wrapping_add(length as u32);
        if self.next <= self.curr {
            return Err(KBufferError::NoProgress { offset: at });
        }
        if type_len < TYPE_PADDING && self.next > self.index {
            // A data record: its payload is handed out, so it must be inside the buffer.
            let end = self.start as usize + self.next as usize;
            if end > page.len() {
                let offset = self.start as usize + self.index as usize;
                return Err(KBufferError::OutOfBounds {
                    offset,
                    len: end - offset,
                    buffer_len: page.len(),
                });
            }
        }
        Ok(type_len)
    }

    /// Moves to the next data record, skipping padding and time records. Ok(false) at the end.
    fn advance(&mut self) -> bool {
        let Some(page) = self.page else { return false };
        if self.fault.is_some() {
            return false;
        }
        loop {
            self.curr = self.next;
            if self.next >= self.size {
                return false;
            }
            match self.update_pointers(page) {
                Ok(TYPE_PADDING | TYPE_TIME_EXTEND | TYPE_TIME_STAMP) => continue,
                Ok(_) => return true,
                Err(e) => {
                    self.fault = Some(e);
                    self.curr = self.size;
                    self.next = self.size;
                    self.index = self.size;
                    return false;
                }
            }
        }
    }

    /// `kbuffer_load_subbuffer()`: load a page, reset the position and move to its first data
    /// record (skipping leading time extends and padding). The page is borrowed, not copied.
    ///
    /// `page` should hold the whole sub-buffer; only the header, the records up to the commit size
    /// and the stored missed count are read. Errors if the buffer is too short for the header or
    /// the stored count, or if the walk to the first record finds a corrupt record; in the last
    /// case the page stays loaded (the header getters answer) and the reader is at the end.
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # w.try_push(9, &[1, 2, 3]).unwrap();
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// assert_eq!(kb.timestamp(), 9);
    /// assert_eq!(kb.subbuffer_size(), 8);
    /// ```
    pub fn load_subbuffer(&mut self, page: &'a [u8]) -> Result<(), KBufferError> {
        let start = 8 + self.long_size.bytes();
        self.fault = None;
        self.start = start as u32;
        if page.len() < start {
            self.page = None;
            return Err(KBufferError::HeaderTruncated {
                len: page.len(),
                need: start,
            });
        }
        self.timestamp = read8(self.big, page, 0)?;
        let flags = read_long(self.long_size, self.big, page, 8)?;
        self.size = (flags as u32) & COMMIT_MASK;
        self.curr = 0;
        self.index = 0;
        self.next = 0;
        self.first = 0;
        self.lost_events = if flags & MISSED_EVENTS == 0 {
            0
        } else if flags & MISSED_STORED == 0 {
            -1
        } else {
            match read_long(self.long_size, self.big, page, start + self.size as usize) {
                Ok(n) => n as i64,
                Err(e) => {
                    self.page = None;
                    return Err(e);
                }
            }
        };
        self.page = Some(page);
        self.advance();
        self.first = self.curr;
        match self.fault {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn current(&self) -> Option<Event<'a>> {
        let page = self.page?;
        if self.curr >= self.size {
            return None;
        }
        let data_offset = self.start as usize + self.index as usize;
        let len = self.next.wrapping_sub(self.index) as i32;
        let data = if len > 0 {
            page.get(data_offset..data_offset + len as usize)
                .unwrap_or(&[])
        } else {
            &[]
        };
        Some(Event {
            timestamp: self.timestamp,
            data,
            data_offset,
        })
    }

    /// `kbuffer_read_event()`: the current data record, or `None` past the last one. Does not
    /// move.
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # w.try_push(9, &[1, 2, 3]).unwrap();
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// assert_eq!(kb.read_event(), kb.read_event());
    /// assert_eq!(kb.read_event().unwrap().timestamp, 9);
    /// ```
    pub fn read_event(&self) -> Option<Event<'a>> {
        self.current()
    }

    /// `kbuffer_next_event()`: move to the next data record and return it, or `None` at the end.
    /// Called right after a load it skips the first record (as in C).
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # w.try_push(9, &[1; 4]).unwrap();
    /// # w.try_push(12, &[2; 4]).unwrap();
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// assert_eq!(kb.next_event().unwrap().timestamp, 12);
    /// assert!(kb.next_event().is_none());
    /// ```
    pub fn next_event(&mut self) -> Option<Event<'a>> {
        if self.advance() {
            self.current()
        } else {
            None
        }
    }

    /// `kbuffer_read_at_offset()`: reload the page and move to the first data record whose header
    /// is at or after `offset` (from the sub-buffer start; anything below the header size means
    /// the first record). `None` past the last record, and for a negative offset (which C compares
    /// as unsigned).
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # w.try_push(9, &[1; 4]).unwrap();
    /// # w.try_push(12, &[2; 8]).unwrap();
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// assert_eq!(kb.read_at_offset(17).unwrap().timestamp, 12); // rounds up to the record at 24
    /// assert_eq!(kb.curr_offset(), 24);
    /// assert!(kb.read_at_offset(25).is_none());
    /// ```
    pub fn read_at_offset(&mut self, offset: i32) -> Option<Event<'a>> {
        let page = self.page?;
        // C compares the int with an unsigned int: a negative offset is a huge one.
        let offset = offset as u32;
        let target = offset.saturating_sub(self.start);
        let _ = self.load_subbuffer(page);
        let mut ev = self.read_event();
        while self.curr < target {
            ev = self.next_event();
            if ev.is_none() {
                break;
            }
        }
        ev
    }

    /// `kbuffer_missed_events()`: records lost before this page, reported only while the current
    /// record is at data offset 0: the stored count truncated to `int`, `-1` if the page has
    /// `MISSED_EVENTS` without `MISSED_STORED`, else 0.
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # w.set_missed(42).unwrap();
    /// # w.try_push(9, &[1; 4]).unwrap();
    /// # w.try_push(10, &[1; 4]).unwrap();
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// assert_eq!(kb.missed_events(), 42);
    /// kb.next_event();
    /// assert_eq!(kb.missed_events(), 0);
    /// ```
    pub fn missed_events(&self) -> i32 {
        if self.curr != 0 {
            0
        } else {
            self.lost_events as i32
        }
    }

    /// `kbuffer_event_size()`: payload bytes of the current record (padded to 4; `-4` for a zero
    /// word inside the commit).
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # w.try_push(9, &[1; 6]).unwrap();
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// assert_eq!(kb.event_size(), 8);
    /// ```
    pub fn event_size(&self) -> i32 {
        self.next.wrapping_sub(self.index) as i32
    }

    /// `kbuffer_curr_size()`: the whole current record, header and length word included (a time
    /// extend before it not included).
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # w.try_push(9, &[1; 120]).unwrap();
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// assert_eq!((kb.event_size(), kb.curr_size()), (120, 128));
    /// ```
    pub fn curr_size(&self) -> i32 {
        self.next.wrapping_sub(self.curr) as i32
    }

    /// `kbuffer_curr_offset()`: offset of the current record's header from the sub-buffer start
    /// (16 for the first record of a 64-bit page); usable with
    /// [`read_at_offset`](Self::read_at_offset).
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # w.try_push(9, &[1; 4]).unwrap();
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// assert_eq!(kb.curr_offset(), 16);
    /// kb.next_event();
    /// assert_eq!(kb.curr_offset(), 24); // past the end: start + commit
    /// ```
    pub fn curr_offset(&self) -> i32 {
        self.curr.wrapping_add(self.start) as i32
    }

    /// `kbuffer_curr_index()`: offset of the current record's header from the data start.
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # w.try_push(9, &[1; 4]).unwrap();
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// assert_eq!(kb.curr_index(), 0);
    /// ```
    pub fn curr_index(&self) -> i32 {
        self.curr as i32
    }

    /// `kbuffer_start_of_data()`: offset from the sub-buffer start of the first data record's
    /// header (past any leading time extend).
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # w.try_push(9, &[1; 4]).unwrap();
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Four, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap(); // read as a 32-bit page: data starts at 12
    /// assert_eq!(kb.start_of_data(), 12);
    /// ```
    pub fn start_of_data(&self) -> i32 {
        self.first.wrapping_add(self.start) as i32
    }

    /// `kbuffer_timestamp()`: the running timestamp of the current record.
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # w.try_push(9, &[1; 4]).unwrap();
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// assert_eq!(kb.timestamp(), 9);
    /// ```
    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }

    /// `kbuffer_subbuffer_size()`: the commit size, i.e. where the last record ends relative to
    /// the data start — not the page size.
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # w.try_push(9, &[1; 4]).unwrap();
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// assert_eq!(kb.subbuffer_size(), 8);
    /// ```
    pub fn subbuffer_size(&self) -> i32 {
        self.size as i32
    }

    /// Why the walk stopped early on a corrupt page, if it did (no C counterpart: where this
    /// reader stops, the C library reads out of bounds or loops).
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// let mut page = vec![0u8; 24];
    /// page[8] = 100; // commit 100, but the buffer ends at 24
    /// page[16] = 1; // a 4-byte record at 16, then the buffer ends
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// assert!(kb.next_event().is_none());
    /// assert!(matches!(kb.error(), Some(KBufferError::OutOfBounds { .. })));
    /// ```
    pub fn error(&self) -> Option<KBufferError> {
        self.fault
    }

    /// The loaded sub-buffer, if any.
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// let kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// assert!(kb.subbuffer().is_none());
    /// ```
    pub fn subbuffer(&self) -> Option<&'a [u8]> {
        self.page
    }

    /// `kbuffer_read_buffer()` as libtraceevent 1.8.2 and later have it (1.8.0 and 1.8.1
    /// copied a whole page as it was, missed flags without their count, and left out a record
    /// ending exactly at the end of `buffer`): copies what is left of the page into `buffer`
    /// the way a `read()` of `trace_pipe_raw` would, as a sub-buffer that loads on its own.
    ///
    /// - It writes a header whose timestamp is the current record's time, then the records from
    ///   the current one on that fit (one ending exactly at the end of `buffer` included), with
    ///   the first record's delta zeroed. The commit is the bytes copied.
    /// - If the copy starts at the page's first record and the page reports missed events, the
    ///   commit carries the missed flag, and the count is stored after the data with the
    ///   "stored" flag when it fits in `buffer`. (C stores it when it fits within one long past
    ///   the end of the buffer, writing out of bounds; here it must fit. C also sign-extends
    ///   the flagged commit into the high half of an 8-byte word, which readers mask off; here
    ///   that half is 0.)
    /// - It returns the data index after the last record copied, and leaves the reader at the
    ///   first record not copied. `Ok(0)` at the end of the page, `Ok(-1)` if not even the
    ///   current record fits.
    ///
    /// Errors if nothing is loaded or the page is corrupt where C would read out of bounds.
    ///
    /// ```
    /// # use typhon_trace::kbuffer::*;
    /// # let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    /// # for i in 0..10 { w.try_push(100 + i, &[i as u8; 4]).unwrap(); }
    /// # let page = w.finish().to_vec();
    /// let mut kb = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb.load_subbuffer(&page).unwrap();
    /// kb.next_event();
    /// let mut out = [0u8; 16 + 8 * 3];
    /// assert_eq!(kb.read_buffer(&mut out), Ok(32)); // records 1..=3 fill it exactly
    /// let mut kb2 = KBuffer::new(LongSize::Eight, Endian::Little);
    /// kb2.load_subbuffer(&out).unwrap();
    /// assert_eq!(kb2.timestamp(), 101);
    /// assert_eq!(kb2.subbuffer_size(), 24);
    /// assert_eq!(kb.read_event().unwrap().timestamp, 104);
    /// ```
    pub fn read_buffer(&mut self, buffer: &mut [u8]) -> Result<i32, KBufferError> {
        let page = self.page.ok_or(KBufferError::NotLoaded)?;
        let len = buffer.len().min(i32::MAX as usize) as u32;
        let start = self.start;
        if self.curr >= self.size {
            return Ok(0);
        }
        if len < start || len < self.next.wrapping_sub(self.curr).wrapping_add(start) {
            return Ok(-1);
        }
        write8(self.big, buffer, 0, self.timestamp);
        let room = len - start;
        let save_curr = self.curr;
        let mut last_next = self.next;
        while room >= self.next.wrapping_sub(save_curr) {
            last_next = self.next;
            if self.next_event().is_none() {
                break;
            }
        }
        let n = last_next.wrapping_sub(save_curr) as usize;
        if n == 0 {
            return Ok(0);
        }
        let src = bytes_range(page, (start + save_curr) as usize, n)?;
        let dst_start = start as usize;
        if dst_start + n > buffer.len() {
            return Err(KBufferError::OutOfBounds {
                offset: dst_start,
                len: n,
                buffer_len: buffer.len(),
            });
        }
        buffer[dst_start..dst_start + n].copy_from_slice(src);
        let word = read4(self.big, buffer, dst_start)?;
        let word = if self.big {
            word & !((1 << 27) - 1)
        } else {
            word & 31
        };
        write4(self.big, buffer, dst_start, word);
        let mut commit = n as u64;
        if save_curr == 0 && self.lost_events != 0 {
            let at = dst_start + n;
            let word = match self.long_size {
                LongSize::Eight => 8,
                LongSize::Four => 4,
            };
            if at + word <= buffer.len() {
                match self.long_size {
                    LongSize::Eight => write8(self.big, buffer, at, self.lost_events as u64),
                    LongSize::Four => write4(self.big, buffer, at, self.lost_events as u32),
                }
                commit |= MISSED_STORED;
            }
            commit |= MISSED_EVENTS;
        }
        match self.long_size {
            LongSize::Eight => write8(self.big, buffer, 8, commit),
            LongSize::Four => write4(self.big, buffer, 8, commit as u32),
        }
        Ok(last_next as i32)
    }
}
