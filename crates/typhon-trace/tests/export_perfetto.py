"""Reads a Perfetto trace with Perfetto's own generated protobuf classes (the `perfetto` PyPI
package) and prints what it holds as one JSON object, for tests/export.rs.

Usage: export_perfetto.py TRACE.pftrace

Fails (exit 1) if the file does not parse as perfetto.protos.Trace, if any message in it
carries a field the schema does not know (a wrong field number or wire type in our encoder
would show up as one), or if the interning rules trace_processor applies are broken: a packet
that refers to interned names must say SEQ_NEEDS_INCREMENTAL_STATE, on a sequence whose state
was cleared (SEQ_INCREMENTAL_STATE_CLEARED) before, and every iid it uses must be defined in
that packet or an earlier one of its sequence. Names are printed resolved.

Compressed bundles (TracePacket.compressed_packets, zlib) are unpacked in place, as
trace_processor does. Timestamps are resolved as trace_processor resolves them: a packet's clock
is its timestamp_clock_id, else its sequence's TracePacketDefaults; a sequence-scoped clock
(64..127) must be defined by a ClockSnapshot of the sequence before it is used, and an
incremental one adds each packet's value to the previous one. Each event is printed with that
clock's time ("ts": the recording's own nanoseconds) and the REALTIME it maps to through the
snapshot ("wall", when the snapshot has REALTIME).
"""

import json
import sys
import zlib

from google.protobuf import unknown_fields
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb


def check_known(msg, path):
    if len(unknown_fields.UnknownFieldSet(msg)):
        raise SystemExit(f"unknown fields in {path}: {msg}")
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        if field.is_repeated:
            for i, v in enumerate(value):
                check_known(v, f"{path}.{field.name}[{i}]")
        else:
            check_known(value, f"{path}.{field.name}")


def annotation(a, names):
    kind = a.WhichOneof("value")
    name = names[a.name_iid] if a.name_iid else a.name
    return name, getattr(a, kind) if kind else None


def flatten(packets):
    for p in packets:
        if p.HasField("compressed_packets"):
            inner = pb.Trace.FromString(zlib.decompress(p.compressed_packets))
            yield from flatten(inner.packet)
        else:
            yield p


def main():
    trace = pb.Trace.FromString(open(sys.argv[1], "rb").read())
    packets = list(flatten(trace.packet))
    tracks, events = {}, []
    # Per sequence: interned event names and annotation names, None until state is cleared;
    # its default clock; its clocks {id: [snapshot value, incremental, current value]}.
    state, defaults, clocks = {}, {}, {}
    snapshots = []
    for i, p in enumerate(packets):
        check_known(p, f"packet[{i}]")
        seq = p.trusted_packet_sequence_id
        if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            state[seq] = ({}, {})
        if p.HasField("trace_packet_defaults"):
            defaults[seq] = p.trace_packet_defaults.timestamp_clock_id
        if p.HasField("clock_snapshot"):
            cs = p.clock_snapshot
            snap = {c.clock_id: c.timestamp for c in cs.clocks}
            snapshots.append({
                "clocks": [{"id": c.clock_id, "ts": c.timestamp, "incremental": c.is_incremental}
                           for c in cs.clocks],
                "primary": pb.BuiltinClock.Name(cs.primary_trace_clock),
            })
            for c in cs.clocks:
                if 64 <= c.clock_id < 128:
                    clocks.setdefault(seq, {})[c.clock_id] = [c.timestamp, c.is_incremental,
                                                              c.timestamp, snap]
            continue
        if p.HasField("interned_data"):
            if state.get(seq) is None:
                raise SystemExit(f"packet[{i}]: interned data before the state was cleared")
            for n in p.interned_data.event_names:
                state[seq][0][n.iid] = n.name
            for n in p.interned_data.debug_annotation_names:
                state[seq][1][n.iid] = n.name
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            t = {"name": d.name, "parent": d.parent_uuid}
            if d.HasField("process"):
                t.update(kind="process", pid=d.process.pid, name=d.process.process_name)
            elif d.HasField("thread"):
                t.update(kind="thread", pid=d.thread.pid, tid=d.thread.tid,
                         name=d.thread.thread_name)
            elif d.HasField("counter"):
                t["kind"] = "counter"
            else:
                t["kind"] = "child"
            tracks[d.uuid] = t
        if p.HasField("track_event"):
            e = p.track_event
            uses = e.name_iid or any(a.name_iid for a in e.debug_annotations)
            if uses and not p.sequence_flags & pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE:
                raise SystemExit(f"packet[{i}] uses interned names without NEEDS_INCREMENTAL_STATE")
            names, arg_names = state.get(seq) or ({}, {})
            if e.name_iid and e.name_iid not in names:
                raise SystemExit(f"packet[{i}]: event name iid {e.name_iid} is not defined")
            if any(a.name_iid and a.name_iid not in arg_names for a in e.debug_annotations):
                raise SystemExit(f"packet[{i}]: an annotation name iid is not defined")
            ts, wall = p.timestamp, None
            clock = p.timestamp_clock_id or defaults.get(seq, 0)
            if 64 <= clock < 128:
                c = clocks.get(seq, {}).get(clock)
                if c is None:
                    raise SystemExit(f"packet[{i}]: clock {clock} used before its ClockSnapshot")
                if c[1]:
                    c[2] = (c[2] + ts) & (2**64 - 1)
                    ts = c[2]
                if 1 in c[3]:  # REALTIME
                    wall = c[3][1] + (ts - c[0])
            events.append({
                "ts": ts,
                "wall": wall,
                "clock": clock,
                "seq": seq,
                "type": pb.TrackEvent.Type.Name(e.type),
                "track": e.track_uuid,
                "name": names[e.name_iid] if e.name_iid else e.name,
                "args": dict(annotation(a, arg_names) for a in e.debug_annotations),
                "flows": list(e.flow_ids),
                "ends": list(e.terminating_flow_ids),
            })
            # A counter's value: int64 or double, whichever the event carries.
            for f in ("counter_value", "double_counter_value"):
                if e.HasField(f):
                    events[-1]["value"] = getattr(e, f)
                    events[-1]["value_field"] = f
    first_flags = packets[0].sequence_flags if packets else 0
    json.dump({"tracks": {str(k): v for k, v in tracks.items()}, "events": events,
               "first_flags": first_flags, "snapshots": snapshots}, sys.stdout)


main()
