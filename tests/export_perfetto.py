"""Reads a Perfetto trace with Perfetto's own generated protobuf classes (the `perfetto` PyPI
package) and prints what it holds as one JSON object, for tests/export.rs.

Usage: export_perfetto.py TRACE.pftrace

Fails (exit 1) if the file does not parse as perfetto.protos.Trace, or if any message in it
carries a field the schema does not know (a wrong field number or wire type in our encoder
would show up as one).
"""

import json
import sys

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


def annotation(a):
    kind = a.WhichOneof("value")
    return a.name, getattr(a, kind) if kind else None


def main():
    trace = pb.Trace.FromString(open(sys.argv[1], "rb").read())
    tracks, events = {}, []
    for i, p in enumerate(trace.packet):
        check_known(p, f"packet[{i}]")
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            t = {"name": d.name, "parent": d.parent_uuid}
            if d.HasField("process"):
                t.update(kind="process", pid=d.process.pid, name=d.process.process_name)
            elif d.HasField("thread"):
                t.update(kind="thread", pid=d.thread.pid, tid=d.thread.tid,
                         name=d.thread.thread_name)
            else:
                t["kind"] = "child"
            tracks[d.uuid] = t
        if p.HasField("track_event"):
            e = p.track_event
            events.append({
                "ts": p.timestamp,
                "seq": p.trusted_packet_sequence_id,
                "type": pb.TrackEvent.Type.Name(e.type),
                "track": e.track_uuid,
                "name": e.name,
                "args": dict(annotation(a) for a in e.debug_annotations),
                "flows": list(e.flow_ids),
                "ends": list(e.terminating_flow_ids),
            })
    first_flags = trace.packet[0].sequence_flags if len(trace.packet) else 0
    json.dump({"tracks": {str(k): v for k, v in tracks.items()}, "events": events,
               "first_flags": first_flags}, sys.stdout)


main()
