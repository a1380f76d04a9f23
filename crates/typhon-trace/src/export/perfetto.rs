//! Perfetto's protobuf trace: a `Trace` of `TracePacket`s, encoded by hand (a few fields of
//! `perfetto/trace/perfetto_trace.proto`, numbers below), read by ui.perfetto.dev and
//! `trace_processor`.
//!
//! ```text
//!  Trace.packet (1), bundled: TracePacket{ compressed_packets(50) = zlib(Trace{ packet… }) }
//!  inside, on the one sequence (trusted_packet_sequence_id(10) = 1):
//!    clocks    TracePacket{ sequence_flags(13) = INCREMENTAL_STATE_CLEARED,
//!                           trace_packet_defaults(59){ timestamp_clock_id(58) = 64 },
//!                           clock_snapshot(6){ clocks(1){ clock_id(1), timestamp(2),
//!                                                         is_incremental(3) }…,
//!                                              primary_trace_clock(2) } }
//!    process   track_descriptor(60){ uuid(1)=1, process(3){ pid(1), process_name(6) } }
//!    thread    track_descriptor{ uuid=2+track, thread(4){ pid(1), tid(2), thread_name(5) } }
//!    overlap   track_descriptor{ uuid=2+track, parent_uuid(5)=the thread's, name(2) }
//!    counter   track_descriptor{ uuid=COUNTER_UUIDS+n, parent_uuid=the thread's, name,
//!                                counter(8){} }: one per counter name per thread, before its
//!                                first value
//!    value     TracePacket{ timestamp, track_event{ type = 4 counter; track_uuid;
//!                                                   counter_value(30) | double_counter_value(44) } }
//!    event     TracePacket{ timestamp(8) [, timestamp_clock_id(58) = 65],
//!                           sequence_flags = NEEDS_INCREMENTAL_STATE,
//!                           interned_data(12){ event_names(2){ iid(1), name(2) },
//!                                              debug_annotation_names(3){ iid(1), name(2) } }
//!                                              (the names this packet uses first),
//!                           track_event(11){ type(9): 1 begin, 2 end, 3 instant; track_uuid(11);
//!                                            name_iid(10); debug_annotations(4){ name_iid(1),
//!                                            bool_value(2) | uint_value(3) | int_value(4) |
//!                                            double_value(5) | string_value(6) };
//!                                            flow_ids(47): fixed64 } }
//! ```
//!
//! What makes it small (smaller than the trace.dat it comes from):
//! - Names are interned, as Perfetto's own SDK does: event names and argument names are each
//!   written once, in the first packet that uses them, and referred to by iid afterwards.
//! - Timestamps are incremental: clock 64, the sequence's default (TracePacketDefaults), is an
//!   incremental clock, so each event carries the nanoseconds since the previous one (one to
//!   three bytes; the engine hands events out in time order). An event earlier than the one
//!   before it (a span longer than the engine's window) carries its absolute time on clock
//!   65, the same time base but absolute.
//! - No argument repeats what the event says (see `args::shown_args`).
//! - Packets travel in zlib-compressed bundles, which trace_processor unpacks in place, as it
//!   does for traces the Perfetto service compresses.
//!
//! The clock snapshot ties clocks 64 and 65 (the file's CLOCK_MONOTONIC ns) to REALTIME
//! through the file's wall-clock anchor (UNIX ns at the session's start), and makes REALTIME
//! the trace's clock: trace_processor lays several recordings, from one machine or several,
//! on one wall-clock timeline. A file without an anchor maps them to MONOTONIC instead.
//!
//! ```
//! use typhon_trace::export::{perfetto, Timeline};
//! let mut out = Vec::new();
//! perfetto::write(&Timeline::default(), &mut out).unwrap();
//! // One packet (field 1, length-delimited): the bundle.
//! assert_eq!(out[0], 0x0a);
//! ```

use super::args::{event_name, field_args, shown_args, Arg};
use super::engine::{Item, Kind, Sink};
use super::fnv::FnvMap;
use super::timeline::{Thread, Timeline, Track};
use std::io::{self, Write};
use typhon_recorder::codec::records;

