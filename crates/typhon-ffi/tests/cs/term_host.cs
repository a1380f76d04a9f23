// A C# host of TyphonRecorder.FinishOnTermination, run under mono by tests/ffi_termination.rs:
// the C host's protocol (tests/c/term_host.c) in managed threads. Writers record numbered
// instants without end (a drain every 1024, so no ring overflows); once each is past 20000
// the main thread prints "WRITTEN n0 n1 n2", then by args[1]: "exit" calls
// Environment.Exit(3), "signal" waits to be killed by the test's signal.
//
// Usage: mono term_host.exe <output.dat> exit|signal

using System;
using System.Linq;
using System.Threading;
using Typhon.Recorder;

static class TermHost
{
    const int Writers = 3;
    static readonly long[] Progress = new long[Writers];
    static bool stop;

    static void Main(string[] args)
    {
        TyphonRecorder.Start(args[0]);
        TyphonRecorder.FinishOnTermination();
        var threads = new Thread[Writers];
        for (int i = 0; i < Writers; i++)
        {
            int id = i;
            var t = new Thread(() =>
            {
                for (uint seq = 0; !Volatile.Read(ref stop); seq++)
                {
                    TyphonRecorder.Instant(id, (int)seq);
                    // A release store: the main thread's volatile read sees the write complete.
                    Volatile.Write(ref Progress[id], seq + 1L);
                    if (seq % 1024 == 1023) TyphonRecorder.Drain();
                }
            });
            t.IsBackground = true;
            t.Start();
            threads[i] = t;
        }
        for (int k = 0; k < 100; k++) TyphonRecorder.Instant(99, k);
        while (Enumerable.Range(0, Writers).Any(i => Volatile.Read(ref Progress[i]) < 20000))
            Thread.Sleep(1);
        var counts = Enumerable.Range(0, Writers).Select(i => Volatile.Read(ref Progress[i]).ToString());
        Console.WriteLine("WRITTEN " + string.Join(" ", counts));
        Console.Out.Flush();
        if (args[1] == "exit")
        {
            // Mono's Environment.Exit first brings every other managed thread to a stop, and
            // threads in a tight P/Invoke loop can keep it from ever doing so (seen once: the
            // host spun for 15 minutes before it reached exit's atexit handlers). So the
            // writers stop first; the recorder is still running, and exit's hook finishes it.
            Volatile.Write(ref stop, true);
            foreach (var t in threads) t.Join();
            Environment.Exit(3);
        }
        Thread.Sleep(Timeout.Infinite);
    }
}
