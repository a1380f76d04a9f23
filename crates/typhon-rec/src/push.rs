//! OTLP: `export --format otlp|otlp-json` writes a recording as one OTLP request, and `push`
//! POSTs it to a Collector or a hosted backend (OTLP/HTTP `URL/v1/traces` over http or https,
//! `application/x-protobuf`, optionally gzip) in bounded batches. Retries 429, 502, 503 and 504
//! (honouring `Retry-After`, in seconds or as an HTTP date) and transient transport errors,
//! within a bounded time per batch; never another status, and never follows a redirect.
//! Where it sends and with what headers: [`crate::push_config`].

use crate::inspect::{reading_end, same_file, Res};
pub use crate::push_config::PushArgs;
use crate::push_config::{mask, shown, Target};
use indicatif::{ProgressBar, ProgressStyle};
use prost::Message;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use typhon_recorder::printable::printable;
use typhon_trace::export::otlp::{self, OtlpOptions, OtlpStats};
use typhon_trace::export::ExportError;
use typhon_trace::tracedat::TraceFile;

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
pub fn export(
    file: &Path,
    json: bool,
    out: PathBuf,
    service: Option<&str>,
    sel: &crate::select::Selection,
) -> Res {
    if out == file || same_file(&out, file) {
        return Err(format!(
            "{}: the export would overwrite the recording",
            out.display()
        ));
    }
    let mut f = open(file)?;
    crate::select::narrow(&mut f, sel, file)?;
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
    // As every reader does: what could be read is written, and the status says it is not all.
    reading_end(file, &f, s.damaged_pages, "the export", None)
}

fn summary(s: &OtlpStats) -> String {
    format!(
        "{} records -> {} spans ({} recorded, {} tracing, {} command roots, {} dropped) with {} events in {} batches",
        s.records,
        s.spans_written,
        s.spans,
        s.tracing_spans,
        s.commands,
        s.commands_dropped,
        s.events,
        s.batches
    )
}

