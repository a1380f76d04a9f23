"""A Python ctypes host of the recorder's C ABI (the same ABI the C# binding uses).

Driven by tests/ffi_ctypes.rs: python3 ffi_ctypes.py <libtyphon_ffi.so> <output.dat>.
Records from ROUNDS x THREADS Python threads, checks error paths, prints "STATS k=v ..." and
"FAILURES n". The Rust test checks the file with the crate's reader.
"""
import ctypes as C
import sys
import threading
import time

ROUNDS, THREADS, EVENTS = 2, 3, 300

OK, ERR_NULL, ERR_UTF8, ERR_CONFIG, ERR_ALREADY, ERR_NOT_STARTED = 0, -1, -2, -3, -4, -5
ERR_TOO_LARGE, ERR_INVALID, ERR_SPAN_MISMATCH = -7, -8, -9
THREAD_WORKER = 1


class TyphonConfig(C.Structure):
    _fields_ = [("output_path", C.c_char_p), ("page_size", C.c_size_t),
                ("ring_bytes", C.c_size_t), ("flush_interval_us", C.c_uint64),
                ("zstd_level", C.c_uint32)]


STATS_FIELDS = ["attempted", "written", "missed", "filtered", "refused", "no_slot", "pages",
                "bytes", "sink_errors", "sink_lost", "slots"]


class TyphonStats(C.Structure):
    _fields_ = [(f, C.c_uint64) for f in STATS_FIELDS]


lib = C.CDLL(sys.argv[1])
u8, u16, u32, u64, i32, sz = C.c_uint8, C.c_uint16, C.c_uint32, C.c_uint64, C.c_int32, C.c_size_t
P64 = C.POINTER(C.c_uint64)
SIGS = {
    "typhon_version": ([], C.c_char_p),
    "typhon_error_name": ([i32], C.c_char_p),
    "typhon_start": ([C.POINTER(TyphonConfig)], i32),
    "typhon_finish": ([C.POINTER(TyphonStats)], i32),
    "typhon_stats": ([C.POINTER(TyphonStats)], i32),
    "typhon_longest_drain_gap": ([P64], i32),
    "typhon_drain": ([], i32),
    "typhon_register_thread": ([], i32),
    "typhon_now": ([], u64),
    "typhon_ns_to_ticks": ([u64], u64),
    "typhon_set_thread_info": ([C.c_char_p, sz, u8], i32),
    "typhon_instant": ([i32, i32], i32),
    "typhon_ingress_received": ([u32, u16, u16, u16], i32),
    "typhon_egress_sent_at": ([u64, u32, u32, u32, u16], i32),
    "typhon_command_causal_id": ([u32, u32, u16, P64, P64], i32),
    "typhon_span_begin": ([C.c_char_p, sz, P64], i32),
    "typhon_traced_span_begin": ([C.c_char_p, sz, u64, u64, P64], i32),
    "typhon_span_end": ([u64], i32),
    "typhon_celog_data": ([C.c_int, u16, C.c_void_p, u16, u32, u32, u16, C.c_int], i32),
    "typhon_write_record_at": ([u64, u8, C.c_char_p, sz], i32),
    "typhon_tick_start": ([], i32),
    "typhon_tick_end": ([u8, u8], i32),
    "typhon_last_error_message": ([], C.c_char_p),
    "typhon_clamped": ([P64], i32),
    "typhon_span_begin_at": ([u64, C.c_char_p, sz, P64], i32),
    "typhon_span_end_at": ([u64, u64], i32),
    "typhon_instant_at": ([u64, i32, i32], i32),
}
for name, (args, res) in SIGS.items():
    fn = getattr(lib, name)
    fn.argtypes, fn.restype = args, res

failures = []
lock = threading.Lock()


def check(got, want, what):
    if got != want:
        with lock:
            failures.append(f"{what}: {lib.typhon_error_name(got)} want {lib.typhon_error_name(want)}")


def check_message(func, want, what):
    m = lib.typhon_last_error_message().decode()
    if not m.startswith(func + ": ") or want not in m:
        with lock:
            failures.append(f"{what}: last error message {m!r}, want {func}: ...{want}...")


