//! What the real programs share (`real-service`, an axum service under a load generator, and
//! `real-ecs`, a bevy_ecs frame loop; BENCHMARKS.md "What a real program pays"): the `tracing`
//! subscriber of each mode, the process's CPU time, and the driver that runs the modes
//! alternately, each in a process of its own (a global subscriber is set once per process),
//! over several rounds, and sums them up.
//!
//! A measuring process (the driver's child) prints one JSON line, a [`Sample`]; the driver
//! collects them and prints the best and the median of each mode, and each mode's overhead over
//! no subscriber as the median over rounds of the difference within a round (the modes of one
//! round ran one after the other, so a slow stretch of the shared machine weighs on all alike).

mod plot;
mod summary;

pub use plot::overhead_svg;
pub use summary::{summarise, table, ModeSummary};

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use tracing_subscriber::prelude::*;
use typhon_recorder::{Recorder, RecorderBuilder};

/// The subscribers a real program is measured under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No subscriber: `tracing`'s callsites are disabled, the program's own cost.
    None,
    /// A `tracing_subscriber::Registry` and no layer: what any layer costs at least.
    Registry,
    /// The Registry with `TyphonLayer`, recording to a trace.dat file (uncompressed).
    Typhon,
    /// As [`Mode::Typhon`], the file compressed with zstd at the default level.
    TyphonZstd,
    /// The Registry with tracing-chrome, writing its JSON file.
    Chrome,
    /// The Registry with tracing-tracy; Tracy's client started with no viewer, so it queues
    /// every zone in this process's memory (as a game does before a viewer attaches).
    Tracy,
}

impl Mode {
    /// Every mode, in the order of the tables.
    pub const ALL: [Mode; 6] = [
        Mode::None,
        Mode::Registry,
        Mode::Typhon,
        Mode::TyphonZstd,
        Mode::Chrome,
        Mode::Tracy,
    ];

    /// The mode's name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Registry => "registry",
            Mode::Typhon => "typhon",
            Mode::TyphonZstd => "typhon-zstd",
            Mode::Chrome => "chrome",
            Mode::Tracy => "tracy",
        }
    }

    /// The mode's label in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Mode::None => "no subscriber",
            Mode::Registry => "Registry alone",
            Mode::Typhon => "Registry + TyphonLayer (file)",
            Mode::TyphonZstd => "Registry + TyphonLayer (file, zstd)",
            Mode::Chrome => "Registry + tracing-chrome",
            Mode::Tracy => "Registry + tracing-tracy",
        }
    }

    /// The mode named `s`, or an error that lists the names.
    pub fn parse(s: &str) -> Result<Mode, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Mode::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mode {s:?} (one of {})", names.join(", "))
            })
    }

    /// A comma-separated list of modes, `all` for every one.
    pub fn parse_list(s: &str) -> Result<Vec<Mode>, String> {
        if s == "all" {
            return Ok(Mode::ALL.to_vec());
        }
        s.split(',').map(Mode::parse).collect()
    }
}

/// A mode's subscriber, installed as the global default: what [`Installed::finish`] must
/// flush or read when the measured work is done.
pub enum Installed {
    /// Nothing to finish.
    Nothing,
    /// Our recorder and the path of its file.
    Typhon(Recorder, PathBuf),
    /// tracing-chrome's guard (dropping it writes the file out and joins its writer thread).
    Chrome(tracing_chrome::FlushGuard, PathBuf),
    /// Tracy's client.
    Tracy(tracy_client::Client),
}

/// What a mode left behind once finished.
#[derive(Clone, Copy, Debug, Default)]
pub struct Finished {
    /// Bytes of the output file (0 where the mode writes none).
    pub file_bytes: u64,
    /// Records the recorder was given (ours only).
    pub records: u64,
    /// Records lost because a ring was full (ours only).
    pub missed: u64,
}