// Field numbers (perfetto_trace.proto).
const TRACE_PACKET: u32 = 1;
const PACKET_TIMESTAMP: u32 = 8;
const PACKET_SEQUENCE_ID: u32 = 10;
const PACKET_TRACK_EVENT: u32 = 11;
const PACKET_INTERNED_DATA: u32 = 12;
const PACKET_SEQUENCE_FLAGS: u32 = 13;
const PACKET_TRACK_DESCRIPTOR: u32 = 60;
const PACKET_CLOCK_SNAPSHOT: u32 = 6;
const PACKET_COMPRESSED: u32 = 50;
const PACKET_TIMESTAMP_CLOCK_ID: u32 = 58;
const PACKET_DEFAULTS: u32 = 59;
const DEFAULTS_TIMESTAMP_CLOCK_ID: u32 = 58;
const SNAPSHOT_CLOCKS: u32 = 1;
const SNAPSHOT_PRIMARY_CLOCK: u32 = 2;
const CLOCK_ID: u32 = 1;
const CLOCK_TIMESTAMP: u32 = 2;
const CLOCK_INCREMENTAL: u32 = 3;
const TRACK_UUID: u32 = 1;
const TRACK_NAME: u32 = 2;
const TRACK_PROCESS: u32 = 3;
const TRACK_THREAD: u32 = 4;
const TRACK_PARENT_UUID: u32 = 5;
const PROCESS_PID: u32 = 1;
const PROCESS_NAME: u32 = 6;
const THREAD_PID: u32 = 1;
const THREAD_TID: u32 = 2;
const THREAD_NAME: u32 = 5;
const EVENT_DEBUG_ANNOTATIONS: u32 = 4;
const EVENT_TYPE: u32 = 9;
const EVENT_TRACK_UUID: u32 = 11;
const EVENT_NAME_IID: u32 = 10;
const EVENT_NAME: u32 = 23;
const EVENT_FLOW_IDS: u32 = 47;
const ANNOTATION_NAME_IID: u32 = 1;
const ANNOTATION_NAME: u32 = 10;
const INTERNED_EVENT_NAMES: u32 = 2;
const INTERNED_ANNOTATION_NAMES: u32 = 3;
const INTERNED_IID: u32 = 1;
const INTERNED_NAME: u32 = 2;
const ANNOTATION_BOOL: u32 = 2;
const ANNOTATION_UINT: u32 = 3;
const ANNOTATION_INT: u32 = 4;
const ANNOTATION_DOUBLE: u32 = 5;
const ANNOTATION_STRING: u32 = 6;

const TYPE_SLICE_BEGIN: u64 = 1;
const TYPE_SLICE_END: u64 = 2;
const TYPE_INSTANT: u64 = 3;
const TYPE_COUNTER: u64 = 4;
const TRACK_COUNTER: u32 = 8;
const EVENT_COUNTER_VALUE: u32 = 30;
const EVENT_DOUBLE_COUNTER_VALUE: u32 = 44;
/// Counter tracks' uuids start here, far above the `2 + track` of threads and lanes.
const COUNTER_UUIDS: u64 = 1 << 62;
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
/// The one packet sequence this writer uses.
const SEQUENCE: u64 = 1;
const PROCESS_UUID: u64 = 1;
/// BuiltinClock values.
const CLOCK_REALTIME: u64 = 1;
const CLOCK_MONOTONIC: u64 = 3;
/// The sequence's incremental clock (sequence-scoped ids are 64..128) and its absolute twin.
const CLOCK_DELTA: u64 = 64;
const CLOCK_ABSOLUTE: u64 = 65;
/// Uncompressed bytes per bundle.
const BUNDLE: usize = 1 << 18;