/// Every count of something that is not in the OTLP spans as it was recorded.
fn notes(s: &OtlpStats) {
    let lines = [
        (s.left_out, "records are not spans in OTLP (ticks, phases, instants, CeLog, tracing events outside any span): export --format perfetto shows them"),
        (s.tracing_late, "tracing records came after their span was written (idle 30 s, or too many open): entries as spans of their own, events and links left out"),
        (s.tracing_unentered, "tracing spans were never entered: no span"),
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
    let t = crate::push_config::resolve(a, &|k| std::env::var(k).ok())?;
    let f = open(&a.file)?;
    let mut o = options(&a.file, t.service.as_deref());
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
    let (agent, note) = t.agent();
    if let Some(n) = note {
        eprintln!("typhon-rec: {}: {n}", printable(&t.shown));
    }
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
            if t.gzip {
                let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                z.write_all(&body)?;
                body = z.finish()?;
            }
            let start = Instant::now();
            let mut backoff = Duration::from_millis(250);
            loop {
                let left = budget.saturating_sub(start.elapsed());
                let Some((why, after)) = attempt(&agent, &t, &body, left)? else {
                    sent += spans as u64;
                    bar.set_position(records);
                    bar.set_message(format!("{sent} spans sent"));
                    return Ok(());
                };
                let next = if after.is_some() {
                    "its Retry-After"
                } else {
                    "the next retry"
                };
                let wait = after.unwrap_or(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(30));
                if start.elapsed() + wait > budget {
                    return Err(fail(
                        &t.shown,
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
                        printable(&t.shown),
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
        printable(&t.shown)
    );
    notes(&s);
    // As every reader does: what could be read is pushed, and the status says it is not all.
    reading_end(&a.file, &f, s.damaged_pages, "the push", None)
}

/// One POST of `body`, given at most `left` (what remains of --retry-for): sent (`None`),
/// worth a retry (why, and the wait the server asked for), or an error that ends the push.
fn attempt(
    agent: &ureq::Agent,
    t: &Target,
    body: &[u8],
    left: Duration,
) -> std::io::Result<Option<(String, Option<Duration>)>> {
    // The attempt may take what is left of --retry-for (at most 30 s), so a Collector that
    // accepts and never answers cannot hold the push past it.
    let limit = left.clamp(Duration::from_millis(1), Duration::from_secs(30));
    let mut r = agent
        .post(t.url.as_str())
        .config()
        .timeout_global(Some(limit))
        .build()
        .header("Content-Type", "application/x-protobuf");
    if t.gzip {
        r = r.header("Content-Encoding", "gzip");
    }
    for (k, v) in &t.headers {
        r = r.header(k, v);
    }
    let resp = match r.send(body) {
        Ok(resp) => resp,
        Err(ureq::Error::Timeout(_)) => {
            let why = format!("no answer within {:.1} s", limit.as_secs_f64());
            return Ok(Some((why, None)));
        }
        Err(e) if permanent(&e) => {
            let e = e.to_string();
            let hint = if e.contains("certificate") {
                ": the server's certificate is not from a CA the system trusts; give a private \
                 CA's with --ca-cert FILE (or OTEL_EXPORTER_OTLP_CERTIFICATE)"
            } else {
                ""
            };
            return Err(fail(&t.shown, format!("{e} (not retried){hint}")));
        }
        Err(e) => return Ok(Some((e.to_string(), None))),
    };
    let status = resp.status().as_u16();
    let header = |k: &str| {
        resp.headers()
            .get(k)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_string())
    };
    let after = header("retry-after").and_then(|v| retry_after(&v));
    let location = header("location");
    let text = resp
        .into_body()
        .with_config()
        .limit(64 * 1024)
        .read_to_vec()
        .unwrap_or_default();
    let what = match status {
        200..=299 => {
            rejected(&t.shown, &text)?;
            return Ok(None);
        }
        429 | 502 | 503 | 504 => return Ok(Some((format!("HTTP {status}"), after))),
        // A followed redirect would lose the body: 301-303 turn a POST into a GET, and
        // 307/308 would need it sent twice to a URL nobody gave. So none is followed.
        300..=399 => match location {
            Some(l) => {
                let to = t
                    .url
                    .join(&l)
                    .map_or_else(|_| mask(&l), |u| shown(&u, false));
                format!(
                    "HTTP {status} redirects to {to} (not followed, so nothing of this batch was \
                     delivered: push to that URL with --endpoint)"
                )
            }
            None => format!("HTTP {status}, a redirect without a Location (not followed)"),
        },
        401 | 403 => format!(
            "HTTP {status}: authentication failed (not retried): check the API key or \
             credentials (--header, OTEL_EXPORTER_OTLP_HEADERS, or the URL's user:password): {}",
            reason(&text)
        ),
        // 413: the Collector's request limit; smaller batches fit.
        413 => format!(
            "HTTP 413 (not retried) (try a smaller --batch): {}",
            reason(&text)
        ),
        _ => format!("HTTP {status} (not retried): {}", reason(&text)),
    };
    Err(fail(&t.shown, what))
}

/// Errors no retry can mend: a certificate the roots do not vouch for, a TLS or HTTP protocol
/// failure, a request that cannot be made.
fn permanent(e: &ureq::Error) -> bool {
    use ureq::Error as E;
    match e {
        E::Tls(_) | E::Pem(_) | E::Rustls(_) | E::BadUri(_) | E::Http(_) | E::Protocol(_) => true,
        // rustls reports a handshake's failure (an unknown issuer, a wrong name) as bad data.
        E::Io(e) => e.kind() == std::io::ErrorKind::InvalidData,
        _ => false,
    }
}

/// `Retry-After`: a number of seconds, or an HTTP date (a date past is no wait).
fn retry_after(v: &str) -> Option<Duration> {
    if let Ok(s) = v.parse::<u64>() {
        return Some(Duration::from_secs(s));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
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
