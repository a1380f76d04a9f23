// A C# host of the recorder, compiled by tests/ffi_csharp.rs with mcs against
// csharp/TyphonRecorder.cs and run under mono with libtyphon_ffi.so. It records from the main
// thread (ticks, the correlation chain, CeLog), from ROUNDS x THREADS dedicated Threads (each
// round's threads exit before the next starts, so their slots must be retired and reused) and
// from ThreadPool work items that allocate enough to make the GC collect while they record;
// checks the binding's error paths (TyphonException with the library's message, scopes that
// report a mismatch without throwing) and that the hot path allocates nothing; prints what it
// did and the final stats ("STATS key=value ...") for the Rust test, which checks the file.
//
// Usage: mono ffi_host.exe <output.dat>
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Threading;
using Typhon.Recorder;

static unsafe class FfiHost
{
    const int Rounds = 3;
    const int Threads = 4;
    const int Events = 500;
    const int PoolItems = 48;
    const int PoolEvents = 400;
    const int PoolItemBase = 1000; // Instant name_id of pool item k: PoolItemBase + k
    const int Ticks = 20;
    const int CommandsPerTick = 5;
    const uint Session = 7;
    const byte CustomKind = 200;

    const int CachedNames = 300;
    static readonly byte[] Ai = TyphonRecorder.Utf8("ai");
    static readonly byte[] Simulate = TyphonRecorder.Utf8("simulate");
    static readonly byte[] ApplyCommand = TyphonRecorder.Utf8("apply-command");
    static readonly byte[] Work = TyphonRecorder.Utf8("work");

    static readonly byte[] LongName = TyphonRecorder.Utf8(new string('n', 5000));

    static int failures;
    static long hotPathBytes; // allocated by the workers' hot paths, summed

    static void Fail(string what)
    {
        Console.Error.WriteLine("FAIL: " + what);
        Interlocked.Increment(ref failures);
    }

    static void Expect(bool ok, string what)
    {
        if (!ok) Fail(what);
    }

    /// The call must throw TyphonException with `code`, and its message must name the code,
    /// the function and contain `text`.
    static void ExpectError(int code, string func, string text, Action call)
    {
        try
        {
            call();
            Fail(func + ": no exception, want " + Native.ErrorName(code));
        }
        catch (TyphonException e)
        {
            string prefix = Native.ErrorName(code) + ": " + func + ": ";
            if (e.Code != code || !e.Message.StartsWith(prefix, StringComparison.Ordinal) || e.Message.IndexOf(text, StringComparison.Ordinal) < 0)
                Fail("exception " + e.Code + " \"" + e.Message + "\", want " + prefix + "..." + text + "...");
        }
    }

    static void ExpectEndSpanMismatch(ulong spanId)
    {
        ExpectError(Native.ErrSpanMismatch, "typhon_span_end", "innermost", () => TyphonRecorder.EndSpan(spanId));
    }