/// A protobuf message under construction.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn tag(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }
    fn uint(&mut self, field: u32, v: u64) {
        self.tag(field, 0);
        self.varint(v);
    }
    /// int32 and int64 alike: a negative value is its 64-bit two's complement.
    fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }
    fn double(&mut self, field: u32, v: f64) {
        self.fixed64(field, v.to_bits());
    }
    fn fixed64(&mut self, field: u32, v: u64) {
        self.tag(field, 1);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.tag(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn msg(&mut self, field: u32, m: &Msg) {
        self.bytes(field, &m.0);
    }
}

/// Strings interned of one kind at most: later new ones are written in place (a file of a
/// million distinct span names would otherwise hold them all).
const INTERNED_MAX: usize = 1 << 14;

/// Iids of one kind of interned string; a new string's entry goes into the packet that first
/// uses it.
#[derive(Default)]
struct Interner {
    ids: FnvMap<String, u64>,
}

impl Interner {
    /// Names `s` in `ev`: by its iid (field `iid_field`), adding its entry (field `list` of
    /// InternedData) to `new` the first time, or once [`INTERNED_MAX`] strings are interned
    /// and `s` is not among them, in place (field `name_field`).
    fn name(&mut self, s: &str, ev: &mut Msg, new: &mut Msg, fields: (u32, u32, u32)) {
        let (list, iid_field, name_field) = fields;
        let id = match self.ids.get(s) {
            Some(&id) => id,
            None if self.ids.len() >= INTERNED_MAX => return ev.bytes(name_field, s.as_bytes()),
            None => {
                let id = self.ids.len() as u64 + 1;
                self.ids.insert(s.to_string(), id);
                let mut entry = Msg::default();
                entry.uint(INTERNED_IID, id);
                entry.bytes(INTERNED_NAME, s.as_bytes());
                new.msg(list, &entry);
                id
            }
        };
        ev.uint(iid_field, id);
    }
}

/// (InternedData list, iid field, in-place field) of event and annotation names.
const EVENT_NAMES: (u32, u32, u32) = (INTERNED_EVENT_NAMES, EVENT_NAME_IID, EVENT_NAME);
const ANNOTATION_NAMES: (u32, u32, u32) = (
    INTERNED_ANNOTATION_NAMES,
    ANNOTATION_NAME_IID,
    ANNOTATION_NAME,
);

/// Writes `t` as a Perfetto trace (without a wall-clock anchor: its times map to MONOTONIC).
///
/// # Errors
/// Those of `out`.
pub fn write(t: &Timeline<'_>, out: &mut impl Write) -> io::Result<()> {
    let mut w = Writer::new(out, t.pid, &t.process_name, None)?;
    t.replay(&mut w)?;
    w.finish()
}

/// The recording's clock anchor: CLOCK_MONOTONIC ns and UNIX ns at the same moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    /// CLOCK_MONOTONIC ns (the file's time base).
    pub mono_ns: u64,
    /// UNIX ns at `mono_ns`.
    pub wall_ns: i64,
}

/// The streaming Perfetto writer: each packet is written as it comes, into the current
/// bundle.
pub(super) struct Writer<'o, W: Write> {
    out: &'o mut W,
    pid: i64,
    /// The clock-64 time of the previous event (the incremental clock's state).
    last: u64,
    /// Encoded `Trace.packet` entries not yet compressed.
    bundle: Vec<u8>,
    names: Interner,
    arg_names: Interner,
    // Reused for every event: one allocation each for the whole export.
    head: Msg,
    ev: Msg,
    interned: Msg,
    packet: Msg,
    a: Msg,
    /// Counter tracks described so far: (thread track, counter name) → uuid.
    counters: FnvMap<(u32, String), u64>,
}

