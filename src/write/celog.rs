//! [`CeLog`]: a CeLog event described field by field, then written. The positional
//! [`celog_data`](crate::celog_data) keeps CE's `CeLogData` signature for ported code.

use crate::codec::celog::CELZONE_MISC;
use crate::write::api::celog_data_at;
use crate::write::WriteError;

/// One CeLog event to record (CEL_HEADER_V3, SPEC §4): its id and data, then what differs
/// from the defaults, then [`write`](CeLog::write). By default the event is in zone
/// `CELZONE_MISC` (no user zone), carries a timestamp read from the clock, and no flag.
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::codec::celog::{CELID_USER, CELZONE_HEAP};
/// use typhon_recorder::{sink::NullSink, CeLog, RecorderBuilder};
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// CeLog::new(CELID_USER, b"hello").write().unwrap();
/// CeLog::new(CELID_USER + 1, &[1, 2, 3]).zone_ce(CELZONE_HEAP).flag(7).write().unwrap();
/// CeLog::new(CELID_USER + 2, b"at").at(rec.now()).write().unwrap();
/// CeLog::new(CELID_USER + 3, b"").without_timestamp().write().unwrap();
/// // CE refuses id 90 (CELID_FLAGGED) and data over 4095 bytes; so does this.
/// assert!(CeLog::new(90, b"x").write().is_err());
/// assert_eq!(rec.finish().unwrap().user_written(), 5); // ThreadInfo + 4 events
/// ```
#[derive(Clone, Copy, Debug)]
#[must_use = "nothing is recorded until `write`"]
pub struct CeLog<'a> {
    id: u16,
    data: &'a [u8],
    zone_user: u32,
    zone_ce: u32,
    flag: Option<u16>,
    /// `Some(None)`: read the clock; `Some(Some(t))`: at `t`; `None`: no CeLog timestamp.
    timestamp: Option<Option<u64>>,
}

impl<'a> CeLog<'a> {
    /// Event `id` (below 0x3FFF, not 90) with `data` (at most 4095 bytes), in the defaults.
    ///
    /// ```
    /// let _e = typhon_recorder::CeLog::new(typhon_recorder::codec::celog::CELID_USER, b"x");
    /// ```
    pub const fn new(id: u16, data: &'a [u8]) -> Self {
        CeLog {
            id,
            data,
            zone_user: 0,
            zone_ce: CELZONE_MISC,
            flag: None,
            timestamp: Some(None),
        }
    }

    /// The CE zones the event belongs to (`dwZoneCE`): recorded if any is enabled
    /// ([`celog_set_zones`](crate::celog_set_zones)). Replaces the default `CELZONE_MISC`.
    ///
    /// ```
    /// use typhon_recorder::codec::celog::{CELID_USER, CELZONE_HEAP};
    /// typhon_recorder::CeLog::new(CELID_USER, b"x").zone_ce(CELZONE_HEAP).write().unwrap();
    /// ```
    pub const fn zone_ce(mut self, zones: u32) -> Self {
        self.zone_ce = zones;
        self
    }

    /// The user zones the event belongs to (`dwZoneUser`, default none).
    ///
    /// ```
    /// use typhon_recorder::codec::celog::CELID_USER;
    /// typhon_recorder::CeLog::new(CELID_USER, b"x").zone_user(0b10).write().unwrap();
    /// ```
    pub const fn zone_user(mut self, zones: u32) -> Self {
        self.zone_user = zones;
        self
    }

    /// Marks the event flagged with `flag` (CE's `fFlagged` and `wFlag`).
    ///
    /// ```
    /// use typhon_recorder::codec::celog::CELID_USER;
    /// typhon_recorder::CeLog::new(CELID_USER, b"x").flag(3).write().unwrap();
    /// ```
    pub const fn flag(mut self, flag: u16) -> Self {
        self.flag = Some(flag);
        self
    }

    /// Stamps the event at `ticks` (raw ticks, [`Recorder::now`](crate::Recorder::now))
    /// instead of reading the clock.
    ///
    /// ```
    /// use typhon_recorder::codec::celog::CELID_USER;
    /// typhon_recorder::CeLog::new(CELID_USER, b"x").at(1_000).write().unwrap();
    /// ```
    pub const fn at(mut self, ticks: u64) -> Self {
        self.timestamp = Some(Some(ticks));
        self
    }

    /// Writes no CeLog timestamp and reads no clock (CE's `fTimeStamp = FALSE`): the record
    /// takes the time of the thread's previous record.
    ///
    /// ```
    /// use typhon_recorder::codec::celog::CELID_USER;
    /// typhon_recorder::CeLog::new(CELID_USER, b"x").without_timestamp().write().unwrap();
    /// ```
    pub const fn without_timestamp(mut self) -> Self {
        self.timestamp = None;
        self
    }

    /// Records the event if its zones are enabled.
    ///
    /// # Errors
    /// As [`celog_data`](crate::celog_data): [`WriteError::Invalid`] for data over 4095 bytes
    /// or a reserved id, [`WriteError::TooLarge`] for an event larger than a page; each
    /// counted as refused while a recorder runs.
    ///
    /// ```
    /// use typhon_recorder::codec::celog::CELID_USER;
    /// assert!(typhon_recorder::CeLog::new(CELID_USER, &[0; 4096]).write().is_err());
    /// ```
    pub fn write(self) -> Result<(), WriteError> {
        celog_data_at(
            self.timestamp,
            self.id,
            self.data,
            self.zone_user,
            self.zone_ce,
            self.flag.unwrap_or(0),
            self.flag.is_some(),
        )
    }
}