/// Installs `mode`'s subscriber as the global default, its output (if any) at `out` (a file
/// name without extension; `.dat` or `.json` is added). Call once per process.
pub fn install(mode: Mode, out: &Path) -> Result<Installed, String> {
    let set = |d: tracing::Dispatch| {
        tracing::dispatcher::set_global_default(d).map_err(|e| format!("set the subscriber: {e}"))
    };
    Ok(match mode {
        Mode::None => Installed::Nothing,
        Mode::Registry => {
            set(tracing_subscriber::registry().into())?;
            Installed::Nothing
        }
        Mode::Typhon | Mode::TyphonZstd => {
            let path = out.with_extension("dat");
            let mut b = RecorderBuilder::new().output(&path);
            if mode == Mode::TyphonZstd {
                b = b.compression(typhon_recorder::tracedat::Compression::parse("zstd")?);
            }
            let rec = b.start().map_err(|e| format!("{}: {e}", path.display()))?;
            set(tracing_subscriber::registry()
                .with(typhon_tracing::TyphonLayer::new())
                .into())?;
            Installed::Typhon(rec, path)
        }
        Mode::Chrome => {
            let path = out.with_extension("json");
            let (layer, guard) = tracing_chrome::ChromeLayerBuilder::new()
                .file(&path)
                .build();
            set(tracing_subscriber::registry().with(layer).into())?;
            Installed::Chrome(guard, path)
        }
        Mode::Tracy => {
            let client = crate::peers::tracy_client();
            set(tracing_subscriber::registry()
                .with(tracing_tracy::TracyLayer::default())
                .into())?;
            Installed::Tracy(client)
        }
    })
}

impl Installed {
    /// Lets the mode's background threads catch up with what was written so far (our flusher
    /// drains the rings, tracing-chrome's writer is asked to flush), then waits until the
    /// process is idle (its CPU time grows by under 0.1 ms in 20 ms, within 2 s): called once the
    /// program's own work is done, so that a measured window holds the work it caused and
    /// nothing of the window before.
    pub fn settle(&self) {
        match self {
            Installed::Typhon(rec, _) => rec.drain(),
            Installed::Chrome(guard, _) => guard.flush(),
            Installed::Nothing | Installed::Tracy(_) => {}
        }
        let start = std::time::Instant::now();
        let mut last = process_cpu_ns();
        while start.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
            let now = process_cpu_ns();
            if now - last < 100_000 {
                return;
            }
            last = now;
        }
    }

    /// Finishes the mode's output (our recording is finished and its file assembled;
    /// tracing-chrome's file written out) and removes the file once measured: the figures are
    /// what is kept, not the recordings; with `TYPHON_BENCH_KEEP=1` in the environment the file
    /// stays, its path said on stderr (to look into it with `typhon-rec stats`).
    pub fn finish(self) -> Result<Finished, String> {
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        match self {
            Installed::Nothing | Installed::Tracy(_) => Ok(Finished::default()),
            Installed::Typhon(rec, path) => {
                let s = rec
                    .finish()
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let f = Finished {
                    file_bytes: size(&path),
                    records: s.user_written(),
                    missed: s.total_missed(),
                };
                if remove(&path) {
                    remove_recording(&path);
                }
                Ok(f)
            }
            Installed::Chrome(guard, path) => {
                drop(guard);
                let f = Finished {
                    file_bytes: size(&path),
                    ..Finished::default()
                };
                if remove(&path) {
                    let _ = std::fs::remove_file(&path);
                }
                Ok(f)
            }
        }
    }
}

/// Whether the output at `path` is to be removed: not when `TYPHON_BENCH_KEEP=1` keeps it.
fn remove(path: &Path) -> bool {
    if std::env::var_os("TYPHON_BENCH_KEEP").is_some_and(|v| v == "1") {
        eprintln!("kept {}", path.display());
        return false;
    }
    true
}

/// Removes a recording and the parts directory it may have left.
fn remove_recording(path: &Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir_all(typhon_recorder::sink::parts_dir(path));
}