impl<'o, W: Write> Writer<'o, W> {
    /// Starts the trace: the sequence's clocks, then the process's track.
    pub(super) fn new(
        out: &'o mut W,
        pid: i64,
        process_name: &str,
        anchor: Option<Anchor>,
    ) -> io::Result<Self> {
        // The incremental clock starts at the anchor (a record before it is written absolute).
        let start = anchor.map_or(0, |a| a.mono_ns);
        let mut w = Writer {
            out,
            pid,
            last: start,
            bundle: Vec::with_capacity(BUNDLE + 4096),
            names: Interner::default(),
            arg_names: Interner::default(),
            head: Msg::default(),
            ev: Msg::default(),
            interned: Msg::default(),
            packet: Msg::default(),
            a: Msg::default(),
            counters: FnvMap::default(),
        };
        let mut snapshot = Msg::default();
        let mut clock = |id: u64, ts: u64, incremental: bool| {
            let mut c = Msg::default();
            c.uint(CLOCK_ID, id);
            c.uint(CLOCK_TIMESTAMP, ts);
            if incremental {
                c.uint(CLOCK_INCREMENTAL, 1);
            }
            snapshot.msg(SNAPSHOT_CLOCKS, &c);
        };
        clock(CLOCK_DELTA, start, true);
        clock(CLOCK_ABSOLUTE, start, false);
        let primary = match anchor {
            // REALTIME only, not MONOTONIC too: recordings of several machines share the
            // first, never the second.
            Some(a) => {
                clock(CLOCK_REALTIME, a.wall_ns as u64, false);
                CLOCK_REALTIME
            }
            None => {
                clock(CLOCK_MONOTONIC, 0, false);
                CLOCK_MONOTONIC
            }
        };
        snapshot.uint(SNAPSHOT_PRIMARY_CLOCK, primary);
        let mut defaults = Msg::default();
        defaults.uint(DEFAULTS_TIMESTAMP_CLOCK_ID, CLOCK_DELTA);
        let mut packet = Msg::default();
        packet.uint(PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
        packet.msg(PACKET_DEFAULTS, &defaults);
        packet.msg(PACKET_CLOCK_SNAPSHOT, &snapshot);
        w.emit(packet)?;
        let mut process = Msg::default();
        process.int(PROCESS_PID, pid);
        process.bytes(PROCESS_NAME, process_name.as_bytes());
        let mut desc = Msg::default();
        desc.uint(TRACK_UUID, PROCESS_UUID);
        desc.msg(TRACK_PROCESS, &process);
        let mut packet = Msg::default();
        packet.msg(PACKET_TRACK_DESCRIPTOR, &desc);
        w.emit(packet)?;
        Ok(w)
    }

    /// Adds `packet` to the bundle as one `Trace.packet` (its tag and length, then its bytes)
    /// on the sequence, and hands it back for reuse.
    fn emit(&mut self, mut packet: Msg) -> io::Result<Msg> {
        packet.uint(PACKET_SEQUENCE_ID, SEQUENCE);
        self.head.0.clear();
        self.head.tag(TRACE_PACKET, 2);
        self.head.varint(packet.0.len() as u64);
        self.bundle.extend_from_slice(&self.head.0);
        self.bundle.extend_from_slice(&packet.0);
        if self.bundle.len() >= BUNDLE {
            self.flush_bundle()?;
        }
        Ok(packet)
    }

    /// Writes the bundle, compressed, as one `TracePacket{ compressed_packets }`.
    fn flush_bundle(&mut self) -> io::Result<()> {
        if self.bundle.is_empty() {
            return Ok(());
        }
        let mut z = flate2::write::ZlibEncoder::new(
            Vec::with_capacity(self.bundle.len() / 4),
            flate2::Compression::fast(),
        );
        z.write_all(&self.bundle)?;
        let z = z.finish()?;
        self.bundle.clear();
        let mut head = Msg::default();
        let mut inner = Msg::default();
        inner.tag(PACKET_COMPRESSED, 2);
        inner.varint(z.len() as u64);
        head.tag(TRACE_PACKET, 2);
        head.varint((inner.0.len() + z.len()) as u64);
        self.out.write_all(&head.0)?;
        self.out.write_all(&inner.0)?;
        self.out.write_all(&z)
    }

    /// Writes what is left of the bundle.
    pub(super) fn finish(mut self) -> io::Result<()> {
        self.flush_bundle()
    }

    /// One TrackEvent packet of type `ty` at `ts`.
    fn event(&mut self, it: &Item<'_>, ty: u64, ts: u64, with_body: bool) -> io::Result<()> {
        let mut ev = std::mem::take(&mut self.ev);
        let mut interned = std::mem::take(&mut self.interned);
        let mut packet = std::mem::take(&mut self.packet);
        ev.0.clear();
        interned.0.clear();
        ev.uint(EVENT_TYPE, ty);
        ev.uint(EVENT_TRACK_UUID, track_uuid(it.track as usize));
        let (arg_names, a) = (&mut self.arg_names, &mut self.a);
        // An argument's value, or (None) the boolean true.
        let mut arg = |ev: &mut Msg, interned: &mut Msg, name: &str, v: Option<Arg<'_>>| {
            a.0.clear();
            arg_names.name(name, a, interned, ANNOTATION_NAMES);
            match v {
                Some(Arg::U(u)) => a.uint(ANNOTATION_UINT, u),
                Some(Arg::I(i)) => a.int(ANNOTATION_INT, i),
                Some(Arg::S(s)) => a.bytes(ANNOTATION_STRING, s.as_bytes()),
                Some(Arg::F(f)) => a.double(ANNOTATION_DOUBLE, f),
                Some(Arg::B(b)) => a.uint(ANNOTATION_BOOL, u64::from(b)),
                None => a.uint(ANNOTATION_BOOL, 1),
            }
            ev.msg(EVENT_DEBUG_ANNOTATIONS, a);
        };
        if with_body {
            if let Kind::Lost(n) = it.kind {
                self.names
                    .name("events lost", &mut ev, &mut interned, EVENT_NAMES);
                // "count" is always a number: a loss without one says so apart.
                match n {
                    Some(n) => arg(&mut ev, &mut interned, "count", Some(Arg::U(n))),
                    None => arg(&mut ev, &mut interned, "not_counted", None),
                }
            }
            if let Kind::Damaged(n) = it.kind {
                self.names
                    .name("events lost", &mut ev, &mut interned, EVENT_NAMES);
                arg(&mut ev, &mut interned, "not_counted", None);
                arg(&mut ev, &mut interned, "damaged_pages", Some(Arg::U(n)));
            }
            if let Some((rec, _)) = it.rec {
                self.names
                    .name(&event_name(rec), &mut ev, &mut interned, EVENT_NAMES);
                let shown = shown_args(rec);
                // A `tracing` span's fields, by their own names (interned as argument names:
                // a callsite's fields repeat in every slice of its spans).
                let fields = it.fields.map(|f| field_args(f, &shown)).unwrap_or_default();
                for (name, v, _) in shown {
                    arg(&mut ev, &mut interned, name, Some(v));
                }
                for (name, v) in fields {
                    arg(&mut ev, &mut interned, &name, Some(v));
                }
            }
            if it.flow != 0 {
                ev.fixed64(EVENT_FLOW_IDS, it.flow);
            }
        }
        packet.0.clear();
        if ts >= self.last {
            packet.uint(PACKET_TIMESTAMP, ts - self.last);
            self.last = ts;
        } else {
            packet.uint(PACKET_TIMESTAMP, ts);
            packet.uint(PACKET_TIMESTAMP_CLOCK_ID, CLOCK_ABSOLUTE);
        }
        if !interned.0.is_empty() {
            packet.msg(PACKET_INTERNED_DATA, &interned);
        }
        packet.uint(PACKET_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
        packet.msg(PACKET_TRACK_EVENT, &ev);
        self.packet = self.emit(packet)?;
        self.ev = ev;
        self.interned = interned;
        Ok(())
    }
}

impl<W: Write> Writer<'_, W> {
    /// A counter's value on its track (the thread's track for the counter's name, described
    /// the first time): Perfetto draws one counter track per name per thread.
    fn counter(&mut self, it: &Item<'_>) -> io::Result<()> {
        let Some(Ok((_, records::Record::Counter { value, name }))) =
            it.rec.map(|(r, _)| records::decode(r))
        else {
            return self.event(it, TYPE_INSTANT, it.ts, true);
        };
        let key = (it.track, name.to_string());
        let uuid = match self.counters.get(&key) {
            Some(&u) => u,
            None => {
                let u = COUNTER_UUIDS + self.counters.len() as u64;
                self.counters.insert(key, u);
                let mut desc = Msg::default();
                desc.uint(TRACK_UUID, u);
                desc.uint(TRACK_PARENT_UUID, track_uuid(it.track as usize));
                desc.bytes(TRACK_NAME, name.as_bytes());
                desc.msg(TRACK_COUNTER, &Msg::default());
                let mut packet = Msg::default();
                packet.msg(PACKET_TRACK_DESCRIPTOR, &desc);
                self.emit(packet)?;
                u
            }
        };
        let mut ev = Msg::default();
        ev.uint(EVENT_TYPE, TYPE_COUNTER);
        ev.uint(EVENT_TRACK_UUID, uuid);
        match value.as_i64() {
            Some(v) => ev.int(EVENT_COUNTER_VALUE, v),
            None => ev.fixed64(EVENT_DOUBLE_COUNTER_VALUE, value.as_f64().to_bits()),
        }
        let mut packet = std::mem::take(&mut self.packet);
        packet.0.clear();
        if it.ts >= self.last {
            packet.uint(PACKET_TIMESTAMP, it.ts - self.last);
            self.last = it.ts;
        } else {
            packet.uint(PACKET_TIMESTAMP, it.ts);
            packet.uint(PACKET_TIMESTAMP_CLOCK_ID, CLOCK_ABSOLUTE);
        }
        packet.msg(PACKET_TRACK_EVENT, &ev);
        self.packet = self.emit(packet)?;
        Ok(())
    }
}