    static void Worker(int id)
    {
        TyphonRecorder.SetThreadInfo("cs-worker-" + id, ThreadKind.Worker);
        // Odd workers claim their slot up front; even ones on their first event.
        if (id % 2 == 1) TyphonRecorder.RegisterThread();

        Span<byte> custom = stackalloc byte[3];
        Span<byte> celog = stackalloc byte[4];
        long allocatedBefore = 0;
        for (int i = 0; i < Events; i++)
        {
            // From the third iteration on, the hot path must not allocate (the first two
            // JIT-compile, and allocate the thread's [ThreadStatic] storage).
            if (i == 2) allocatedBefore = GC.GetAllocatedBytesForCurrentThread();
            // The string overloads: names from the thread's UTF-8 cache, no allocation.
            using (SpanScope frame = TyphonRecorder.Span("frame"))
            {
                // One Instant per iteration: (thread id, i); the test checks every one arrived.
                TyphonRecorder.Instant(id, i);
                TyphonRecorder.IngressReceived((uint)id, (ushort)i, 0, 64);
                var causal = TyphonRecorder.CommandCausalId((uint)id, (uint)i, (ushort)i);
                using (TyphonRecorder.TracedSpan("apply", causal))
                {
                    // Ending the outer span first is refused and changes nothing: EndSpan
                    // throws; a scope's Dispose does not, it reports the mismatch.
                    if (i == 0)
                    {
                        // (A method, not a lambda here: a closure over `frame` would be
                        // allocated on every iteration.)
                        ExpectEndSpanMismatch(frame.Id);
                    }
                    else
                    {
                        long errorsBefore = TyphonRecorder.ScopeErrors;
                        frame.Dispose();
                        if (TyphonRecorder.LastScopeError != Native.ErrSpanMismatch || TyphonRecorder.ScopeErrors <= errorsBefore)
                            Fail("scope mismatch not reported");
                    }
                }
                celog[0] = (byte)i;
                celog[1] = (byte)(i >> 8);
                TyphonRecorder.CeLogData(true, 0x2000, celog, 0, 1);
                custom[0] = (byte)id;
                custom[1] = (byte)i;
                custom[2] = (byte)(i >> 8);
                TyphonRecorder.WriteRecord(CustomKind, custom);
                TyphonRecorder.EgressSent((uint)id, (uint)i, 128, 1);
            }
        }
        long allocated = GC.GetAllocatedBytesForCurrentThread() - allocatedBefore;
        if (allocated != 0) Fail("cs-worker-" + id + ": the hot path allocated " + allocated + " bytes in " + (Events - 2) + " iterations");
        Interlocked.Add(ref hotPathBytes, allocated);
        // Bad input: a TyphonException with the library's message, each refused write counted
        // once (6 per worker).
        ExpectError(Native.ErrUtf8, "typhon_span_begin", "UTF-8", () => TyphonRecorder.BeginSpan(new byte[] { 0xff, 0xfe }));
        ExpectError(Native.ErrInvalid, "typhon_write_record", "TickStart", () => TyphonRecorder.WriteRecord(0, new byte[] { 1 }));
        ExpectError(Native.ErrTooLarge, "typhon_write_record", "8204 bytes", () => TyphonRecorder.WriteRecord(CustomKind, new byte[8192]));
        ExpectError(Native.ErrTooLarge, "typhon_span_begin", "5038 bytes", () => TyphonRecorder.Span(LongName));
        ExpectError(Native.ErrInvalid, "typhon_celog_data", "90", () => TyphonRecorder.CeLogData(true, 90, new byte[4], 0, 1));
        ulong id0 = 7;
        Expect(Native.typhon_span_begin(null, (UIntPtr)3, &id0) == Native.ErrNull, "raw NULL name");
        Expect(Marshal.PtrToStringUTF8(Native.typhon_last_error_message()).StartsWith("typhon_span_begin: ", StringComparison.Ordinal), "raw message");
        // Thread exit: the recorder's thread-local destructors retire the slot.
    }

    [ThreadStatic] static bool poolThreadNamed;
    static readonly HashSet<int> poolThreadIds = new HashSet<int>();

    static void PoolItem(int item, byte[][] survivors)
    {
        if (!poolThreadNamed)
        {
            // Pool threads never exit: their slots stay claimed; name each once.
            TyphonRecorder.SetThreadInfo("cs-pool-" + Thread.CurrentThread.ManagedThreadId, ThreadKind.Pool);
            poolThreadNamed = true;
            lock (poolThreadIds) poolThreadIds.Add(Thread.CurrentThread.ManagedThreadId);
        }
        using (TyphonRecorder.Span(Work))
        {
            for (int i = 0; i < PoolEvents; i++)
            {
                TyphonRecorder.Instant(PoolItemBase + item, i);
                // Garbage in the nursery (below SGen's 8000-byte large-object threshold), some
                // of it kept a while so that collections copy it; the payload is a fresh managed
                // array, pinned only for the call.
                survivors[(item * PoolEvents + i + 1) % survivors.Length] = new byte[4000];
                byte[] payload = new byte[4000];
                payload[0] = 0xCC;
                payload[1] = (byte)item;
                payload[2] = (byte)i;
                payload[3] = (byte)(i >> 8);
                survivors[(item * PoolEvents + i) % survivors.Length] = payload;
                TyphonRecorder.WriteRecord(CustomKind, new ReadOnlySpan<byte>(payload, 0, 4));
            }
        }
    }

