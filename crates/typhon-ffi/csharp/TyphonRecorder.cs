// P/Invoke binding of typhon-recorder's C ABI (include/typhon_recorder.h) for the Typhon engine.
//
// One source file for Mono's mcs (C# 7.2: `mcs -langversion:7.2 -unsafe`) and .NET 8+
// (<AllowUnsafeBlocks>true</AllowUnsafeBlocks>): size_t is UIntPtr (not nuint), spans are pinned
// through MemoryMarshal.GetReference (not the C# 7.3 pattern-based `fixed`), no nullable
// annotations. tests/ffi_csharp.rs compiles it with mcs and records from managed threads under
// mono; tests/binding_drift.rs fails when `Native`, the structs or the constants differ from the
// header.
//
// Put libtyphon_ffi.so (cargo build --release -p typhon-ffi) next to the app or on
// LD_LIBRARY_PATH: DllImport("typhon_ffi") finds libtyphon_ffi.so.
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

namespace Typhon.Recorder
{
    /// <summary>typhon_start configuration (TyphonConfig). Zero fields take the default.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TyphonConfig
    {
        public IntPtr OutputPath;      // const char *output_path: NUL-terminated UTF-8
        public UIntPtr PageSize;       // size_t page_size
        public UIntPtr RingBytes;      // size_t ring_bytes
        public ulong FlushIntervalUs;  // uint64_t flush_interval_us
        public uint ZstdLevel;         // uint32_t zstd_level: 0 = uncompressed, 1..19 = zstd
    }

    /// <summary>typhon_start_ex configuration (TyphonConfigEx), size-prefixed so that it can grow:
    /// <see cref="TyphonRecorder.StartEx"/> sets <c>Size</c>. Zero fields take the default; see
    /// <see cref="RecorderOptions"/> for the managed form.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TyphonConfigEx
    {
        public UIntPtr Size;               // size_t size: sizeof(TyphonConfigEx) as the caller knows it
        public IntPtr OutputPath;          // const char *output_path (NULL with a window)
        public UIntPtr PageSize;           // size_t page_size
        public UIntPtr RingBytes;          // size_t ring_bytes
        public ulong FlushIntervalUs;      // uint64_t flush_interval_us
        public uint ZstdLevel;             // uint32_t zstd_level
        public uint Reserved;              // uint32_t reserved: 0
        public ulong MaxPageAgeUs;         // uint64_t max_page_age_us
        public ulong WindowNs;             // uint64_t window_ns
        public ulong WindowBytes;          // uint64_t window_bytes
        public IntPtr SnapshotDir;         // const char *snapshot_dir
        public ulong RotateSegmentBytes;   // uint64_t rotate_segment_bytes
        public ulong RotateKeep;           // uint64_t rotate_keep
        public ulong TickOverNs;           // uint64_t tick_over_ns
        public IntPtr SpanOverName;        // const char *span_over_name
        public ulong SpanOverNs;           // uint64_t span_over_ns
        public ulong TriggerKeepAfterNs;   // uint64_t trigger_keep_after_ns
        public ulong TriggerAtMostEveryNs; // uint64_t trigger_at_most_every_ns
    }

    /// <summary>What typhon_snapshot reports (TyphonSnapshot), size-prefixed: set <c>Size</c>
    /// (<see cref="TyphonRecorder.Snapshot"/> does).</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TyphonSnapshot
    {
        public UIntPtr Size;
        public ulong FromNs;
        public ulong ToNs;
        public ulong Records;
        public ulong Missed;
        public ulong OpenSpans;
        public ulong Restated;
        public ulong EvictedRecords;
        public ulong PathLen;
    }

    /// <summary>A snapshot file written by <see cref="TyphonRecorder.Snapshot"/>: every slot in it
    /// covers (FromNs, ToNs], CLOCK_MONOTONIC nanoseconds.</summary>
    public sealed class SnapshotFile
    {
        public string Path { get; }
        public ulong FromNs { get; }
        public ulong ToNs { get; }
        public ulong Records { get; }
        public ulong Missed { get; }
        public ulong OpenSpans { get; }
        public ulong EvictedRecords { get; }

        internal SnapshotFile(string path, in TyphonSnapshot s)
        {
            Path = path;
            FromNs = s.FromNs;
            ToNs = s.ToNs;
            Records = s.Records;
            Missed = s.Missed;
            OpenSpans = s.OpenSpans;
            EvictedRecords = s.EvictedRecords;
        }
    }