impl<W: Write> Sink for Writer<'_, W> {
    fn track(
        &mut self,
        index: u32,
        track: Track,
        thread: &Thread,
        thread_track: u32,
        name: &str,
    ) -> io::Result<()> {
        let mut desc = Msg::default();
        desc.uint(TRACK_UUID, track_uuid(index as usize));
        if track.lane == 0 {
            let mut th = Msg::default();
            th.int(THREAD_PID, self.pid);
            th.int(THREAD_TID, thread.tid);
            th.bytes(THREAD_NAME, thread.name.as_bytes());
            desc.msg(TRACK_THREAD, &th);
        } else {
            desc.uint(TRACK_PARENT_UUID, track_uuid(thread_track as usize));
            desc.bytes(TRACK_NAME, name.as_bytes());
        }
        let mut packet = Msg::default();
        packet.msg(PACKET_TRACK_DESCRIPTOR, &desc);
        self.emit(packet).map(drop)
    }

    fn item(&mut self, it: &Item<'_>) -> io::Result<()> {
        match it.kind {
            Kind::Slice => self.event(it, TYPE_SLICE_BEGIN, it.ts, true),
            Kind::End => self.event(it, TYPE_SLICE_END, it.ts, false),
            Kind::Instant | Kind::Lost(_) | Kind::Damaged(_) => {
                self.event(it, TYPE_INSTANT, it.ts, true)
            }
            Kind::Counter => self.counter(it),
        }
    }
}