    static int Main(string[] args)
    {
        if (args.Length != 1)
        {
            Console.Error.WriteLine("usage: ffi_host.exe <output.dat>");
            return 2;
        }
        var clock = System.Diagnostics.Stopwatch.StartNew();
        Console.WriteLine("VERSION " + TyphonRecorder.Version);
        ExpectError(Native.ErrNotStarted, "typhon_stats", "", () => TyphonRecorder.Stats());
        ExpectError(Native.ErrNotStarted, "typhon_drain", "", () => TyphonRecorder.Drain());
        Expect(Native.ErrorName(Native.ErrNoSlot) == "TYPHON_ERR_NO_SLOT", "error name");
        Expect(Native.ErrorName(-12345) == "TYPHON_ERR_UNKNOWN", "unknown error name");
        ExpectError(Native.ErrConfig, "typhon_start", "5000", () => TyphonRecorder.Start(args[0], pageSize: 5000));
        TyphonRecorder.Start(args[0], ringBytes: 1 << 20, flushIntervalUs: 1000);
        ExpectError(Native.ErrAlreadyStarted, "typhon_start", "already running", () => TyphonRecorder.Start(args[0]));

        TyphonRecorder.SetThreadInfo("cs-main", ThreadKind.Main);
        // One time far ahead of the clock: clamped (counted), not pinning cs-main's later records.
        TyphonRecorder.InstantAt(TyphonRecorder.NsToTicks(1UL << 62), -1, -1);
        TyphonRecorder.NamedInstant(TyphonRecorder.Utf8("cs-named"), 5);
        TyphonRecorder.Counter("cs-depth", -4L);
        TyphonRecorder.Counter("cs-load", 1.5);
        // String names through the thread's cache: 300 distinct names (more than its 256
        // entries, so some share an entry and take the scratch path), each used twice. The
        // second round allocates nothing.
        var names = new string[CachedNames];
        for (int i = 0; i < CachedNames; i++) names[i] = "n" + i;
        long namesBefore = 0;
        for (int i = 0; i < 2 * CachedNames; i++)
        {
            if (i == CachedNames) namesBefore = GC.GetAllocatedBytesForCurrentThread();
            TyphonRecorder.NamedInstant(names[i % CachedNames], i);
        }
        long namesAllocated = GC.GetAllocatedBytesForCurrentThread() - namesBefore;
        Expect(namesAllocated == 0, "string names allocated " + namesAllocated + " bytes once cached");

        // Dedicated threads, in rounds: each round's threads exit before the next starts.
        for (int r = 0; r < Rounds; r++)
        {
            var ts = new Thread[Threads];
            for (int t = 0; t < Threads; t++)
            {
                int id = r * Threads + t;
                ts[t] = new Thread(() => Worker(id));
                ts[t].Start();
            }
            foreach (var t in ts) t.Join();
            TyphonRecorder.Drain(); // the flusher drains the retired rings and frees their slots
        }
        Expect(TyphonRecorder.ScopeErrors == Rounds * Threads * (Events - 1), "scope errors " + TyphonRecorder.ScopeErrors);
        TyphonStats live = TyphonRecorder.Stats();
        Expect(live.Written >= (ulong)(Rounds * Threads * Events), "written after the rounds");

        // ThreadPool work items recording while the GC runs; the main thread records its ticks
        // and the correlation chain meanwhile, and forces full collections too.
        int gen0Before = GC.CollectionCount(0), gen2Before = GC.CollectionCount(2);
        var survivors = new byte[256][];
        var done = new CountdownEvent(PoolItems);
        int poolErrors = 0;
        for (int k = 0; k < PoolItems; k++)
        {
            int item = k;
            ThreadPool.QueueUserWorkItem(_ =>
            {
                try { PoolItem(item, survivors); }
                catch (Exception e) { Console.Error.WriteLine("pool item " + item + ": " + e); Interlocked.Increment(ref poolErrors); }
                finally { done.Signal(); }
            });
        }

        for (uint tick = 0; tick < Ticks; tick++)
        {
            TyphonRecorder.TickStart();
            TyphonRecorder.PhaseStart(1);
            using (TyphonRecorder.Span(Simulate))
            {
                for (int c = 0; c < CommandsPerTick; c++)
                {
                    ushort seq = (ushort)(tick * CommandsPerTick + c);
                    TyphonRecorder.IngressReceived(Session, seq, 0, 64);
                    TyphonRecorder.IngressAdmitted(Session, seq, 0, tick);
                    var causal = TyphonRecorder.CommandCausalId(Session, tick, seq);
                    using (TyphonRecorder.TracedSpan(ApplyCommand, causal))
                        TyphonRecorder.CommandConsumed(Session, seq, 2);
                }
            }
            if (tick == 3) TyphonRecorder.IngressDropped(Session, 999, 4);
            TyphonRecorder.NamedPhaseStart(2, Ai);
            TyphonRecorder.NamedPhaseEnd(2, Ai);
            TyphonRecorder.PhaseEnd(1);
            TyphonRecorder.EgressSent(Session, tick, 512, 1);
            TyphonRecorder.TickEnd(0, 1);
            GC.Collect();
        }
        Expect(done.Wait(TimeSpan.FromSeconds(120)), "pool items finished");
        Expect(poolErrors == 0, "pool items failed");
        int gen0 = GC.CollectionCount(0) - gen0Before;
        int gen2 = GC.CollectionCount(2) - gen2Before;
        Expect(gen0 >= 10, "only " + gen0 + " collections while recording");

        // CeLog zones: an event outside the enabled zones is filtered (counted), then all again.
        TyphonRecorder.CeLogSetZones(0, 1);
        TyphonRecorder.CeLogData(true, 0x2001, new byte[] { 9 }, 0, 2); // filtered
        TyphonRecorder.CeLogSetZones(0xFFFFFFFF, 0xFFFFFFFF);
        TyphonRecorder.CeLogData(true, 0x2001, new byte[] { 1, 2 }, 0, 2, flag: 5, flagged: true);
        TyphonRecorder.CeLogData(false, 0x2002, ReadOnlySpan<byte>.Empty, 1, 0);

        Expect(TyphonRecorder.LongestDrainGap() > TimeSpan.Zero, "a drain gap after several cycles");
        Expect(TyphonRecorder.EvictedRecords() == 0 && TyphonRecorder.EvictedPages() == 0,
            "a file recording evicts nothing");
        TyphonStats st = TyphonRecorder.Finish();
        ExpectError(Native.ErrNotStarted, "typhon_finish", "no recorder is running", () => TyphonRecorder.Finish());
        ulong clamped = TyphonRecorder.Clamped(); // the final count of the finished recorder
        TyphonRecorder.TickStart(); // after finish: a no-op, not an error
        Expect(st.Attempted == st.Written + st.Missed + st.SinkLost, "stats equation");

        Console.WriteLine("THREADS main=1 dedicated=" + (Rounds * Threads) + " at_once=" + Threads + " pool=" + poolThreadIds.Count);
        Console.WriteLine("GC gen0=" + gen0 + " gen2=" + gen2 + " hot_path_bytes=" + hotPathBytes + " scope_errors=" + TyphonRecorder.ScopeErrors);
        Console.WriteLine("STATS attempted=" + st.Attempted + " written=" + st.Written + " missed=" + st.Missed +
            " filtered=" + st.Filtered + " refused=" + st.Refused + " no_slot=" + st.NoSlot + " pages=" + st.Pages +
            " bytes=" + st.Bytes + " sink_errors=" + st.SinkErrors + " sink_lost=" + st.SinkLost + " slots=" + st.Slots +
            " clamped=" + clamped);
        Console.WriteLine("ELAPSED_MS " + clock.ElapsedMilliseconds);
        Console.WriteLine("FAILURES " + failures);
        return failures == 0 ? 0 : 1;
    }
}