    /// <summary>The managed form of TyphonConfigEx for <see cref="TyphonRecorder.Start(RecorderOptions)"/>:
    /// null and zero values take the default. With <c>Window</c> or <c>WindowBytes</c> the recorder
    /// keeps only the newest records in memory (no OutputPath), written by Snapshot(),
    /// RequestSnapshot() or a trigger into SnapshotDir.</summary>
    public sealed class RecorderOptions
    {
        public string OutputPath;
        public ulong PageSize, RingBytes, FlushIntervalUs;
        public uint ZstdLevel;
        public TimeSpan MaxPageAge;
        public TimeSpan Window;
        public ulong WindowBytes;
        public string SnapshotDir;
        public ulong RotateSegmentBytes, RotateKeep;
        public TimeSpan TickOver;
        public string SpanOverName;
        public TimeSpan SpanOver;
        public TimeSpan TriggerKeepAfter, TriggerAtMostEvery;
    }

    /// <summary>Session counters (TyphonStats); finished: Attempted == Written + Missed + SinkLost.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct TyphonStats
    {
        public ulong Attempted;
        public ulong Written;
        public ulong Missed;
        public ulong Filtered;
        public ulong Refused;
        public ulong NoSlot;
        public ulong Pages;
        public ulong Bytes;
        public ulong SinkErrors;
        public ulong SinkLost;
        public ulong Slots;
    }

    /// <summary>TYPHON_THREAD_*: what a thread is for (typhon_set_thread_info).</summary>
    public enum ThreadKind : byte
    {
        Main = 0,
        Worker = 1,
        Pool = 2,
        Other = 3,
    }

    /// <summary>A call into the library failed: <see cref="Code"/> is its TYPHON_ERR_* code, the
    /// message its name and typhon_last_error_message() (read on the failing thread right after
    /// the call, before the next call can replace it).</summary>
    public sealed class TyphonException : Exception
    {
        public int Code { get; }

        public TyphonException(int code) : this(code, Native.LastErrorMessage()) { }

        TyphonException(int code, string lastError)
            : base(Native.ErrorName(code) + ": " + lastError)
        {
            Code = code;
        }
    }

    /// <summary>Raw entry points, one per header function (same names, same order). The int
    /// results are TYPHON_OK (0) or a negative TYPHON_ERR_* code.</summary>
    public static unsafe class Native
    {
        const string Lib = "typhon_ffi";

        public const int Ok = 0;
        public const int ErrNull = -1;
        public const int ErrUtf8 = -2;
        public const int ErrConfig = -3;
        public const int ErrAlreadyStarted = -4;
        public const int ErrNotStarted = -5;
        public const int ErrIo = -6;
        public const int ErrTooLarge = -7;
        public const int ErrInvalid = -8;
        public const int ErrSpanMismatch = -9;
        public const int ErrPanic = -10;
        public const int ErrFlusher = -11;
        public const int ErrNoSlot = -12;
        public const int ErrStructSize = -13;
        public const int ErrNotWindowed = -14;
        public const int ErrBuffer = -15;
        public const int ErrBusy = -16;
        public const int ConfigExMinSize = 48;
        public const int SnapshotMinSize = 24;

        [DllImport(Lib)] public static extern IntPtr typhon_version();
        [DllImport(Lib)] public static extern IntPtr typhon_error_name(int code);
        // Valid until this thread's next call into the library: copy it at once.
        [DllImport(Lib)] public static extern IntPtr typhon_last_error_message();
        [DllImport(Lib)] public static extern int typhon_start(TyphonConfig* config);
        [DllImport(Lib)] public static extern int typhon_finish(TyphonStats* @out);
        [DllImport(Lib)] public static extern int typhon_finish_on_termination();
        [DllImport(Lib)] public static extern int typhon_stats(TyphonStats* @out);
        [DllImport(Lib)] public static extern int typhon_longest_drain_gap(ulong* outNs);
        [DllImport(Lib)] public static extern int typhon_set_max_page_age_us(ulong us);
        [DllImport(Lib)] public static extern int typhon_evicted_records(ulong* @out);
        [DllImport(Lib)] public static extern int typhon_evicted_pages(ulong* @out);
        [DllImport(Lib)] public static extern int typhon_clamped(ulong* @out);
        [DllImport(Lib)] public static extern int typhon_drain();
        [DllImport(Lib)] public static extern int typhon_start_ex(TyphonConfigEx* config);
        [DllImport(Lib)] public static extern int typhon_snapshot(byte* pathOut, UIntPtr pathCap, TyphonSnapshot* info);
        [DllImport(Lib)] public static extern int typhon_request_snapshot(byte* reason);
        [DllImport(Lib)] public static extern ulong typhon_now();
        [DllImport(Lib)] public static extern ulong typhon_ns_to_ticks(ulong ns);
        [DllImport(Lib)] public static extern int typhon_register_thread();
        [DllImport(Lib)] public static extern int typhon_set_thread_info(byte* name, UIntPtr nameLen, byte kind);
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
        [DllImport(Lib)] public static extern int typhon_named_instant(byte* name, UIntPtr nameLen, int payload);
        [DllImport(Lib)] public static extern int typhon_named_instant_at(ulong ts, byte* name, UIntPtr nameLen, int payload);
        [DllImport(Lib)] public static extern int typhon_counter(byte* name, UIntPtr nameLen, long value);
        [DllImport(Lib)] public static extern int typhon_counter_f64(byte* name, UIntPtr nameLen, double value);
        [DllImport(Lib)] public static extern int typhon_counter_at(ulong ts, byte* name, UIntPtr nameLen, long value);
        [DllImport(Lib)] public static extern int typhon_counter_f64_at(ulong ts, byte* name, UIntPtr nameLen, double value);
        [DllImport(Lib)] public static extern int typhon_named_phase_start(byte phase, byte* name, UIntPtr nameLen);
        [DllImport(Lib)] public static extern int typhon_named_phase_end(byte phase, byte* name, UIntPtr nameLen);
        [DllImport(Lib)] public static extern int typhon_named_phase_start_at(ulong ts, byte phase, byte* name, UIntPtr nameLen);
        [DllImport(Lib)] public static extern int typhon_named_phase_end_at(ulong ts, byte phase, byte* name, UIntPtr nameLen);

