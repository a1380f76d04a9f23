//! OTLP: `export --format otlp|otlp-json` writes a recording as one OTLP request, and `push`
//! POSTs it to a Collector (OTLP/HTTP `URL/v1/traces`, `application/x-protobuf`, optionally
//! gzip) in bounded batches. Retries 429, 502, 503 and 504 (honouring `Retry-After`) and
//! transport errors, within a bounded time per batch; never another status.

use crate::inspect::{same_file, Res};
use indicatif::{ProgressBar, ProgressStyle};
use prost::Message;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use typhon_recorder::printable::printable;
use typhon_trace::export::otlp::{self, OtlpOptions, OtlpStats};
use typhon_trace::export::ExportError;
use typhon_trace::tracedat::TraceFile;

/// `typhon-rec push`'s arguments.
#[derive(clap::Args, Debug)]
pub struct PushArgs {
    /// The trace.dat file.
    pub file: PathBuf,
    /// The Collector's OTLP/HTTP base URL (`http://HOST:4318`); spans go to URL/v1/traces.
    #[arg(long)]
    pub endpoint: String,
    /// `service.name` of the spans (default: the file's name).
    #[arg(long)]
    pub service: Option<String>,
    /// Compress each request body with gzip (`Content-Encoding: gzip`).
    #[arg(long)]
    pub gzip: bool,
    /// Spans per request.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub batch: u64,
    /// Longest time one request may spend being retried (with its unit: ms, s), waits
    /// included; past it the push fails.
    #[arg(long, default_value = "60s", value_parser = crate::durations::parse_duration)]
    pub retry_for: u64,
}