def worker(n):
    name = f"py-worker-{n}".encode()
    check(lib.typhon_set_thread_info(name, len(name), THREAD_WORKER), OK, "set_thread_info")
    check(lib.typhon_register_thread(), OK, "register_thread")
    outer, inner, hi, lo = C.c_uint64(), C.c_uint64(), C.c_uint64(), C.c_uint64()
    payload = C.c_uint32()
    for i in range(EVENTS):
        check(lib.typhon_span_begin(b"frame", 5, C.byref(outer)), OK, "span_begin")
        check(lib.typhon_instant(n, i), OK, "instant")
        check(lib.typhon_ingress_received(n, i, 0, 64), OK, "ingress_received")
        check(lib.typhon_command_causal_id(n, i, i, C.byref(hi), C.byref(lo)), OK, "causal id")
        check(lib.typhon_traced_span_begin(b"apply", 5, hi.value, lo.value, C.byref(inner)), OK,
              "traced_span_begin")
        check(lib.typhon_span_end(outer.value), ERR_SPAN_MISMATCH, "span_end out of order")
        check(lib.typhon_span_end(inner.value), OK, "span_end inner")
        payload.value = i
        check(lib.typhon_celog_data(1, 0x2000, C.byref(payload), 4, 0, 1, 0, 0), OK, "celog")
        rec = bytes([n & 0xFF, i & 0xFF, i >> 8])
        check(lib.typhon_write_record_at(lib.typhon_now(), 200, rec, len(rec)), OK, "write_record")
        check(lib.typhon_egress_sent_at(lib.typhon_now(), n, i, 128, 1), OK, "egress_sent_at")
        check(lib.typhon_span_end(outer.value), OK, "span_end outer")
    check(lib.typhon_span_begin(None, 3, C.byref(outer)), ERR_NULL, "null name")
    check_message("typhon_span_begin", "NULL", "null name")
    check(lib.typhon_span_begin(b"\xff", 1, C.byref(outer)), ERR_UTF8, "bad utf-8")
    check_message("typhon_span_begin", "UTF-8", "bad utf-8")
    check(lib.typhon_span_begin(b"x", 1, None), ERR_NULL, "null out")
    big = bytes(8192)
    check(lib.typhon_write_record_at(lib.typhon_now(), 200, big, len(big)), ERR_TOO_LARGE, "big")
    check_message("typhon_write_record_at", "8204 bytes", "big")
    long_name = b"n" * 5000
    check(lib.typhon_span_begin(long_name, len(long_name), C.byref(outer)), ERR_TOO_LARGE,
          "span name too large for a page")
    check_message("typhon_span_begin", "5038 bytes", "span name too large")


def main():
    out = sys.argv[2].encode()
    print("VERSION", lib.typhon_version().decode())
    check(lib.typhon_start(None), ERR_NULL, "start(NULL)")
    check(lib.typhon_drain(), ERR_NOT_STARTED, "drain before start")
    gap = C.c_uint64(0)
    check(lib.typhon_longest_drain_gap(C.byref(gap)), ERR_NOT_STARTED, "drain gap before start")
    check(lib.typhon_register_thread(), ERR_NOT_STARTED, "register_thread before start")
    bad = TyphonConfig(out, 5000, 1 << 20, 1000)
    check(lib.typhon_start(C.byref(bad)), ERR_CONFIG, "start with a bad page size")
    check_message("typhon_start", "5000", "bad page size")
    cfg = TyphonConfig(out, 0, 1 << 20, 1000)
    check(lib.typhon_start(C.byref(cfg)), OK, "start")
    check(lib.typhon_start(C.byref(cfg)), ERR_ALREADY, "start twice")
    check(lib.typhon_tick_start(), OK, "tick_start")
    # A span ending an hour ahead and an instant there are clamped (counted, once each)
    # rather than pinning the thread's later records.
    later = lib.typhon_ns_to_ticks(time.monotonic_ns() + 3600 * 10**9)
    span = C.c_uint64()
    check(lib.typhon_span_begin_at(lib.typhon_now(), b"late", 4, C.byref(span)), OK, "begin_at")
    check(lib.typhon_span_end_at(span.value, later), OK, "end_at")
    check(lib.typhon_instant_at(later, -1, -1), OK, "instant_at")
    check(lib.typhon_tick_start(), OK, "tick_start after")
    for r in range(ROUNDS):
        ts = [threading.Thread(target=worker, args=(r * THREADS + t,)) for t in range(THREADS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        check(lib.typhon_drain(), OK, "drain")
    check(lib.typhon_tick_end(0, 1), OK, "tick_end")
    st = TyphonStats()
    check(lib.typhon_stats(C.byref(st)), OK, "stats")
    check(lib.typhon_longest_drain_gap(C.byref(gap)), OK, "drain gap")
    if gap.value == 0:
        failures.append("drain gap 0 after a drain per round")
    check(lib.typhon_finish(C.byref(st)), OK, "finish")
    check(lib.typhon_finish(None), ERR_NOT_STARTED, "finish twice")
    check_message("typhon_finish", "no recorder is running", "finish twice")
    clamped = C.c_uint64(0)
    check(lib.typhon_clamped(C.byref(clamped)), OK, "clamped after finish")
    print("STATS " + " ".join(f"{f}={getattr(st, f)}" for f in STATS_FIELDS)
          + f" clamped={clamped.value}")
    for f in failures[:20]:
        print("FAIL", f, file=sys.stderr)
    print("FAILURES", len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