        // BOOL parameters are int: never marshal them as C# bool.
        [DllImport(Lib)] public static extern int typhon_celog_set_zones(uint zoneUser, uint zoneCe, uint zoneProcess);
        [DllImport(Lib)] public static extern int typhon_celog_data(int fTimeStamp, ushort wId, void* pData, ushort wLen, uint dwZoneUser, uint dwZoneCe, ushort wFlag, int fFlagged);
        [DllImport(Lib)] public static extern int typhon_celog_data_at(ulong ts, ushort wId, void* pData, ushort wLen, uint dwZoneUser, uint dwZoneCe, ushort wFlag, int fFlagged);

        [DllImport(Lib)] public static extern int typhon_write_record(byte kind, byte* payload, UIntPtr len);
        [DllImport(Lib)] public static extern int typhon_write_record_at(ulong ts, byte kind, byte* payload, UIntPtr len);

        [DllImport(Lib)] public static extern int typhon_span_begin(byte* name, UIntPtr nameLen, ulong* spanId);
        [DllImport(Lib)] public static extern int typhon_span_begin_at(ulong ts, byte* name, UIntPtr nameLen, ulong* spanId);
        [DllImport(Lib)] public static extern int typhon_traced_span_begin(byte* name, UIntPtr nameLen, ulong traceHi, ulong traceLo, ulong* spanId);
        [DllImport(Lib)] public static extern int typhon_traced_span_begin_at(ulong ts, byte* name, UIntPtr nameLen, ulong traceHi, ulong traceLo, ulong* spanId);
        [DllImport(Lib)] public static extern int typhon_span_end(ulong spanId);
        [DllImport(Lib)] public static extern int typhon_span_end_at(ulong spanId, ulong ts);

        /// <summary>A copy of this thread's typhon_last_error_message().</summary>
        public static string LastErrorMessage() => Marshal.PtrToStringUTF8(typhon_last_error_message());

        /// <summary>typhon_error_name(code) ("TYPHON_ERR_NULL", ...).</summary>
        public static string ErrorName(int code) => Marshal.PtrToStringUTF8(typhon_error_name(code));
    }

    /// <summary>A span opened by <see cref="TyphonRecorder.Span"/> or
    /// <see cref="TyphonRecorder.TracedSpan"/>, for <c>using</c>. Dispose never throws: a span
    /// that is not this thread's innermost open one is left open and reported through
    /// <see cref="TyphonRecorder.ScopeErrors"/> and <see cref="TyphonRecorder.ScopeError"/>.</summary>
    public readonly struct SpanScope : IDisposable
    {
        readonly ulong _id;

        internal SpanScope(ulong id)
        {
            _id = id;
        }

        /// <summary>The span's id (0: nothing is recorded, e.g. no recorder is running).</summary>
        public ulong Id => _id;

        public void Dispose()
        {
            int code = Native.typhon_span_end(_id);
            if (code != Native.Ok) TyphonRecorder.ReportScopeError(code);
        }
    }

