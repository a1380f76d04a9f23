"""Reads `typhon-rec export --format otlp` with the official OpenTelemetry classes (PyPI
opentelemetry-proto, protobuf) and prints what they decode as JSON, for tests/otlp.rs:

    python3 otlp_decode.py OUT.otlp.pb [OUT.otlp.json]

With the JSON export too, checks it against the protobuf field by field. The JSON is read with
json.loads and its ids decoded as hex here: google.protobuf.json_format.Parse would take the
spec's hex ids for base64 and silently return 24-byte trace ids.
"""

import json
import sys

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def value(v):
    """An AnyValue as a plain value (ints as ints, whatever the encoding)."""
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def attrs(kvs):
    out = {}
    for kv in kvs:
        if kv.key in out:
            raise SystemExit(f"duplicate attribute key {kv.key!r}")
        out[kv.key] = value(kv.value)
    return out


def span_dict(s):
    return {
        "trace_id": s.trace_id.hex(),
        "span_id": s.span_id.hex(),
        "parent_span_id": s.parent_span_id.hex(),
        "name": s.name,
        "kind": s.kind,
        "start": s.start_time_unix_nano,
        "end": s.end_time_unix_nano,
        "attributes": attrs(s.attributes),
        "events": [
            {"name": e.name, "time": e.time_unix_nano, "attributes": attrs(e.attributes)}
            for e in s.events
        ],
        "links": [{"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex()} for l in s.links],
        "status": {"code": s.status.code, "message": s.status.message},
    }


def decode(path):
    req = ExportTraceServiceRequest()
    with open(path, "rb") as f:
        req.ParseFromString(f.read())
    resources, scopes, spans = [], [], []
    for rs in req.resource_spans:
        resources.append(attrs(rs.resource.attributes))
        for ss in rs.scope_spans:
            scopes.append({"name": ss.scope.name, "version": ss.scope.version})
            spans.extend(span_dict(s) for s in ss.spans)
    for s in spans:
        if len(bytes.fromhex(s["trace_id"])) != 16 or s["trace_id"] == "0" * 32:
            raise SystemExit(f"bad trace id {s['trace_id']} of span {s['name']}")
        if len(bytes.fromhex(s["span_id"])) != 8:
            raise SystemExit(f"bad span id {s['span_id']}")
        if s["parent_span_id"] and len(bytes.fromhex(s["parent_span_id"])) != 8:
            raise SystemExit(f"bad parent id {s['parent_span_id']}")
    return {"resources": resources, "scopes": scopes, "spans": spans}


def hex_id(s, n, what):
    """An OTLP/JSON id: hex (case-insensitive) of exactly n bytes, or empty."""
    if s == "":
        return ""
    b = bytes.fromhex(s)
    if len(b) != n:
        raise SystemExit(f"JSON {what} {s!r} is {len(b)} bytes, not {n}")
    return b.hex()


def json_value(v):
    (kind, x), = v.items()
    kind = {"stringValue": "string_value", "intValue": "int_value", "boolValue": "bool_value",
            "doubleValue": "double_value"}[kind]
    if kind == "int_value":
        # The spec: 64-bit integers are decimal strings.
        if not isinstance(x, str):
            raise SystemExit(f"JSON intValue {x!r} is not a string")
        return int(x)
    return x


def json_attrs(kvs):
    return {kv["key"]: json_value(kv["value"]) for kv in kvs}


def u64(x, what):
    if not isinstance(x, str):
        raise SystemExit(f"JSON {what} {x!r} is not a string")
    return int(x)


def enum(x, what):
    if not isinstance(x, int):
        raise SystemExit(f"JSON {what} {x!r} is not an integer")
    return x


def read_json(path):
    with open(path) as f:
        doc = json.load(f)
    resources, scopes, spans = [], [], []
    for rs in doc["resourceSpans"]:
        resources.append(json_attrs(rs["resource"]["attributes"]))
        for ss in rs["scopeSpans"]:
            scopes.append({"name": ss["scope"]["name"], "version": ss["scope"]["version"]})
            for s in ss["spans"]:
                status = s.get("status") or {}
                spans.append({
                    "trace_id": hex_id(s["traceId"], 16, "traceId"),
                    "span_id": hex_id(s["spanId"], 8, "spanId"),
                    "parent_span_id": hex_id(s.get("parentSpanId", ""), 8, "parentSpanId"),
                    "name": s["name"],
                    "kind": enum(s["kind"], "kind"),
                    "start": u64(s["startTimeUnixNano"], "startTimeUnixNano"),
                    "end": u64(s["endTimeUnixNano"], "endTimeUnixNano"),
                    "attributes": json_attrs(s.get("attributes", [])),
                    "events": [
                        {"name": e["name"], "time": u64(e["timeUnixNano"], "timeUnixNano"),
                         "attributes": json_attrs(e.get("attributes", []))}
                        for e in s.get("events", [])
                    ],
                    "links": [{"trace_id": hex_id(l["traceId"], 16, "link traceId"),
                               "span_id": hex_id(l["spanId"], 8, "link spanId")}
                              for l in s.get("links", [])],
                    "status": {"code": enum(status.get("code", 0), "status code"),
                               "message": status.get("message", "")},
                })
    return {"resources": resources, "scopes": scopes, "spans": spans}


def main():
    got = decode(sys.argv[1])
    if len(sys.argv) > 2:
        j = read_json(sys.argv[2])
        for key in ("resources", "scopes"):
            if j[key] != got[key]:
                raise SystemExit(f"JSON {key} differ: {j[key]} vs {got[key]}")
        if len(j["spans"]) != len(got["spans"]):
            raise SystemExit(f"JSON has {len(j['spans'])} spans, protobuf {len(got['spans'])}")
        for a, b in zip(j["spans"], got["spans"]):
            if a != b:
                raise SystemExit(f"JSON span differs:\n{a}\nprotobuf:\n{b}")
        got["json_checked"] = len(j["spans"])
    json.dump(got, sys.stdout)


main()
