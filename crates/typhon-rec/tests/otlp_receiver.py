"""A loopback OTLP/HTTP receiver for tests/cli_push.rs, decoding with the official
OpenTelemetry classes (PyPI opentelemetry-proto):

    python3 otlp_receiver.py MODE         serve on 127.0.0.1 (a free port, printed first)
    python3 otlp_receiver.py decode FILE  print the span keys of an exported .otlp.pb

MODE: `retry-once` answers the first POST /v1/traces 503 with Retry-After: 1, then 200;
`reject` answers 400 to everything; `partial` answers 200 with a partial success rejecting
every span; `ok` answers 200. A span's key is its trace id, span id and
a digest of its deterministic serialization, so two sides agree on every field of every span.
GET /count answers the spans received so far; GET /dump answers
{"requests": [{"status", "encoding", "content_type", "spans"}], "spans": [key, ...]} and ends the
server. Without a request for 120 s the server ends by itself.
"""

import gzip
import hashlib
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def keys(req):
    out = []
    for rs in req.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                digest = hashlib.sha256(s.SerializeToString(deterministic=True)).hexdigest()
                out.append(f"{s.trace_id.hex()}:{s.span_id.hex()}:{digest[:16]}")
    return out


class State:
    mode = "ok"
    requests = []
    spans = []
    done = False


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/count":
            self.reply(200, str(len(State.spans)).encode())
        elif self.path == "/dump":
            body = json.dumps({"requests": State.requests, "spans": State.spans}).encode()
            self.reply(200, body, [("Content-Type", "application/json")])
            State.done = True
        else:
            self.reply(404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        enc = self.headers.get("Content-Encoding", "")
        rec = {"status": 0, "encoding": enc, "content_type": self.headers.get("Content-Type", ""),
               "spans": 0}
        State.requests.append(rec)
        if self.path != "/v1/traces":
            rec["status"] = 404
            return self.reply(404, b"not found")
        if State.mode == "reject":
            rec["status"] = 400
            return self.reply(400, b"bad request: rejected by the test receiver")
        if State.mode == "retry-once" and len(State.requests) == 1:
            rec["status"] = 503
            return self.reply(503, b"busy", [("Retry-After", "1")])
        if enc == "gzip":
            body = gzip.decompress(body)
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        k = keys(req)
        rec["status"] = 200
        resp = ExportTraceServiceResponse()
        if State.mode == "partial":
            resp.partial_success.rejected_spans = len(k)
            resp.partial_success.error_message = "the test receiver keeps nothing"
        else:
            rec["spans"] = len(k)
            State.spans.extend(k)
        self.reply(200, resp.SerializeToString(), [("Content-Type", "application/x-protobuf")])


class Server(HTTPServer):
    def handle_timeout(self):
        # Nobody asked for 120 s: the test is gone; end rather than linger.
        State.done = True


def main():
    if sys.argv[1] == "decode":
        req = ExportTraceServiceRequest()
        with open(sys.argv[2], "rb") as f:
            req.ParseFromString(f.read())
        json.dump(keys(req), sys.stdout)
        return
    State.mode = sys.argv[1]
    server = Server(("127.0.0.1", 0), Handler)
    server.timeout = 120
    print(server.server_address[1], flush=True)
    while not State.done:
        server.handle_request()
    server.server_close()


main()