    /// <summary>
    /// Engine-facing helpers: UTF-8 names and payloads as ReadOnlySpan&lt;byte&gt; (a cached
    /// byte[], stackalloc, or on .NET 7+ a "name"u8 literal), errors as TyphonException. The
    /// write path allocates nothing and marshals nothing: blittable arguments, spans pinned
    /// for the call, no SafeHandle (the recorder is process-wide, there is no handle).
    /// </summary>
    public static unsafe class TyphonRecorder
    {
        public static string Version => Marshal.PtrToStringUTF8(Native.typhon_version());

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        static void Check(int code)
        {
            if (code != Native.Ok) Throw(code);
        }

        // Out of line, so that Check inlines into the write helpers as one compare.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Throw(int code)
        {
            throw new TyphonException(code);
        }

        /// <summary>UTF-8 bytes of a name, to cache once (e.g. in a static readonly field) and
        /// pass to the span and thread helpers without a conversion per call.</summary>
        public static byte[] Utf8(string s) => Encoding.UTF8.GetBytes(s);

        // The string overloads' names: a per-thread cache from the string object (by reference,
        // so a lookup is one identity hash and one compare, not a hash of the text) to its UTF-8
        // bytes. A name is encoded (and its bytes allocated) the first time a thread uses it
        // while its cache entry is free; a name whose entry another name holds is encoded into
        // the thread's scratch buffer on every call instead: slower, but it allocates nothing
        // either. Literals are interned, so `Span("physics")` always finds its entry.
        const int NameCacheSize = 256; // entries per thread, a power of two
        [ThreadStatic] static string[] t_names;
        [ThreadStatic] static byte[][] t_utf8;
        [ThreadStatic] static byte[] t_scratch;

        /// <summary>The UTF-8 bytes of <paramref name="name"/>, from this thread's cache: after a
        /// thread's first use of a name, no allocation. The bytes of a name not in the cache are
        /// in the thread's scratch buffer, valid until its next call.</summary>
        public static ReadOnlySpan<byte> CachedUtf8(string name)
        {
            if (name == null) throw new ArgumentNullException(nameof(name));
            string[] names = t_names;
            if (names == null)
            {
                names = t_names = new string[NameCacheSize];
                t_utf8 = new byte[NameCacheSize][];
            }
            int i = RuntimeHelpers.GetHashCode(name) & (NameCacheSize - 1);
            if ((object)names[i] == (object)name) return t_utf8[i];
            if (names[i] == null)
            {
                t_utf8[i] = Encoding.UTF8.GetBytes(name);
                names[i] = name;
                return t_utf8[i];
            }
            int n = Encoding.UTF8.GetMaxByteCount(name.Length);
            if (t_scratch == null || t_scratch.Length < n) t_scratch = new byte[Math.Max(n, 256)];
            int len = Encoding.UTF8.GetBytes(name, 0, name.Length, t_scratch, 0);
            return new ReadOnlySpan<byte>(t_scratch, 0, len);
        }

        /// <summary>Starts the process-wide recorder writing to <paramref name="outputPath"/>.</summary>
        public static void Start(string outputPath, ulong pageSize = 0, ulong ringBytes = 0, ulong flushIntervalUs = 0, uint zstdLevel = 0)
        {
            if (outputPath == null) throw new ArgumentNullException(nameof(outputPath));
            byte[] path = new byte[Encoding.UTF8.GetByteCount(outputPath) + 1]; // + the NUL
            Encoding.UTF8.GetBytes(outputPath, 0, outputPath.Length, path, 0);
            fixed (byte* p = path)
            {
                var cfg = new TyphonConfig
                {
                    OutputPath = (IntPtr)p,
                    PageSize = new UIntPtr(pageSize),
                    RingBytes = new UIntPtr(ringBytes),
                    FlushIntervalUs = flushIntervalUs,
                    ZstdLevel = zstdLevel,
                };
                Check(Native.typhon_start(&cfg));
            }
        }

        static ulong Ns(TimeSpan t) => t <= TimeSpan.Zero ? 0 : (ulong)t.Ticks * 100;

        // A NUL-terminated UTF-8 copy of s (null for null), pinned by the caller with fixed.
        static byte[] CString(string s)
        {
            if (s == null) return null;
            byte[] b = new byte[Encoding.UTF8.GetByteCount(s) + 1];
            Encoding.UTF8.GetBytes(s, 0, s.Length, b, 0);
            return b;
        }

        /// <summary>typhon_start_ex with <paramref name="config"/>, its Size set to this binding's
        /// sizeof(TyphonConfigEx) (the string fields must point to pinned NUL-terminated UTF-8).</summary>
        public static void StartEx(ref TyphonConfigEx config)
        {
            config.Size = (UIntPtr)sizeof(TyphonConfigEx);
            fixed (TyphonConfigEx* p = &config) Check(Native.typhon_start_ex(p));
        }

