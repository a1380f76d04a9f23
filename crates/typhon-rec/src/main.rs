//! `typhon-rec`: record a demo workload, and read, summarise, export, split and recover trace.dat
//! files.

mod convert;
mod counters;
mod demo;
mod durations;
mod inspect;
mod live;
mod push;
mod push_config;
mod report;
mod rows;
mod select;
mod session;
mod timebase;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "typhon-rec",
    version,
    about = "typhon-recorder: record and read Typhon trace.dat files"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Record a synthetic game/server workload to a trace.dat and print a summary.
    Demo(demo::DemoArgs),
    /// Print the records in time order with named fields, like `trace-cmd report`, filtered.
    Report {
        /// The trace.dat file.
        file: PathBuf,
        #[command(flatten)]
        args: report::ReportArgs,
    },
    /// Per slot (thread) and per kind: counts, every loss, rates; per tick, phase and span
    /// name: count, total, mean, p50/p90/p99, max, the slowest, and ticks over budget.
    Stats {
        /// The trace.dat file.
        file: PathBuf,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// A tick longer than this overruns (with its unit: ns, us, ms or s).
        #[arg(long, default_value = "16.6ms", value_parser = durations::parse_duration)]
        tick_budget: u64,
        #[command(flatten)]
        sel: select::Selection,
    },
    /// Write the raw sub-buffer pages of one slot, one file per page, for kbuffer tools.
    Pages {
        /// The trace.dat file.
        file: PathBuf,
        /// The slot (= CPU number in the file).
        #[arg(long)]
        slot: u32,
        /// Output directory (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
    /// Convert a recording for trace viewers: Perfetto protobuf (ui.perfetto.dev), Chrome JSON,
    /// or OTLP (protobuf or JSON) for an OpenTelemetry Collector, Jaeger, Tempo.
    Export {
        /// The trace.dat file.
        file: PathBuf,
        /// `perfetto` (protobuf, compact), `chrome` (trace-event JSON, for small recordings),
        /// `otlp` (an OTLP ExportTraceServiceRequest) or `otlp-json` (its JSON encoding).
        #[arg(long, default_value = "perfetto", value_parser = format_parser())]
        format: typhon_trace::export::Format,
        /// Output path (default: FILE with the extension .pftrace, .json, .otlp.pb or .otlp.json).
        #[arg(short = 'o', long)]
        out: Option<PathBuf>,
        /// OTLP's `service.name` (default: the file's name); otlp formats only.
        #[arg(long)]
        service: Option<String>,
        #[command(flatten)]
        sel: select::Selection,
    },
    /// Send a recording to an OpenTelemetry Collector or a hosted backend (OTLP/HTTP protobuf
    /// over http or https, POST URL/v1/traces; the OTEL_EXPORTER_OTLP_* environment is read).
    Push(push::PushArgs),
    /// Rewrite a recording as trace.dat version 6, or version 7 uncompressed or zstd-compressed.
    Convert {
        /// The recording to read.
        input: PathBuf,
        /// The file to write (must not exist, unless --force).
        output: PathBuf,
        /// Replace OUTPUT if it exists.
        #[arg(long)]
        force: bool,
        /// `zstd` (level 1), `zstd:LEVEL` (1..=19) or `none`.
        #[arg(long, default_value = "none", value_parser = typhon_recorder::tracedat::Compression::parse)]
        compress: typhon_recorder::tracedat::Compression,
        /// File version: 6 or 7 (default: 7 when compressed, else 6).
        #[arg(long)]
        version: Option<u32>,
        /// Pages per compressed chunk (default 32; trace-cmd writes 10).
        #[arg(long, default_value_t = 0, hide = true)]
        chunk_pages: usize,
    },
    /// Watch a recording while it runs (or a finished one) in the browser: serves a page on
    /// 127.0.0.1 at a URL with a random token, printed on start.
    Live(live::LiveArgs),
    /// Turn what a killed recording to OUT left behind (OUT.parts/) into a valid trace.dat.
    Recover {
        /// The output path the recording was writing to.
        out: PathBuf,
    },
    /// Ask the recording whose snapshot directory is DIR (a `--window` recording) for a
    /// snapshot of its window, through the socket it keeps there (same user or root only);
    /// prints the new file's path. The recording names the file.
    Snapshot {
        /// The recording's snapshot directory.
        dir: PathBuf,
    },
    /// Measure write latency, throughput and the flusher against the speed targets.
    Bench {
        /// A short run (under 30 s).
        #[arg(long)]
        quick: bool,
        /// Print only one JSON object.
        #[arg(long)]
        json: bool,
        /// Also draw the run's figures as SVGs into DIR (latency.svg, cost.svg).
        #[arg(long, value_name = "DIR")]
        plot: Option<PathBuf>,
        /// Exit with status 2 when a counted target is missed (by default the figures are
        /// reported as measurements of this machine, not as a verdict, and the exit is 0).
        #[arg(long)]
        strict: bool,
    },
}

