// P/Invoke binding of typhon-recorder's C ABI (include/typhon_recorder.h) for the Typhon engine.
// Not compiled in this repository's CI (no .NET on its machines); the same ABI is exercised by
// tests/ffi_ctypes.py (Python ctypes) and tests/c/ffi_host.c. Keep in step with the header.
//
// Put libtyphon_ffi.so (cargo build --release --no-default-features) next to the app or on
// LD_LIBRARY_PATH.
using System;
using System.Runtime.InteropServices;
using System.Text;

namespace Typhon.Recorder
{
    /// <summary>typhon_start configuration (TyphonConfig). Zero fields take the default.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TyphonConfig
    {
        public IntPtr OutputPath;      // const char*, NUL-terminated UTF-8
        public nuint PageSize;         // size_t
        public nuint RingBytes;        // size_t
        public ulong FlushIntervalUs;  // uint64_t
    }

    /// <summary>Session counters (TyphonStats); finished: Attempted == Written + Missed + SinkLost.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TyphonStats
    {
        public ulong Attempted, Written, Missed, Filtered, Refused, NoSlot, Pages, Bytes,
            SinkErrors, SinkLost, Slots;
    }

    public enum ThreadKind : byte { Main = 0, Worker = 1, Pool = 2, Other = 3 }

    public sealed class TyphonException : Exception
    {
        public int Code { get; }
        /// <summary>The code's name and the library's message for it (typhon_last_error_message,
        /// read on the failing thread right after the call, before the pointer can change).</summary>
        public TyphonException(int code) : base(Describe(code)) => Code = code;

        static string Describe(int code)
        {
            // The message first: its pointer is valid only until the next call into the library.
            string message = Marshal.PtrToStringUTF8(Native.typhon_last_error_message());
            return Marshal.PtrToStringUTF8(Native.typhon_error_name(code)) + ": " + message;
        }
    }

    /// <summary>Raw entry points, one per header function. All return 0 or a negative code.</summary>
    public static unsafe class Native
    {
        const string Lib = "typhon_ffi";

        public const int Ok = 0, ErrNull = -1, ErrUtf8 = -2, ErrConfig = -3, ErrAlreadyStarted = -4,
            ErrNotStarted = -5, ErrIo = -6, ErrTooLarge = -7, ErrInvalid = -8,
            ErrSpanMismatch = -9, ErrPanic = -10, ErrFlusher = -11, ErrNoSlot = -12;

        [DllImport(Lib)] public static extern IntPtr typhon_version();
        [DllImport(Lib)] public static extern IntPtr typhon_error_name(int code);
        [DllImport(Lib)] public static extern int typhon_start(TyphonConfig* config);
        [DllImport(Lib)] public static extern int typhon_finish(TyphonStats* stats);
        [DllImport(Lib)] public static extern int typhon_stats(TyphonStats* stats);
        [DllImport(Lib)] public static extern int typhon_longest_drain_gap(ulong* ns);
        [DllImport(Lib)] public static extern int typhon_clamped(ulong* count);
        // Valid until this thread's next call into the library: copy it at once.
        [DllImport(Lib)] public static extern IntPtr typhon_last_error_message();
        [DllImport(Lib)] public static extern int typhon_drain();
        [DllImport(Lib)] public static extern ulong typhon_now();
        [DllImport(Lib)] public static extern ulong typhon_ns_to_ticks(ulong ns);
        [DllImport(Lib)] public static extern int typhon_register_thread();
        [DllImport(Lib)] public static extern int typhon_set_thread_info(byte* name, nuint len, byte kind);
        [DllImport(Lib)] public static extern int typhon_command_causal_id(uint session, uint drainTick, ushort seq, ulong* hi, ulong* lo);

        [DllImport(Lib)] public static extern int typhon_ingress_received(uint session, ushort seq, ushort wireIdx, ushort bytes);
        [DllImport(Lib)] public static extern int typhon_ingress_received_at(ulong ts, uint session, ushort seq, ushort wireIdx, ushort bytes);
        [DllImport(Lib)] public static extern int typhon_ingress_admitted(uint session, ushort seq, ushort wireIdx, uint drainTick);
        [DllImport(Lib)] public static extern int typhon_ingress_admitted_at(ulong ts, uint session, ushort seq, ushort wireIdx, uint drainTick);
        [DllImport(Lib)] public static extern int typhon_ingress_dropped(uint session, ushort seq, byte reason);
        [DllImport(Lib)] public static extern int typhon_ingress_dropped_at(ulong ts, uint session, ushort seq, byte reason);
        [DllImport(Lib)] public static extern int typhon_command_consumed(uint session, ushort seq, ushort sysIdx);
        [DllImport(Lib)] public static extern int typhon_command_consumed_at(ulong ts, uint session, ushort seq, ushort sysIdx);
        [DllImport(Lib)] public static extern int typhon_egress_sent(uint session, uint tick, uint bytes, ushort acks);
        [DllImport(Lib)] public static extern int typhon_egress_sent_at(ulong ts, uint session, uint tick, uint bytes, ushort acks);