        /// <summary>Starts the process-wide recorder from <paramref name="o"/>: a file, rotating
        /// segments, or window mode (typhon_start_ex).</summary>
        public static void Start(RecorderOptions o)
        {
            if (o == null) throw new ArgumentNullException(nameof(o));
            byte[] output = CString(o.OutputPath), dir = CString(o.SnapshotDir), span = CString(o.SpanOverName);
            fixed (byte* po = output, pd = dir, ps = span)
            {
                var cfg = new TyphonConfigEx
                {
                    OutputPath = (IntPtr)po,
                    PageSize = new UIntPtr(o.PageSize),
                    RingBytes = new UIntPtr(o.RingBytes),
                    FlushIntervalUs = o.FlushIntervalUs,
                    ZstdLevel = o.ZstdLevel,
                    MaxPageAgeUs = (ulong)(Ns(o.MaxPageAge) / 1000),
                    WindowNs = Ns(o.Window),
                    WindowBytes = o.WindowBytes,
                    SnapshotDir = (IntPtr)pd,
                    RotateSegmentBytes = o.RotateSegmentBytes,
                    RotateKeep = o.RotateKeep,
                    TickOverNs = Ns(o.TickOver),
                    SpanOverName = (IntPtr)ps,
                    SpanOverNs = Ns(o.SpanOver),
                    TriggerKeepAfterNs = Ns(o.TriggerKeepAfter),
                    TriggerAtMostEveryNs = Ns(o.TriggerAtMostEvery),
                };
                StartEx(ref cfg);
            }
        }

        /// <summary>Writes a snapshot of the window and returns once the file is complete
        /// (typhon_snapshot; blocks for about the time of writing the window out).</summary>
        public static SnapshotFile Snapshot()
        {
            const int Cap = 4096; // PATH_MAX
            byte* path = stackalloc byte[Cap];
            TyphonSnapshot s = default;
            s.Size = (UIntPtr)sizeof(TyphonSnapshot);
            Check(Native.typhon_snapshot(path, (UIntPtr)Cap, &s));
            return new SnapshotFile(Encoding.UTF8.GetString(path, (int)s.PathLen), s);
        }

        /// <summary>Asks for a snapshot of the window and returns at once (any thread; no
        /// allocation: the reason is encoded on the stack, cut to 256 characters). False if one
        /// is already pending or being written (ErrBusy).</summary>
        public static bool RequestSnapshot(string reason)
        {
            int code;
            if (reason == null)
            {
                code = Native.typhon_request_snapshot(null);
            }
            else
            {
                int n = Math.Min(reason.Length, 256); // the recorder keeps 256 characters
                byte* buf = stackalloc byte[n * 3 + 1];  // UTF-8: at most 3 bytes per UTF-16 unit
                int len;
                fixed (char* c = reason) len = Encoding.UTF8.GetBytes(c, n, buf, n * 3);
                buf[len] = 0;
                code = Native.typhon_request_snapshot(buf);
            }
            if (code == Native.ErrBusy) return false;
            Check(code);
            return true;
        }

        /// <summary>How old a partly filled page may get before it is written out, for recorders started
        /// after this call (<c>TimeSpan.Zero</c>: the default, 1 s): what a viewer following the
        /// recording (<c>typhon-rec live</c>) waits at most for a quiet thread's records.</summary>
        public static void SetMaxPageAge(TimeSpan age) => Check(Native.typhon_set_max_page_age_us((ulong)(age.Ticks / 10)));

        /// <summary>Writes out everything recorded, assembles the file, returns the final counters.</summary>
        public static TyphonStats Finish()
        {
            TyphonStats s;
            Check(Native.typhon_finish(&s));
            return s;
        }

        public static TyphonStats Stats()
        {
            TyphonStats s;
            Check(Native.typhon_stats(&s));
            return s;
        }

        /// <summary>Longest time between two drains of the rings so far (a gap longer than a ring holds drops records).</summary>
        public static TimeSpan LongestDrainGap()
        {
            ulong ns;
            Check(Native.typhon_longest_drain_gap(&ns));
            return TimeSpan.FromTicks((long)(ns / 100));
        }

        /// <summary>Window mode: records aged out of the window so far (written, not lost; 0
        /// without a window).</summary>
        public static ulong EvictedRecords()
        {
            ulong n;
            Check(Native.typhon_evicted_records(&n));
            return n;
        }

        /// <summary>Window mode: pages aged out of the window so far.</summary>
        public static ulong EvictedPages()
        {
            ulong n;
            Check(Native.typhon_evicted_pages(&n));
            return n;
        }

