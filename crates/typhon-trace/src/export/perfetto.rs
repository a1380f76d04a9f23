//! Perfetto's protobuf trace: a `Trace` of `TracePacket`s, encoded by hand (a few fields of
//! `perfetto/trace/perfetto_trace.proto`, numbers below), read by ui.perfetto.dev and
//! `trace_processor`.
//!
//! ```text
//!  Trace.packet (1), one per:
//!    process   TracePacket{ sequence_flags(13)=INCREMENTAL_STATE_CLEARED on the first,
//!                           trusted_packet_sequence_id(10)=1,
//!                           track_descriptor(60){ uuid(1)=1, process(3){ pid(1), process_name(6) } } }
//!    thread    track_descriptor{ uuid=2+track, thread(4){ pid(1), tid(2), thread_name(5) } }
//!    overlap   track_descriptor{ uuid=2+track, parent_uuid(5)=the thread's, name(2) }
//!    event     TracePacket{ timestamp(8), trusted_packet_sequence_id(10)=1,
//!                           sequence_flags(13)=NEEDS_INCREMENTAL_STATE,
//!                           interned_data(12){ event_names(2){ iid(1), name(2) },
//!                                              debug_annotation_names(3){ iid(1), name(2) } }
//!                                              (the names this packet uses first),
//!                           track_event(11){ type(9): 1 begin, 2 end, 3 instant; track_uuid(11);
//!                                            name_iid(10); debug_annotations(4){ name_iid(1),
//!                                            uint_value(3) | int_value(4) | string_value(6) };
//!                                            flow_ids(47): fixed64 } }
//! ```
//!
//! Event names and argument names are interned, as Perfetto's own SDK does: each is written
//! once, in the first packet that uses it, and referred to by its iid afterwards. That halves
//! the size of a typical recording's export.
//!
//! Timestamps are the file's CLOCK_MONOTONIC nanoseconds, written without a clock id:
//! trace_processor takes them as its default clock, BOOTTIME, which runs ahead of MONOTONIC by
//! the time the machine spent suspended. On their own they read the same; merged with a system
//! trace they would be offset by that.
//!
//! ```
//! use typhon_trace::export::{perfetto, Timeline};
//! let mut out = Vec::new();
//! perfetto::write(&Timeline::default(), &mut out).unwrap();
//! // One packet (field 1, length-delimited): the process track.
//! assert_eq!(out[0], 0x0a);
//! ```

use super::args::{event_args, event_name, Arg};
use super::engine::{Item, Kind, Sink};
use super::fnv::FnvMap;
use super::timeline::{Thread, Timeline, Track};
use std::io::{self, Write};

// Field numbers (perfetto_trace.proto).
const TRACE_PACKET: u32 = 1;
const PACKET_TIMESTAMP: u32 = 8;
const PACKET_SEQUENCE_ID: u32 = 10;
const PACKET_TRACK_EVENT: u32 = 11;
const PACKET_INTERNED_DATA: u32 = 12;
const PACKET_SEQUENCE_FLAGS: u32 = 13;
const PACKET_TRACK_DESCRIPTOR: u32 = 60;
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
const EVENT_FLOW_IDS: u32 = 47;
const ANNOTATION_NAME_IID: u32 = 1;
const INTERNED_EVENT_NAMES: u32 = 2;
const INTERNED_ANNOTATION_NAMES: u32 = 3;
const INTERNED_IID: u32 = 1;
const INTERNED_NAME: u32 = 2;
const ANNOTATION_UINT: u32 = 3;
const ANNOTATION_INT: u32 = 4;
const ANNOTATION_STRING: u32 = 6;

const TYPE_SLICE_BEGIN: u64 = 1;
const TYPE_SLICE_END: u64 = 2;
const TYPE_INSTANT: u64 = 3;
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
/// The one packet sequence this writer uses.
const SEQUENCE: u64 = 1;
const PROCESS_UUID: u64 = 1;

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

/// Iids of one kind of interned string; a new string's entry goes into the packet that first
/// uses it.
#[derive(Default)]
struct Interner {
    ids: FnvMap<String, u64>,
}