        [DllImport(Lib)] public static extern int typhon_tick_start();
        [DllImport(Lib)] public static extern int typhon_tick_start_at(ulong ts);
        [DllImport(Lib)] public static extern int typhon_tick_end(byte overloadLevel, byte tickMultiplier);
        [DllImport(Lib)] public static extern int typhon_tick_end_at(ulong ts, byte overloadLevel, byte tickMultiplier);
        [DllImport(Lib)] public static extern int typhon_phase_start(byte phase);
        [DllImport(Lib)] public static extern int typhon_phase_start_at(ulong ts, byte phase);
        [DllImport(Lib)] public static extern int typhon_phase_end(byte phase);
        [DllImport(Lib)] public static extern int typhon_phase_end_at(ulong ts, byte phase);
        [DllImport(Lib)] public static extern int typhon_instant(int nameId, int payload);
        [DllImport(Lib)] public static extern int typhon_instant_at(ulong ts, int nameId, int payload);

        // BOOL parameters are int: never marshal them as C# bool.
        [DllImport(Lib)] public static extern int typhon_celog_set_zones(uint user, uint ce, uint process);
        [DllImport(Lib)] public static extern int typhon_celog_data(int fTimeStamp, ushort wID, void* pData, ushort wLen, uint dwZoneUser, uint dwZoneCE, ushort wFlag, int fFlagged);
        [DllImport(Lib)] public static extern int typhon_celog_data_at(ulong ts, ushort wID, void* pData, ushort wLen, uint dwZoneUser, uint dwZoneCE, ushort wFlag, int fFlagged);

        [DllImport(Lib)] public static extern int typhon_write_record(byte kind, byte* payload, nuint len);
        [DllImport(Lib)] public static extern int typhon_write_record_at(ulong ts, byte kind, byte* payload, nuint len);

        [DllImport(Lib)] public static extern int typhon_span_begin(byte* name, nuint len, ulong* spanId);
        [DllImport(Lib)] public static extern int typhon_span_begin_at(ulong ts, byte* name, nuint len, ulong* spanId);
        [DllImport(Lib)] public static extern int typhon_traced_span_begin(byte* name, nuint len, ulong traceHi, ulong traceLo, ulong* spanId);
        [DllImport(Lib)] public static extern int typhon_traced_span_begin_at(ulong ts, byte* name, nuint len, ulong traceHi, ulong traceLo, ulong* spanId);
        [DllImport(Lib)] public static extern int typhon_span_end(ulong spanId);
        [DllImport(Lib)] public static extern int typhon_span_end_at(ulong spanId, ulong ts);
    }

    /// <summary>
    /// Engine-facing helpers: UTF-8 names as ReadOnlySpan&lt;byte&gt; (use "name"u8 literals: no
    /// allocation, no marshalling), payloads as spans, errors as exceptions where they are bugs.
    /// </summary>
    public static unsafe class TyphonRecorder
    {
        public static string Version => Marshal.PtrToStringUTF8(Native.typhon_version())!;

        static void Check(int code) { if (code != Native.Ok) throw new TyphonException(code); }

        public static void Start(string outputPath, nuint pageSize = 0, nuint ringBytes = 0, ulong flushIntervalUs = 0)
        {
            IntPtr path = Marshal.StringToCoTaskMemUTF8(outputPath);
            try
            {
                var cfg = new TyphonConfig { OutputPath = path, PageSize = pageSize, RingBytes = ringBytes, FlushIntervalUs = flushIntervalUs };
                Check(Native.typhon_start(&cfg));
            }
            finally { Marshal.FreeCoTaskMem(path); }
        }

        public static TyphonStats Finish() { TyphonStats s; Check(Native.typhon_finish(&s)); return s; }
        public static TyphonStats Stats() { TyphonStats s; Check(Native.typhon_stats(&s)); return s; }

        /// <summary>Longest time between two drains of the rings so far (a gap longer than a ring holds drops records).</summary>
        public static TimeSpan LongestDrainGap()
        {
            ulong ns; Check(Native.typhon_longest_drain_gap(&ns)); return TimeSpan.FromTicks((long)(ns / 100));
        }

        /// <summary>Records whose caller time lay more than 10 s ahead of the clock and were
        /// clamped (the running recorder's count, or the last finished one's).</summary>
        public static ulong Clamped()
        {
            ulong n; Check(Native.typhon_clamped(&n)); return n;
        }