        /// <summary>Records whose caller time lay more than 10 s ahead of the clock and were
        /// clamped (the running recorder's count, or the last finished one's).</summary>
        public static ulong Clamped()
        {
            ulong n;
            Check(Native.typhon_clamped(&n));
            return n;
        }

        /// <summary>Returns once the flusher has drained every record written before the call.</summary>
        public static void Drain() => Check(Native.typhon_drain());

        /// <summary>SIGINT, SIGTERM or exit() finish the running recording (a complete file, not
        /// OUT.parts/) before the process ends as it would have: typhon_finish_on_termination.</summary>
        public static void FinishOnTermination() => Check(Native.typhon_finish_on_termination());

        /// <summary>The clock in raw ticks, the unit of the *_at functions.</summary>
        public static ulong Now => Native.typhon_now();

        /// <summary>CLOCK_MONOTONIC nanoseconds to raw ticks.</summary>
        public static ulong NsToTicks(ulong ns) => Native.typhon_ns_to_ticks(ns);

        /// <summary>Names this thread; call before its first event (pool threads: ThreadKind.Pool).</summary>
        public static void SetThreadInfo(ReadOnlySpan<byte> utf8Name, ThreadKind kind)
        {
            fixed (byte* p = &MemoryMarshal.GetReference(utf8Name))
            {
                byte none = 0;
                Check(Native.typhon_set_thread_info(p != null ? p : &none, (UIntPtr)utf8Name.Length, (byte)kind));
            }
        }

        public static void SetThreadInfo(string name, ThreadKind kind) => SetThreadInfo(Utf8(name), kind);

        /// <summary>Claims this thread's slot now (after SetThreadInfo), so its first event costs no more than any other.</summary>
        public static void RegisterThread() => Check(Native.typhon_register_thread());

        public static (ulong Hi, ulong Lo) CommandCausalId(uint session, uint drainTick, ushort seq)
        {
            ulong hi, lo;
            Check(Native.typhon_command_causal_id(session, drainTick, seq, &hi, &lo));
            return (hi, lo);
        }

        /// <summary>Opens a NamedSpan; returns its id for EndSpan (0: nothing recorded, EndSpan(0) is a no-op).</summary>
        public static ulong BeginSpan(ReadOnlySpan<byte> utf8Name)
        {
            ulong id;
            fixed (byte* p = &MemoryMarshal.GetReference(utf8Name))
            {
                byte none = 0;
                Check(Native.typhon_span_begin(p != null ? p : &none, (UIntPtr)utf8Name.Length, &id));
            }
            return id;
        }

        /// <summary>Opens a NamedSpan called <paramref name="name"/> (see <see cref="CachedUtf8"/>).</summary>
        public static ulong BeginSpan(string name) => BeginSpan(CachedUtf8(name));

        /// <summary>Opens a TracedSpan carrying a trace context (a command's causal id, or a W3C trace id).</summary>
        public static ulong BeginTracedSpan(ReadOnlySpan<byte> utf8Name, (ulong Hi, ulong Lo) trace)
        {
            ulong id;
            fixed (byte* p = &MemoryMarshal.GetReference(utf8Name))
            {
                byte none = 0;
                Check(Native.typhon_traced_span_begin(p != null ? p : &none, (UIntPtr)utf8Name.Length, trace.Hi, trace.Lo, &id));
            }
            return id;
        }

        /// <summary>Opens a TracedSpan called <paramref name="name"/> (see <see cref="CachedUtf8"/>).</summary>
        public static ulong BeginTracedSpan(string name, (ulong Hi, ulong Lo) trace) => BeginTracedSpan(CachedUtf8(name), trace);

        /// <summary>Ends this thread's innermost open span; throws (ErrSpanMismatch) for any other id.</summary>
        public static void EndSpan(ulong spanId) => Check(Native.typhon_span_end(spanId));

        /// <summary>Opens a NamedSpan ended by the scope's Dispose (<c>using (TyphonRecorder.Span(name)) { ... }</c>).</summary>
        public static SpanScope Span(ReadOnlySpan<byte> utf8Name) => new SpanScope(BeginSpan(utf8Name));

        /// <summary>Opens a NamedSpan called <paramref name="name"/>, ended by the scope's Dispose
        /// (<c>using (TyphonRecorder.Span("physics")) { ... }</c>; no allocation after the
        /// thread's first use of the name).</summary>
        public static SpanScope Span(string name) => new SpanScope(BeginSpan(CachedUtf8(name)));

        /// <summary>Opens a TracedSpan called <paramref name="name"/>, ended by the scope's Dispose.</summary>
        public static SpanScope TracedSpan(string name, (ulong Hi, ulong Lo) trace) =>
            new SpanScope(BeginTracedSpan(CachedUtf8(name), trace));

