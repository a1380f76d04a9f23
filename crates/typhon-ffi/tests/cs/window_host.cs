// A C# host of window mode, compiled by tests/ffi_csharp.rs with mcs against
// csharp/TyphonRecorder.cs and run under mono. It checks the size-prefixed TyphonConfigEx from
// C# (bad sizes refused; an older caller's smaller struct records a plain file, nothing past its
// size read), then records windowed through RecorderOptions, takes a Snapshot(), asks for one
// with RequestSnapshot(), and checks that CounterAt and RequestSnapshot allocate nothing.
// Prints "SNAPSHOT path=... records=... from=... to=...", "ALLOC ..." and "FAILURES n".
//
// Usage: mono window_host.exe <snapshot dir> <older caller's output.dat>
using System;
using System.IO;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using Typhon.Recorder;

static unsafe class WindowHost
{
    const int Events = 2000;
    static int failures;

    static void Fail(string what)
    {
        Console.Error.WriteLine("FAIL: " + what);
        failures++;
    }

    static void Expect(bool ok, string what)
    {
        if (!ok) Fail(what);
    }

    static void ExpectCode(int got, int want, string what)
    {
        if (got != want) Fail(what + ": " + Native.ErrorName(got) + ", want " + Native.ErrorName(want) + " (" + Native.LastErrorMessage() + ")");
    }

    static void ExpectError(int code, string text, Action call)
    {
        try
        {
            call();
            Fail("no exception, want " + Native.ErrorName(code));
        }
        catch (TyphonException e)
        {
            if (e.Code != code || e.Message.IndexOf(text, StringComparison.Ordinal) < 0)
                Fail("exception " + e.Code + " \"" + e.Message + "\", want " + Native.ErrorName(code) + " ..." + text + "...");
        }
    }

    static int Snapshots(string dir)
    {
        int n = 0;
        foreach (string f in Directory.GetFiles(dir, "*.dat"))
            if (!Path.GetFileName(f).StartsWith(".", StringComparison.Ordinal)) n++;
        return n;
    }

    static bool WaitFor(string dir, int n)
    {
        for (int i = 0; i < 3000; i++)
        {
            if (Snapshots(dir) >= n) return true;
            Thread.Sleep(10);
        }
        return false;
    }

    static byte[] CString(string s)
    {
        byte[] b = new byte[Encoding.UTF8.GetByteCount(s) + 1];
        Encoding.UTF8.GetBytes(s, 0, s.Length, b, 0);
        return b;
    }

    static int Main(string[] args)
    {
        string dir = args[0], older = args[1];
        ExpectError(Native.ErrNotStarted, "typhon_snapshot", () => TyphonRecorder.Snapshot());
        TyphonRecorder.SetThreadInfo("cs-main", ThreadKind.Main);

        byte[] olderPath = CString(older);
        fixed (byte* po = olderPath)
        {
            // Sizes the library refuses.
            var cfg = new TyphonConfigEx { WindowNs = 60000000000UL };
            cfg.Size = (UIntPtr)8;
            ExpectCode(Native.typhon_start_ex(&cfg), Native.ErrStructSize, "size 8");
            cfg.Size = (UIntPtr)(Native.ConfigExMinSize + 4);
            ExpectCode(Native.typhon_start_ex(&cfg), Native.ErrStructSize, "size inside a field");
            // A newer caller's struct: 16 bytes more, one of them not 0.
            int size = sizeof(TyphonConfigEx);
            byte* big = stackalloc byte[size + 16];
            for (int i = 0; i < size + 16; i++) big[i] = 0;
            *(TyphonConfigEx*)big = cfg;
            ((TyphonConfigEx*)big)->Size = (UIntPtr)(size + 16);
            big[size + 9] = 1;
            ExpectCode(Native.typhon_start_ex((TyphonConfigEx*)big), Native.ErrStructSize, "a newer caller's non-zero field");
            Expect(Native.LastErrorMessage().IndexOf("not 0", StringComparison.Ordinal) >= 0, "the message says why: " + Native.LastErrorMessage());

            // An older caller: its struct ends before WindowNs; past it, garbage never read.
            var old = new TyphonConfigEx
            {
                OutputPath = (IntPtr)po,
                RingBytes = (UIntPtr)(1 << 20),
                FlushIntervalUs = 1000,
                WindowNs = 12345,
                WindowBytes = 1,
                SnapshotDir = (IntPtr)8,
                SpanOverName = (IntPtr)8,
            };
            old.Size = (UIntPtr)(int)Marshal.OffsetOf(typeof(TyphonConfigEx), "WindowNs");
            ExpectCode(Native.typhon_start_ex(&old), Native.Ok, "an older caller's config");
        }
        for (int i = 0; i < 100; i++) TyphonRecorder.Instant(8, i);
        ExpectError(Native.ErrNotWindowed, "no window", () => TyphonRecorder.Snapshot());
        ExpectError(Native.ErrNotWindowed, "typhon_request_snapshot", () => TyphonRecorder.RequestSnapshot("x"));
        TyphonRecorder.Finish();

        // Windowed: a minute, so the snapshots hold everything written.
        TyphonRecorder.Start(new RecorderOptions
        {
            Window = TimeSpan.FromMinutes(1),
            SnapshotDir = dir,
            RingBytes = 1 << 20,
            FlushIntervalUs = 1000,
        });
        for (int i = 0; i < Events; i++) TyphonRecorder.Instant(7, i);
        TyphonRecorder.CounterAt(TyphonRecorder.Now, "cs-queue", 42L);
        TyphonRecorder.CounterAt(TyphonRecorder.Now, "cs-load", 0.25);
        // The hot path allocates nothing (the names are cached after their first use).
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < 1000; i++) TyphonRecorder.CounterAt(TyphonRecorder.Now, "cs-queue", (long)i);
        long counterBytes = GC.GetAllocatedBytesForCurrentThread() - before;

        SnapshotFile s = TyphonRecorder.Snapshot();
        Expect(File.Exists(s.Path), "the snapshot exists: " + s.Path);
        Expect(s.FromNs < s.ToNs && s.Records > Events, "from/to/records");
        Console.WriteLine("SNAPSHOT path=" + s.Path + " records=" + s.Records + " from=" + s.FromNs + " to=" + s.ToNs);

        int n = Snapshots(dir);
        Expect(TyphonRecorder.RequestSnapshot("cs-request"), "the request was placed");
        Expect(WaitFor(dir, n + 1), "the request wrote a snapshot");
        // A second request, after the first was JIT-compiled: no allocation either.
        n = Snapshots(dir);
        before = GC.GetAllocatedBytesForCurrentThread();
        bool placed = TyphonRecorder.RequestSnapshot("cs-request-2");
        long requestBytes = GC.GetAllocatedBytesForCurrentThread() - before;
        if (placed) Expect(WaitFor(dir, n + 1), "the second request wrote a snapshot");
        // The measure sees an allocation (it is not 0 for want of support).
        before = GC.GetAllocatedBytesForCurrentThread();
        byte[] control = new byte[1000];
        GC.KeepAlive(control);
        Expect(GC.GetAllocatedBytesForCurrentThread() - before >= 1000, "the allocation measure works");
        Console.WriteLine("ALLOC counter_at=" + counterBytes + " request_snapshot=" + requestBytes);

        TyphonStats st = TyphonRecorder.Finish();
        Expect(st.Missed == 0, "nothing missed");
        Console.WriteLine("SNAPSHOTS " + Snapshots(dir));
        Console.WriteLine("FAILURES " + failures);
        return failures == 0 ? 0 : 1;
    }
}