        /// <summary>Call once per thread before its first event (pool threads: ThreadKind.Pool).</summary>
        public static void SetThreadInfo(ReadOnlySpan<byte> utf8Name, ThreadKind kind)
        {
            fixed (byte* p = utf8Name) Check(Native.typhon_set_thread_info(p, (nuint)utf8Name.Length, (byte)kind));
        }

        public static void SetThreadInfo(string name, ThreadKind kind) => SetThreadInfo(Encoding.UTF8.GetBytes(name), kind);

        /// <summary>Claims this thread's slot now (after SetThreadInfo), so its first event costs no more than any other.</summary>
        public static void RegisterThread() => Check(Native.typhon_register_thread());

        /// <summary>Returns once the flusher has drained every record written before the call.</summary>
        public static void Drain() => Check(Native.typhon_drain());

        public static ulong Now => Native.typhon_now();

        public static (ulong Hi, ulong Lo) CommandCausalId(uint session, uint drainTick, ushort seq)
        {
            ulong hi, lo;
            Check(Native.typhon_command_causal_id(session, drainTick, seq, &hi, &lo));
            return (hi, lo);
        }

        /// <summary>Opens a span; returns its id for EndSpan (0: nothing recorded, EndSpan(0) is a no-op).</summary>
        public static ulong BeginSpan(ReadOnlySpan<byte> utf8Name)
        {
            ulong id;
            fixed (byte* p = utf8Name) Check(Native.typhon_span_begin(p, (nuint)utf8Name.Length, &id));
            return id;
        }

        public static ulong BeginTracedSpan(ReadOnlySpan<byte> utf8Name, (ulong Hi, ulong Lo) trace)
        {
            ulong id;
            fixed (byte* p = utf8Name) Check(Native.typhon_traced_span_begin(p, (nuint)utf8Name.Length, trace.Hi, trace.Lo, &id));
            return id;
        }

        /// <summary>Ends the innermost open span of this thread (throws on a mismatched id).</summary>
        public static void EndSpan(ulong spanId) => Check(Native.typhon_span_end(spanId));

        /// <summary>A scope for <c>using</c>: ends the span on Dispose.</summary>
        public readonly struct SpanScope : IDisposable
        {
            readonly ulong _id;
            internal SpanScope(ulong id) => _id = id;
            public void Dispose() => EndSpan(_id);
        }

        public static SpanScope Span(ReadOnlySpan<byte> utf8Name) => new SpanScope(BeginSpan(utf8Name));

        /// <summary>CeLogData; returns false when refused (too large, bad id) instead of throwing.</summary>
        public static bool CeLogData(bool timeStamp, ushort id, ReadOnlySpan<byte> data, uint zoneUser, uint zoneCE, ushort flag = 0, bool flagged = false)
        {
            fixed (byte* p = data)
                return Native.typhon_celog_data(timeStamp ? 1 : 0, id, p, (ushort)Math.Min(data.Length, ushort.MaxValue), zoneUser, zoneCE, flag, flagged ? 1 : 0) == Native.Ok;
        }

        /// <summary>Writes a record of the engine's own kind: payload is everything after the 12-byte header.</summary>
        public static bool WriteRecord(byte kind, ReadOnlySpan<byte> payload)
        {
            fixed (byte* p = payload) return Native.typhon_write_record(kind, p, (nuint)payload.Length) == Native.Ok;
        }

        // Fixed-size writes cannot fail except by a caught panic; their codes are ignored here.
        public static void IngressReceived(uint session, ushort seq, ushort wireIdx, ushort bytes) => Native.typhon_ingress_received(session, seq, wireIdx, bytes);
        public static void IngressAdmitted(uint session, ushort seq, ushort wireIdx, uint drainTick) => Native.typhon_ingress_admitted(session, seq, wireIdx, drainTick);
        public static void IngressDropped(uint session, ushort seq, byte reason) => Native.typhon_ingress_dropped(session, seq, reason);
        public static void CommandConsumed(uint session, ushort seq, ushort sysIdx) => Native.typhon_command_consumed(session, seq, sysIdx);
        public static void EgressSent(uint session, uint tick, uint bytes, ushort acks) => Native.typhon_egress_sent(session, tick, bytes, acks);
        public static void TickStart() => Native.typhon_tick_start();
        public static void TickEnd(byte overloadLevel, byte tickMultiplier) => Native.typhon_tick_end(overloadLevel, tickMultiplier);
        public static void PhaseStart(byte phase) => Native.typhon_phase_start(phase);
        public static void PhaseEnd(byte phase) => Native.typhon_phase_end(phase);
        public static void Instant(int nameId, int payload) => Native.typhon_instant(nameId, payload);
    }
}