        /// <summary>Opens a TracedSpan ended by the scope's Dispose.</summary>
        public static SpanScope TracedSpan(ReadOnlySpan<byte> utf8Name, (ulong Hi, ulong Lo) trace) =>
            new SpanScope(BeginTracedSpan(utf8Name, trace));

        static long s_scopeErrors;
        [ThreadStatic] static int t_lastScopeError;

        /// <summary>How many SpanScope.Dispose calls failed (process-wide), e.g. a scope ended
        /// out of order: the span was left open.</summary>
        public static long ScopeErrors => Interlocked.Read(ref s_scopeErrors);

        /// <summary>The code of this thread's last failed SpanScope.Dispose (0: none).</summary>
        public static int LastScopeError => t_lastScopeError;

        /// <summary>Called (on the disposing thread) with the code and the library's message when a
        /// SpanScope.Dispose fails; exceptions it throws are swallowed, Dispose never throws.</summary>
        public static Action<int, string> ScopeError;

        internal static void ReportScopeError(int code)
        {
            Interlocked.Increment(ref s_scopeErrors);
            t_lastScopeError = code;
            Action<int, string> handler = ScopeError;
            if (handler == null) return;
            try
            {
                handler(code, Native.ErrorName(code) + ": " + Native.LastErrorMessage());
            }
            catch
            {
                // Dispose must not throw; the counter has it.
            }
        }

        /// <summary>Which CeLog zones are recorded (process-wide, from the next event on).</summary>
        public static void CeLogSetZones(uint zoneUser, uint zoneCE, uint zoneProcess = 0) =>
            Check(Native.typhon_celog_set_zones(zoneUser, zoneCE, zoneProcess));

        /// <summary>CeLogData: one event of id <paramref name="id"/> carrying <paramref name="data"/>
        /// (at most 4095 bytes; longer data is refused with ErrInvalid, never cut).</summary>
        public static void CeLogData(bool timeStamp, ushort id, ReadOnlySpan<byte> data, uint zoneUser, uint zoneCE, ushort flag = 0, bool flagged = false)
        {
            // Lengths past 65535 cannot be expressed; 65535 is refused like any length above 4095.
            ushort len = data.Length > ushort.MaxValue ? ushort.MaxValue : (ushort)data.Length;
            fixed (byte* p = &MemoryMarshal.GetReference(data))
                Check(Native.typhon_celog_data(timeStamp ? 1 : 0, id, p, len, zoneUser, zoneCE, flag, flagged ? 1 : 0));
        }

        /// <summary>Writes a record of any kind: <paramref name="payload"/> is everything after the 12-byte header.</summary>
        public static void WriteRecord(byte kind, ReadOnlySpan<byte> payload)
        {
            fixed (byte* p = &MemoryMarshal.GetReference(payload))
                Check(Native.typhon_write_record(kind, p, (UIntPtr)payload.Length));
        }

        public static void IngressReceived(uint session, ushort seq, ushort wireIdx, ushort bytes) => Check(Native.typhon_ingress_received(session, seq, wireIdx, bytes));
        public static void IngressAdmitted(uint session, ushort seq, ushort wireIdx, uint drainTick) => Check(Native.typhon_ingress_admitted(session, seq, wireIdx, drainTick));
        public static void IngressDropped(uint session, ushort seq, byte reason) => Check(Native.typhon_ingress_dropped(session, seq, reason));
        public static void CommandConsumed(uint session, ushort seq, ushort sysIdx) => Check(Native.typhon_command_consumed(session, seq, sysIdx));
        public static void EgressSent(uint session, uint tick, uint bytes, ushort acks) => Check(Native.typhon_egress_sent(session, tick, bytes, acks));
        public static void TickStart() => Check(Native.typhon_tick_start());
        public static void TickEnd(byte overloadLevel, byte tickMultiplier) => Check(Native.typhon_tick_end(overloadLevel, tickMultiplier));
        public static void PhaseStart(byte phase) => Check(Native.typhon_phase_start(phase));
        public static void PhaseEnd(byte phase) => Check(Native.typhon_phase_end(phase));
        public static void Instant(int nameId, int payload) => Check(Native.typhon_instant(nameId, payload));

        /// <summary>An Instant at <paramref name="ts"/> (raw ticks from Now or NsToTicks).</summary>
        public static void InstantAt(ulong ts, int nameId, int payload) => Check(Native.typhon_instant_at(ts, nameId, payload));