/// The options a recording at `file` is exported with.
fn options(file: &Path, service: Option<&str>) -> OtlpOptions {
    // The file does not name the program that recorded it; its own name stands in.
    let stem = file.file_stem().map_or_else(
        || "typhon-recorder".into(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut o = OtlpOptions::new(service.unwrap_or(&stem));
    o.recording = std::path::absolute(file)
        .unwrap_or_else(|_| file.to_path_buf())
        .display()
        .to_string();
    o
}

fn open(file: &Path) -> Result<TraceFile, String> {
    TraceFile::open_streaming(file).map_err(|e| format!("{}: {e}", file.display()))
}

/// `typhon-rec export FILE --format otlp|otlp-json`.
pub fn export(file: &Path, json: bool, out: PathBuf, service: Option<&str>) -> Res {
    if out == file || same_file(&out, file) {
        return Err(format!(
            "{}: the export would overwrite the recording",
            out.display()
        ));
    }
    let f = open(file)?;
    let o = std::fs::File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = BufWriter::new(o);
    let s = match otlp::write(&f, &options(file, service), json, &mut w) {
        Ok(s) => s,
        Err(e) => {
            drop(w);
            // A partial export is no use; but a device or pipe given as the output stays.
            if std::fs::symlink_metadata(&out).is_ok_and(|m| m.is_file()) {
                let _ = std::fs::remove_file(&out);
            }
            return Err(match e {
                ExportError::Io(e) => format!("{}: {e}", out.display()),
                e => format!("{}: {e}", file.display()),
            });
        }
    };
    drop(w);
    println!("{}: {}", printable(&out.display().to_string()), summary(&s));
    notes(&s);
    Ok(())
}

fn summary(s: &OtlpStats) -> String {
    format!(
        "{} records -> {} spans ({} recorded, {} command roots, {} dropped) with {} events in {} batches",
        s.records, s.spans_written, s.spans, s.commands, s.commands_dropped, s.events, s.batches
    )
}

/// Every count of something that is not in the OTLP spans as it was recorded.
fn notes(s: &OtlpStats) {
    let lines = [
        (s.left_out, "records are not spans in OTLP (ticks, phases, instants, CeLog, tracing events): export --format perfetto shows them"),
        (s.egress_unjoined, "EgressSent instants matched no command of their session and tick"),
        (s.command_repeats, "command roots repeat an earlier one's trace (a resend, or events after the command was over)"),
        (s.orphans, "spans have no parent in the recording (lost or still open): each sits in a trace named after its parent"),
        (s.split, "spans were written before their parent arrived (too many waiting): their subtrees are split"),
        (s.lost_events, "events were lost while recording (missed counts)"),
        (s.damaged_pages, "damaged pages were skipped"),
        (s.negative_times, "records had a time before zero and stand at their page time"),
    ];
    for (n, what) in lines {
        if n > 0 {
            println!("  {n} {what}");
        }
    }
    if s.no_wall_anchor {
        println!(
            "  the file has no wall-clock anchor: times are its monotonic clock's, not UNIX times"
        );
    }
}

/// Why one request failed for good.
fn fail(url: &str, what: String) -> std::io::Error {
    std::io::Error::other(format!("{url}: {what}"))
}

/// `typhon-rec push FILE --endpoint URL`.
pub fn push(a: &PushArgs) -> Res {
    let base = a.endpoint.trim_end_matches('/');
    if !base.starts_with("http://") {
        return Err(format!(
            "{}: the endpoint must be an http:// URL (OTLP/HTTP, port 4318 by default; this \
             build has no TLS: push to a Collector on the host or the local network)",
            printable(&a.endpoint)
        ));
    }
    let url = format!("{base}/v1/traces");
    let f = open(&a.file)?;
    let mut o = options(&a.file, a.service.as_deref());
    o.batch = a.batch as usize;
    let total: u64 = f
        .typhon_meta()
        .and_then(Result::ok)
        .map_or(0, |m| m.slots.iter().map(|s| s.written).sum());
    let bar = ProgressBar::new(total.max(1));
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} records, {msg} ({eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let budget = Duration::from_nanos(a.retry_for);
    let (mut sent, mut retries) = (0u64, 0u64);
    let mut send =
        |req: otlp::opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest,
         records: u64|
         -> std::io::Result<()> {
            let spans: usize = req
                .resource_spans
                .iter()
                .flat_map(|r| &r.scope_spans)
                .map(|s| s.spans.len())
                .sum();
            let mut body = req.encode_to_vec();
            if a.gzip {
                let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                z.write_all(&body)?;
                body = z.finish()?;
            }
            let start = Instant::now();
            let mut backoff = Duration::from_millis(250);
            loop {
                // Each attempt may take what is left of --retry-for (at least 1 s, at most 30 s),
                // so a Collector that accepts and never answers cannot hold the push past it.
                let attempt = budget
                    .saturating_sub(start.elapsed())
                    .clamp(Duration::from_secs(1), Duration::from_secs(30));
                let mut r = agent
                    .post(&url)
                    .config()
                    .timeout_global(Some(attempt))
                    .build()
                    .header("Content-Type", "application/x-protobuf");
                if a.gzip {
                    r = r.header("Content-Encoding", "gzip");
                }
                let (why, wait) = match r.send(&body[..]) {
                    Ok(resp) => {
                        let status = resp.status().as_u16();
                        let after = resp
                            .headers()
                            .get("retry-after")
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| v.trim().parse::<u64>().ok())
                            .map(Duration::from_secs);
                        let text = resp
                            .into_body()
                            .with_config()
                            .limit(64 * 1024)
                            .read_to_vec()
                            .unwrap_or_default();
                        match status {
                            200..=299 => {
                                rejected(&url, &text)?;
                                sent += spans as u64;
                                bar.set_position(records);
                                bar.set_message(format!("{sent} spans sent"));
                                return Ok(());
                            }
                            429 | 502 | 503 | 504 => (format!("HTTP {status}"), after),
                            _ => {
                                // 413: the Collector's request limit; smaller batches fit.
                                let hint = if status == 413 {
                                    " (try a smaller --batch)"
                                } else {
                                    ""
                                };
                                return Err(fail(
                                    &url,
                                    format!("HTTP {status} (not retried){hint}: {}", reason(&text)),
                                ));
                            }
                        }
                    }
                    Err(ureq::Error::Timeout(_)) => (
                        format!("no answer within {:.1} s", attempt.as_secs_f64()),
                        None,
                    ),
                    Err(e) => (e.to_string(), None),
                };
                let next = if wait.is_some() {
                    "its Retry-After"
                } else {
                    "the next retry"
                };
                let wait = wait.unwrap_or(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(30));
                if start.elapsed() + wait > budget {
                    return Err(fail(
                        &url,
                        format!(
                            "{why}; gave up after {:.1} s of retries: {next} ({:.1} s) would \
                             pass --retry-for ({:.1} s)",
                            start.elapsed().as_secs_f64(),
                            wait.as_secs_f64(),
                            budget.as_secs_f64()
                        ),
                    ));
                }
                retries += 1;
                bar.suspend(|| {
                    eprintln!(
                        "typhon-rec: {}: {why}, retrying in {:.1} s",
                        printable(&url),
                        wait.as_secs_f64()
                    )
                });
                std::thread::sleep(wait);
            }
        };
    let r = otlp::export_batches(&f, &o, &mut send);
    bar.finish_and_clear();
    // What reached the Collector before a failure is there: say how much.
    let s = r.map_err(|e| match e {
        ExportError::Io(e) => format!(
            "push to {} ({sent} spans were accepted before)",
            printable(&e.to_string())
        ),
        e => format!(
            "{}: {e} ({sent} spans were pushed before)",
            a.file.display()
        ),
    })?;
    println!(
        "{}: {} to {}, {retries} retries",
        printable(&a.file.display().to_string()),
        summary(&s),
        printable(&url)
    );
    notes(&s);
    Ok(())
}

/// A 2xx whose body reports rejected spans (OTLP partial success) is an error: spans were lost.
fn rejected(url: &str, body: &[u8]) -> std::io::Result<()> {
    use otlp::opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
    let Ok(r) = ExportTraceServiceResponse::decode(body) else {
        return Ok(());
    };
    match r.partial_success {
        Some(p) if p.rejected_spans > 0 => Err(fail(
            url,
            format!(
                "the Collector rejected {} spans: {}",
                p.rejected_spans, p.error_message
            ),
        )),
        _ => Ok(()),
    }
}

/// What an error response says, short and printable (an OTLP `Status` message, or text).
fn reason(body: &[u8]) -> String {
    let t = String::from_utf8_lossy(body);
    let t: String = t.chars().take(200).collect();
    if t.trim().is_empty() {
        "no message".into()
    } else {
        t.trim().to_string()
    }
}
