// Usage sample for the Typhon engine: a server tick loop recording its command pipeline.
// Mono:   mcs -langversion:7.2 -unsafe -out:sample.exe TyphonRecorder.cs Program.cs
//         LD_LIBRARY_PATH=target/release mono sample.exe
// .NET 8+: dotnet new console, add TyphonRecorder.cs and this file,
//         <AllowUnsafeBlocks>true</AllowUnsafeBlocks>, copy libtyphon_ffi.so next to the binary.
// tests/ffi_csharp.rs compiles and runs it with mcs/mono and checks the recording it makes.
using System;
using System.Threading;
using Typhon.Recorder;

// UTF-8 names, converted once: "name"u8 literals on .NET 7+, cached arrays elsewhere (Mono).
static class Names
{
#if NET7_0_OR_GREATER
    public static ReadOnlySpan<byte> SimMain => "sim-main"u8;
    public static ReadOnlySpan<byte> NetIo => "net-io"u8;
    public static ReadOnlySpan<byte> Simulate => "simulate"u8;
    public static ReadOnlySpan<byte> ApplyCommand => "apply-command"u8;
#else
    static readonly byte[] simMain = TyphonRecorder.Utf8("sim-main");
    static readonly byte[] netIo = TyphonRecorder.Utf8("net-io");
    static readonly byte[] simulate = TyphonRecorder.Utf8("simulate");
    static readonly byte[] applyCommand = TyphonRecorder.Utf8("apply-command");
    public static ReadOnlySpan<byte> SimMain => simMain;
    public static ReadOnlySpan<byte> NetIo => netIo;
    public static ReadOnlySpan<byte> Simulate => simulate;
    public static ReadOnlySpan<byte> ApplyCommand => applyCommand;
#endif
}

static class Program
{
    static int Main()
    {
        Console.WriteLine($"typhon-recorder {TyphonRecorder.Version}");
        try
        {
            TyphonRecorder.Start("typhon-server.dat", flushIntervalUs: 5000);
        }
        catch (TyphonException e)
        {
            Console.Error.WriteLine(e.Message); // e.g. "TYPHON_ERR_IO: typhon_start: ..."
            return 1;
        }
        TyphonRecorder.SetThreadInfo(Names.SimMain, ThreadKind.Main);

        // A dedicated network thread: long-lived, named before its first event.
        var net = new Thread(() =>
        {
            TyphonRecorder.SetThreadInfo(Names.NetIo, ThreadKind.Worker);
            TyphonRecorder.RegisterThread(); // claim the slot now: the first event is then as cheap as the rest
            for (ushort seq = 0; seq < 100; seq++)
            {
                TyphonRecorder.IngressReceived(session: 7, seq, wireIdx: 0, bytes: 64);
                TyphonRecorder.IngressAdmitted(session: 7, seq, wireIdx: 0, drainTick: seq / 10u);
            }
        });
        net.Start();
        net.Join(); // the thread exits: its slot is retired and can be reused

        Span<byte> celog = stackalloc byte[4];
        for (uint tick = 0; tick < 10; tick++)
        {
            TyphonRecorder.TickStart();
            using (TyphonRecorder.Span(Names.Simulate))
            {
                for (ushort seq = (ushort)(tick * 10); seq < (tick + 1) * 10; seq++)
                {
                    var causal = TyphonRecorder.CommandCausalId(session: 7, drainTick: tick, seq);
                    using (TyphonRecorder.TracedSpan(Names.ApplyCommand, causal))
                        TyphonRecorder.CommandConsumed(session: 7, seq, sysIdx: 2);
                }
            }
            celog[0] = (byte)tick;
            TyphonRecorder.CeLogData(true, 0x2000, celog, zoneUser: 0, zoneCE: 1);
            TyphonRecorder.EgressSent(session: 7, tick, bytes: 512, acks: 1);
            TyphonRecorder.TickEnd(overloadLevel: 0, tickMultiplier: 1);
        }

        Console.WriteLine($"at most {TyphonRecorder.LongestDrainGap().TotalMilliseconds:F1} ms between two drains of the rings");
        TyphonStats s = TyphonRecorder.Finish();
        Console.WriteLine($"attempted {s.Attempted} = written {s.Written} + missed {s.Missed} + lost {s.SinkLost}");
        return 0;
    }
}