        /// <summary>A NamedInstant: an instant called <paramref name="utf8Name"/> (UTF-8, no NUL), shown by that name.</summary>
        public static void NamedInstant(ReadOnlySpan<byte> utf8Name, int payload)
        {
            fixed (byte* p = &MemoryMarshal.GetReference(utf8Name))
            {
                byte none = 0;
                Check(Native.typhon_named_instant(p != null ? p : &none, (UIntPtr)utf8Name.Length, payload));
            }
        }

        /// <summary>A NamedInstant called <paramref name="name"/> (see <see cref="CachedUtf8"/>).</summary>
        public static void NamedInstant(string name, int payload) => NamedInstant(CachedUtf8(name), payload);

        /// <summary>A counter's value: <paramref name="utf8Name"/> (UTF-8, no NUL) is <paramref name="value"/> now.</summary>
        public static void Counter(ReadOnlySpan<byte> utf8Name, long value)
        {
            fixed (byte* p = &MemoryMarshal.GetReference(utf8Name))
            {
                byte none = 0;
                Check(Native.typhon_counter(p != null ? p : &none, (UIntPtr)utf8Name.Length, value));
            }
        }

        /// <summary>A counter's value, a double (recorded exactly).</summary>
        public static void Counter(ReadOnlySpan<byte> utf8Name, double value)
        {
            fixed (byte* p = &MemoryMarshal.GetReference(utf8Name))
            {
                byte none = 0;
                Check(Native.typhon_counter_f64(p != null ? p : &none, (UIntPtr)utf8Name.Length, value));
            }
        }

        /// <summary>A counter's value at <paramref name="ts"/> (raw ticks from Now or NsToTicks).</summary>
        public static void CounterAt(ulong ts, ReadOnlySpan<byte> utf8Name, long value)
        {
            fixed (byte* p = &MemoryMarshal.GetReference(utf8Name))
            {
                byte none = 0;
                Check(Native.typhon_counter_at(ts, p != null ? p : &none, (UIntPtr)utf8Name.Length, value));
            }
        }

        /// <summary>A double counter's value at <paramref name="ts"/> (raw ticks).</summary>
        public static void CounterAt(ulong ts, ReadOnlySpan<byte> utf8Name, double value)
        {
            fixed (byte* p = &MemoryMarshal.GetReference(utf8Name))
            {
                byte none = 0;
                Check(Native.typhon_counter_f64_at(ts, p != null ? p : &none, (UIntPtr)utf8Name.Length, value));
            }
        }

        /// <summary>A counter's value at <paramref name="ts"/> under <paramref name="name"/> (see <see cref="CachedUtf8"/>).</summary>
        public static void CounterAt(ulong ts, string name, long value) => CounterAt(ts, CachedUtf8(name), value);

        /// <summary>A double counter's value at <paramref name="ts"/> under <paramref name="name"/>.</summary>
        public static void CounterAt(ulong ts, string name, double value) => CounterAt(ts, CachedUtf8(name), value);

        /// <summary>A counter's value under <paramref name="name"/> (see <see cref="CachedUtf8"/>).</summary>
        public static void Counter(string name, long value) => Counter(CachedUtf8(name), value);

        /// <summary>A double counter's value under <paramref name="name"/> (see <see cref="CachedUtf8"/>).</summary>
        public static void Counter(string name, double value) => Counter(CachedUtf8(name), value);

        /// <summary>A NamedPhaseStart called <paramref name="name"/> (see <see cref="CachedUtf8"/>).</summary>
        public static void NamedPhaseStart(byte phase, string name) => NamedPhaseStart(phase, CachedUtf8(name));

        /// <summary>A NamedPhaseEnd called <paramref name="name"/> (see <see cref="CachedUtf8"/>).</summary>
        public static void NamedPhaseEnd(byte phase, string name) => NamedPhaseEnd(phase, CachedUtf8(name));

        /// <summary>A NamedPhaseStart: phase <paramref name="phase"/>, called <paramref name="utf8Name"/>, starts.</summary>
        public static void NamedPhaseStart(byte phase, ReadOnlySpan<byte> utf8Name)
        {
            fixed (byte* p = &MemoryMarshal.GetReference(utf8Name))
            {
                byte none = 0;
                Check(Native.typhon_named_phase_start(phase, p != null ? p : &none, (UIntPtr)utf8Name.Length));
            }
        }

        /// <summary>A NamedPhaseEnd: phase <paramref name="phase"/>, called <paramref name="utf8Name"/>, ends.</summary>
        public static void NamedPhaseEnd(byte phase, ReadOnlySpan<byte> utf8Name)
        {
            fixed (byte* p = &MemoryMarshal.GetReference(utf8Name))
            {
                byte none = 0;
                Check(Native.typhon_named_phase_end(phase, p != null ? p : &none, (UIntPtr)utf8Name.Length));
            }
        }
    }
}