/// This process's CPU time, user + system, all its threads (the recorder's flusher and
/// compressor, the subscribers' writer threads and the runtime's workers included), in ns.
pub fn process_cpu_ns() -> u64 {
    // SAFETY: all-zero bytes are a valid `rusage` (integers and timevals).
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable `rusage` for the call to fill.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The CPU time of the recorder's own threads (flusher and compressor; schedstat), ns: read it
/// before [`Installed::finish`], which ends them.
pub fn recorder_threads_cpu_ns() -> u64 {
    ["typhon-flusher", "typhon-compress"]
        .iter()
        .filter_map(|n| crate::own_threads::thread_cpu_ns(n))
        .sum()
}

/// The calling thread's CPU time in ns (`CLOCK_THREAD_CPUTIME_ID`), 0 where it cannot be read.
pub fn thread_cpu_ns() -> u64 {
    // SAFETY: all-zero bytes are a valid `timespec`.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `t` is a valid, writable `timespec` for the call to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// This process's resident memory in bytes (`/proc/self/statm`), 0 where it cannot be read.
pub fn rss_bytes() -> u64 {
    crate::peers::rss_bytes()
}

/// The machine's load averages, as `uptime` prints them ("1.20 1.05 0.80").
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// One mode's measurement in one round, as the measuring process prints it.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// The mode's name.
    pub mode: String,
    /// The round it ran in.
    pub round: usize,
    /// Every figure the measuring process reported (`cost_ns`, the figure compared, and the
    /// others: bytes, records and missed per unit, the counts).
    pub figures: Value,
}

impl Sample {
    /// A figure of the sample, 0 where it is missing.
    pub fn get(&self, key: &str) -> f64 {
        self.figures[key].as_f64().unwrap_or(0.0)
    }
}

/// Runs `rounds` rounds of every mode, each in a process of its own started by `child(mode)`,
/// the first mode of each round one further along the list than the last round's. A child
/// prints its figures as a JSON object on its last line of stdout; `deadline` bounds each.
/// A child that fails, or prints no figures, fails the run with its stderr; except that a
/// child killed by Tracy's start-up assertion on `/proc/kallsyms` (which fails now and then
/// when the kernel's symbol list changes while Tracy reads it) is started again, up to
/// [`TRACY_START_RETRIES`] times, each retry said on stderr.
pub fn alternate(
    modes: &[Mode],
    rounds: usize,
    deadline: Duration,
    mut child: impl FnMut(Mode) -> Command,
    mut each: impl FnMut(&Sample),
) -> Result<Vec<Sample>, String> {
    let mut out = Vec::new();
    for round in 0..rounds {
        for k in 0..modes.len() {
            let mode = modes[(round + k) % modes.len()];
            let mut tries = 0;
            let figures = loop {
                match run_child(child(mode), deadline) {
                    Err(e) if e.contains("InitKernelSymbols") && tries < TRACY_START_RETRIES => {
                        tries += 1;
                        eprintln!("  (Tracy's start-up read of /proc/kallsyms failed its assertion: mode {} started again)", mode.name());
                    }
                    r => {
                        break r
                            .map_err(|e| format!("mode {} (round {round}): {e}", mode.name()))?
                    }
                }
            };
            let s = Sample {
                mode: mode.name().to_owned(),
                round,
                figures,
            };
            each(&s);
            out.push(s);
        }
    }
    Ok(out)
}

/// How many times a child killed by Tracy's start-up assertion is started again.
pub const TRACY_START_RETRIES: usize = 3;

/// Runs one measuring process to its end (killed after `deadline`), returning the JSON object
/// of its last stdout line.
fn run_child(mut cmd: Command, deadline: Duration) -> Result<Value, String> {
    let mut c = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("start {cmd:?}: {e}"))?;
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = c.try_wait().map_err(|e| e.to_string())? {
            break st;
        }
        if start.elapsed() > deadline {
            let _ = c.kill();
            let _ = c.wait();
            return Err(format!("still running after {deadline:?}: killed"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(o) = c.stdout.take() {
        for l in BufReader::new(o).lines().map_while(Result::ok) {
            stdout = l;
        }
    }
    if let Some(mut e) = c.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    if !status.success() {
        return Err(format!("{status}: {}", stderr.trim()));
    }
    serde_json::from_str::<Value>(&stdout)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| format!("no figures on its last line ({stdout:?}); stderr: {stderr}"))
}

/// Writes the samples and their summary as JSON to `path`.
pub fn write_json(
    path: &Path,
    program: &str,
    samples: &[Sample],
    summary: &[ModeSummary],
) -> Result<(), String> {
    let v = json!({
        "program": program,
        "samples": samples.iter().map(|s| json!({"mode": s.mode, "round": s.round, "figures": s.figures})).collect::<Vec<_>>(),
        "summary": summary.iter().map(ModeSummary::to_json).collect::<Vec<_>>(),
    });
    let mut f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    writeln!(f, "{v:#}").map_err(|e| format!("{}: {e}", path.display()))
}

/// The argument after `--name` in `args`, parsed, or `default`; a bad value is an error that
/// names the option.
pub fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .ok_or_else(|| format!("{name} needs a value"))?
            .parse()
            .map_err(|_| format!("{name}: bad value {:?}", args[i + 1])),
    }
}

/// A scratch file name for a measuring process's output (no extension), in the temporary
/// directory, unique to the process.
pub fn scratch(program: &str) -> PathBuf {
    std::env::temp_dir().join(format!("typhon-{program}-{}", std::process::id()))
}
