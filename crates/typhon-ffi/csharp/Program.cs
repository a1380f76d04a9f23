// Usage sample for the Typhon engine: a server tick loop recording its command pipeline.
// Build (not done in CI here): dotnet new console, add TyphonRecorder.cs and this file,
// <AllowUnsafeBlocks>true</AllowUnsafeBlocks>, copy libtyphon_recorder.so next to the binary.
using System;
using System.Threading;
using Typhon.Recorder;

static class Program
{
    static void Main()
    {
        Console.WriteLine($"typhon-recorder {TyphonRecorder.Version}");
        TyphonRecorder.Start("typhon-server.dat", flushIntervalUs: 5_000);
        TyphonRecorder.SetThreadInfo("sim-main"u8, ThreadKind.Main);

        // A dedicated network thread: long-lived, named before its first event.
        var net = new Thread(() =>
        {
            TyphonRecorder.SetThreadInfo("net-io"u8, ThreadKind.Worker);
            TyphonRecorder.RegisterThread(); // claim the slot now: the first event is then as cheap as the rest
            for (ushort seq = 0; seq < 100; seq++)
            {
                TyphonRecorder.IngressReceived(session: 7, seq, wireIdx: 0, bytes: 64);
                TyphonRecorder.IngressAdmitted(session: 7, seq, wireIdx: 0, drainTick: seq / 10u);
            }
        });
        net.Start();
        net.Join(); // the thread exits: its slot is retired and can be reused

        for (uint tick = 0; tick < 10; tick++)
        {
            TyphonRecorder.TickStart();
            using (TyphonRecorder.Span("simulate"u8))
            {
                for (ushort seq = (ushort)(tick * 10); seq < (tick + 1) * 10; seq++)
                {
                    var causal = TyphonRecorder.CommandCausalId(session: 7, drainTick: tick, seq);
                    ulong span = TyphonRecorder.BeginTracedSpan("apply-command"u8, causal);
                    TyphonRecorder.CommandConsumed(session: 7, seq, sysIdx: 2);
                    TyphonRecorder.EndSpan(span);
                }
            }
            TyphonRecorder.CeLogData(true, 0x2000, stackalloc byte[] { 1, 2, 3, 4 }, zoneUser: 0, zoneCE: 1);
            TyphonRecorder.EgressSent(session: 7, tick, bytes: 512, acks: 1);
            TyphonRecorder.TickEnd(overloadLevel: 0, tickMultiplier: 1);
        }

        Console.WriteLine($"at most {TyphonRecorder.LongestDrainGap().TotalMilliseconds:F1} ms between two drains of the rings");
        TyphonStats s = TyphonRecorder.Finish();
        Console.WriteLine($"attempted {s.Attempted} = written {s.Written} + missed {s.Missed} + lost {s.SinkLost}");
    }
}