/// Track `i`'s uuid (1 is the process's).
fn track_uuid(i: usize) -> u64 {
    2 + i as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_negative_ints_follow_the_wire_format() {
        let mut m = Msg::default();
        m.uint(1, 300);
        assert_eq!(m.0, [0x08, 0xac, 0x02]);
        let mut m = Msg::default();
        m.int(2, -1);
        assert_eq!(m.0.len(), 11); // tag + ten bytes
        assert_eq!(m.0[10], 0x01);
        let mut m = Msg::default();
        m.fixed64(47, 5);
        assert_eq!(m.0[..2], [0xf9, 0x02]); // (47 << 3 | 1) as a varint
        assert_eq!(m.0[2..], 5u64.to_le_bytes());
    }

    /// The interner keeps INTERNED_MAX strings: a string it holds is named by its iid (again
    /// and again), one past the cap in place, each time, and the table stays at the cap.
    #[test]
    fn names_past_the_interned_cap_are_written_in_place() {
        let mut names = Interner::default();
        let name = |names: &mut Interner, s: &str| {
            let (mut ev, mut new) = (Msg::default(), Msg::default());
            names.name(s, &mut ev, &mut new, EVENT_NAMES);
            (ev.0, new.0)
        };
        for i in 0..INTERNED_MAX {
            let (ev, new) = name(&mut names, &format!("n{i}"));
            let mut want = Msg::default();
            want.uint(EVENT_NAME_IID, i as u64 + 1);
            assert_eq!(ev, want.0);
            assert!(!new.is_empty());
        }
        let (ev, new) = name(&mut names, "n0");
        assert_eq!((ev, new.len()), (vec![EVENT_NAME_IID as u8 * 8, 1], 0));
        for _ in 0..2 {
            let (ev, new) = name(&mut names, "late");
            let mut want = Msg::default();
            want.bytes(EVENT_NAME, b"late");
            assert_eq!((ev, new.len()), (want.0, 0));
        }
        assert_eq!(names.ids.len(), INTERNED_MAX);
    }
}