impl Interner {
    /// The iid of `s`, adding its entry (field `list` of InternedData) to `new` the first time.
    fn iid(&mut self, s: &str, new: &mut Msg, list: u32) -> u64 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.ids.len() as u64 + 1;
        self.ids.insert(s.to_string(), id);
        let mut entry = Msg::default();
        entry.uint(INTERNED_IID, id);
        entry.bytes(INTERNED_NAME, s.as_bytes());
        new.msg(list, &entry);
        id
    }
}

/// Writes `t` as a Perfetto trace.
///
/// # Errors
/// Those of `out`.
pub fn write(t: &Timeline<'_>, out: &mut impl Write) -> io::Result<()> {
    let mut w = Writer::new(out, t.pid, &t.process_name)?;
    t.replay(&mut w)
}

/// The streaming Perfetto writer: each packet is written as it comes.
pub(super) struct Writer<'o, W: Write> {
    out: &'o mut W,
    pid: i64,
    first: bool,
    head: Msg,
    names: Interner,
    arg_names: Interner,
    // Reused for every event: one allocation each for the whole export.
    ev: Msg,
    interned: Msg,
    packet: Msg,
    a: Msg,
}

impl<'o, W: Write> Writer<'o, W> {
    /// Starts the trace with the process's track.
    pub(super) fn new(out: &'o mut W, pid: i64, process_name: &str) -> io::Result<Self> {
        let mut w = Writer {
            out,
            pid,
            first: true,
            head: Msg::default(),
            names: Interner::default(),
            arg_names: Interner::default(),
            ev: Msg::default(),
            interned: Msg::default(),
            packet: Msg::default(),
            a: Msg::default(),
        };
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

    /// Writes `packet` as one `Trace.packet` (its tag and length, then its bytes).
    fn emit(&mut self, mut packet: Msg) -> io::Result<Msg> {
        packet.uint(PACKET_SEQUENCE_ID, SEQUENCE);
        if self.first {
            packet.uint(PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
            self.first = false;
        }
        self.head.0.clear();
        self.head.tag(TRACE_PACKET, 2);
        self.head.varint(packet.0.len() as u64);
        self.out.write_all(&self.head.0)?;
        self.out.write_all(&packet.0)?;
        Ok(packet)
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
        let mut arg = |ev: &mut Msg, interned: &mut Msg, name: &str, v: Arg<'_>| {
            a.0.clear();
            let iid = arg_names.iid(name, interned, INTERNED_ANNOTATION_NAMES);
            a.uint(ANNOTATION_NAME_IID, iid);
            match v {
                Arg::U(u) => a.uint(ANNOTATION_UINT, u),
                Arg::I(i) => a.int(ANNOTATION_INT, i),
                Arg::S(s) => a.bytes(ANNOTATION_STRING, s.as_bytes()),
            }
            ev.msg(EVENT_DEBUG_ANNOTATIONS, a);
        };
        if with_body {
            if let Kind::Lost(n) = it.kind {
                let iid = self
                    .names
                    .iid("events lost", &mut interned, INTERNED_EVENT_NAMES);
                ev.uint(EVENT_NAME_IID, iid);
                let count = n.map_or(Arg::S("not counted".into()), Arg::U);
                arg(&mut ev, &mut interned, "count", count);
            }
            if let Some((rec, _)) = it.rec {
                let iid = self
                    .names
                    .iid(&event_name(rec), &mut interned, INTERNED_EVENT_NAMES);
                ev.uint(EVENT_NAME_IID, iid);
                for (name, v) in event_args(rec) {
                    arg(&mut ev, &mut interned, name, v);
                }
            }
            if it.flow != 0 {
                ev.fixed64(EVENT_FLOW_IDS, it.flow);
            }
        }
        packet.0.clear();
        packet.uint(PACKET_TIMESTAMP, ts);
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
            Kind::Slice => {
                self.event(it, TYPE_SLICE_BEGIN, it.ts, true)?;
                self.event(it, TYPE_SLICE_END, it.end, false)
            }
            Kind::Instant | Kind::Lost(_) => self.event(it, TYPE_INSTANT, it.ts, true),
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
}