/// `--format`'s values, listed by `--help` and in the error for any other.
fn format_parser() -> impl clap::builder::TypedValueParser<Value = typhon_trace::export::Format> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["perfetto", "chrome", "otlp", "otlp-json"])
        .try_map(|s| s.parse::<typhon_trace::export::Format>())
}

fn main() -> ExitCode {
    // Rust starts a program with SIGPIPE ignored, so a reader that stops early
    // (`typhon-rec stats f | head`) made the next `println!` panic. With the default action the
    // process ends as other Unix tools do there.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to SIG_DFL installs no handler; it runs first in
    // `main`, before any thread is started that could be writing at the same time.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    if let Err(e) = killed_recording_hint(&cli.cmd) {
        eprintln!("typhon-rec: {}", typhon_recorder::printable::printable(&e));
        return ExitCode::from(1);
    }
    let r = match cli.cmd {
        Cmd::Demo(a) => demo::run(a),
        Cmd::Report { file, args } => report::report(&file, &args),
        Cmd::Stats {
            file,
            json,
            tick_budget,
            sel,
        } => inspect::stats(&file, json, tick_budget, &sel),
        Cmd::Pages { file, slot, out } => inspect::pages(&file, slot, &out),
        Cmd::Export {
            file,
            format,
            out,
            service,
            sel,
        } => {
            use typhon_trace::export::Format;
            match format {
                Format::Otlp | Format::OtlpJson => push::export(
                    &file,
                    format == Format::OtlpJson,
                    out.unwrap_or_else(|| file.with_extension(format.extension())),
                    service.as_deref(),
                    &sel,
                ),
                _ if service.is_some() => {
                    Err("--service applies to --format otlp and otlp-json".into())
                }
                _ => inspect::export(&file, format, out, &sel),
            }
        }
        Cmd::Push(a) => push::push(&a),
        Cmd::Live(a) => live::run(a),
        Cmd::Recover { out } => inspect::recover(&recover_target(out)),
        Cmd::Snapshot { dir } => typhon_recorder::window::request_remote(&dir).map(|p| {
            println!("{}", p.display());
        }),
        Cmd::Bench {
            quick,
            json,
            plot,
            strict,
        } => match inspect::bench(quick, json, plot.as_deref()) {
            Ok(missed) if strict && !missed.is_empty() => {
                eprintln!("typhon-rec: --strict: missed {}", missed.join(", "));
                return ExitCode::from(2);
            }
            r => r.map(|_| ()),
        },
        Cmd::Convert {
            input,
            output,
            compress,
            version,
            chunk_pages,
            force,
        } => convert::convert(&input, &output, compress, version, chunk_pages, force),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Messages quote files and their contents: nothing in them may drive the terminal.
            eprintln!("typhon-rec: {}", typhon_recorder::printable::printable(&e));
            ExitCode::from(1)
        }
    }
}

/// A reader given `X.dat` that does not exist while `X.dat.parts/` does: the recording was
/// killed (or still runs). "No such file" alone would hide that it can be rebuilt.
fn killed_recording_hint(cmd: &Cmd) -> Result<(), String> {
    let file = match cmd {
        Cmd::Report { file, .. }
        | Cmd::Stats { file, .. }
        | Cmd::Pages { file, .. }
        | Cmd::Export { file, .. } => file,
        Cmd::Convert { input, .. } => input,
        _ => return Ok(()),
    };
    let parts = typhon_recorder::sink::parts_dir(file);
    if file.symlink_metadata().is_err() && parts.is_dir() {
        return Err(format!(
            "{} does not exist, but {} does: the recording was killed before it finished (or \
             is still running). `typhon-rec recover {}` rebuilds the file from its parts \
             (it refuses while a live recording holds them)",
            file.display(),
            parts.display(),
            file.display()
        ));
    }
    Ok(())
}

/// `recover X.dat.parts` means `recover X.dat`: the parts directory names its recording.
fn recover_target(out: PathBuf) -> PathBuf {
    match out
        .to_str()
        .and_then(|s| s.trim_end_matches('/').strip_suffix(".parts"))
    {
        Some(rec) if out.is_dir() && !rec.is_empty() => PathBuf::from(rec),
        _ => out,
    }
}
