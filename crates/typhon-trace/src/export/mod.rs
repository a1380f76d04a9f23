//! Export a recording to the formats trace viewers open: Perfetto's protobuf trace
//! ([`perfetto`]: ui.perfetto.dev, `trace_processor`) and the Chrome trace-event JSON
//! ([`chrome`]: chrome://tracing, Perfetto, Speedscope).
//!
//! The export streams ([`export`], `engine`): records are read a page at a time
//! ([`TraceFile::stream_records`]) and each event is written soon after it is final, so memory
//! is the open work, a bounded window and the distinct names, not the records:
//!
//! ```text
//!  trace.dat pages ── pread, one page per CPU ──► records merged in page-time order
//!     │ decode through the kind table; a ThreadInfo starts or renames the slot's thread
//!     ▼
//!  per thread   span (arrives at its end: start + duration)  ─┐
//!               TickStart…TickEnd, PhaseStart…PhaseEnd        ─┤ lanes: placed on arrival;
//!                 (held: the open tick, open phases)          ─┘ a lane keeps only its roots
//!               instants, CeLog, loss marks ("events lost")   ── final at once
//!     │ reorder: final events wait until the stream is 50 ms past them (at most 16 384),
//!     ▼          then leave in time order (a slice as its start, then its end)
//!  flows: each correlated event joins its command's flow as it passes (flows in flight kept
//!     │   250 ms, at most 32 768); a follows_from link joins the span entry that follows
//!     ▼
//!  writer (Perfetto packets / Chrome JSON events), written as they come; a track is
//!  described when first used and again at the end if its thread was renamed
//! ```
//!
//! Order: the output is in time order but for what the window does not cover (a span longer
//! than 50 ms comes after what it holds; counted as `out_of_order`). Readers need no order:
//! trace_processor (and the UI) sort the TrackEvents themselves, stably, so at equal times the
//! file's order counts; for that the lanes never let a slice take as a child a non-empty slice
//! written before it that starts at the same time, and the window keeps arrivals' order at
//! equal times. The Perfetto writer's incremental timestamps follow the order; a late event
//! carries its absolute time. Chrome JSON readers sort events by time too; slices are "X"
//! events. [`Timeline::build`] collects the same engine's events in memory, sorted by time,
//! for tools and tests.
//!
//! Nothing is left out silently: every record becomes a slice end, an instant, (ThreadInfo) a
//! thread's name, (a `tracing` span's description) the arguments of that span's slices (its
//! fields, typed, the latest values: a `Span::record` shows in slices before it too, as far as
//! the window reaches) or (a callsite) a definition, both counted; every page's missed count
//! becomes a loss mark carrying the count; each run of damaged pages of a slot becomes one
//! uncounted loss mark carrying the pages' count.
//!
//! ```
//! use typhon_trace::export::{Timeline, TimelineStats};
//! let t = Timeline::default();
//! assert_eq!(t.stats(), TimelineStats::default());
//! ```
//!
//! The model is in `timeline`; `build` fills it from the records, `lanes` lays out each
//! thread's slices, `reorder` puts final events in time order and `flows` links correlated
//! events; `args` names and describes a record for the writers, [`perfetto`] and [`chrome`].

mod args;
mod build;
pub mod chrome;
mod described;
mod engine;
mod error;
mod fields;
mod flows;
mod fnv;
mod lanes;
pub mod otlp;
pub mod perfetto;
mod reorder;
mod timeline;

pub use args::{event_args, event_name, Arg};
pub use error::ExportError;
pub use timeline::{Event, Phase, Thread, Timeline, TimelineStats, Track, SYNTHETIC_TID};

use crate::tracedat::TraceFile;

/// The output formats.
///
/// ```
/// use typhon_trace::export::Format;
/// assert_eq!(Format::Perfetto.extension(), "pftrace");
/// assert_eq!("chrome".parse::<Format>(), Ok(Format::Chrome));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Perfetto's protobuf `Trace` of `TrackEvent`s.
    Perfetto,
    /// Chrome trace-event JSON (`{"traceEvents": [...]}`).
    Chrome,
    /// OTLP protobuf `ExportTraceServiceRequest` ([`otlp`]).
    Otlp,
    /// OTLP JSON encoding of the same request.
    OtlpJson,
}

impl Format {
    /// The usual file extension.
    ///
    /// ```
    /// assert_eq!(typhon_trace::export::Format::Chrome.extension(), "json");
    /// ```
    pub const fn extension(self) -> &'static str {
        match self {
            Format::Perfetto => "pftrace",
            Format::Chrome => "json",
            Format::Otlp => "otlp.pb",
            Format::OtlpJson => "otlp.json",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "perfetto" => Ok(Format::Perfetto),
            "chrome" | "json" => Ok(Format::Chrome),
            "otlp" => Ok(Format::Otlp),
            "otlp-json" => Ok(Format::OtlpJson),
            _ => Err(format!(
                "unknown export format {s:?}: expected perfetto, chrome, otlp or otlp-json"
            )),
        }
    }
}

impl Timeline<'_> {
    /// Writes the timeline to `out` in `format` (and flushes it).
    ///
    /// # Errors
    /// Those of `out`.
    ///
    /// ```
    /// use typhon_trace::export::{Format, Timeline};
    /// let t = Timeline { process_name: "my-server".into(), ..Timeline::default() };
    /// let mut out = Vec::new();
    /// t.write(Format::Chrome, &mut out).unwrap();
    /// assert!(String::from_utf8(out).unwrap().contains("my-server"));
    /// ```
    pub fn write(&self, format: Format, out: &mut impl std::io::Write) -> std::io::Result<()> {
        match format {
            Format::Perfetto => perfetto::write(self, out)?,
            Format::Chrome => chrome::write(self, out)?,
            // OTLP needs the records' span ids and the file's clock anchor: `otlp::write`.
            Format::Otlp | Format::OtlpJson => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "OTLP is exported from the file (export::otlp::write), not a Timeline",
                ))
            }
        }
        out.flush()
    }
}

/// Writes `file` to `out` in `format`, streaming, and returns what went into it; the process
/// is named "typhon-recorder" (see [`export_named`]).
///
/// # Errors
/// [`ExportError::Read`] if the record data cannot be read, and [`ExportError::Io`].
///
/// ```no_run
/// use typhon_trace::export::{export, Format};
/// use typhon_trace::tracedat::TraceFile;
/// let f = TraceFile::open_streaming("run.dat")?;
/// let mut out = std::io::BufWriter::new(std::fs::File::create("run.pftrace")?);
/// export(&f, Format::Perfetto, &mut out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn export(
    file: &TraceFile,
    format: Format,
    out: &mut impl std::io::Write,
) -> Result<TimelineStats, ExportError> {
    export_named(file, format, "typhon-recorder", out)
}

/// Writes `file` to `out` in `format` with the process named `process_name`, streaming: each
/// event is written soon after it is final, so memory is the open work (per thread its lanes
/// and open ticks and phases, per command in flight its flow), a bounded window of events and
/// the distinct names, not the records. Events are in time order but for spans longer than
/// the window (see the module docs). The Perfetto file carries the file's wall-clock anchor
/// in its clock snapshot.
///
/// # Errors
/// [`ExportError::Read`] if the record data cannot be read, and [`ExportError::Io`].
///
/// ```
/// use typhon_trace::export::{export_named, Format};
/// use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
/// let mut dat = std::io::Cursor::new(Vec::new());
/// write_tracedat(&mut dat, &FileMeta::new(4096), &mut []).unwrap();
/// let f = TraceFile::parse(dat.into_inner()).unwrap();
/// let mut out = Vec::new();
/// export_named(&f, Format::Chrome, "my-server", &mut out).unwrap();
/// assert!(String::from_utf8(out).unwrap().contains("my-server"));
/// ```
pub fn export_named(
    file: &TraceFile,
    format: Format,
    process_name: &str,
    out: &mut impl std::io::Write,
) -> Result<TimelineStats, ExportError> {
    let pid = engine::find_pid(file);
    let s = match format {
        Format::Perfetto => {
            let mut w = perfetto::Writer::new(out, pid, process_name, anchor(file))?;
            let s = engine::run(file, &mut w)?;
            w.finish()?;
            s
        }
        Format::Chrome => {
            let mut w = chrome::Writer::new(out, pid, process_name)?;
            let s = engine::run(file, &mut w)?;
            w.finish()?;
            s
        }
        Format::Otlp | Format::OtlpJson => {
            let o = otlp::OtlpOptions::new(process_name);
            let s = otlp::write(file, &o, format == Format::OtlpJson, out)?;
            return Ok(TimelineStats {
                records: s.records,
                slices: s.spans_written,
                instants: s.events,
                lost_events: s.lost_events,
                negative_times: s.negative_times,
                damaged_pages: s.damaged_pages,
                ..TimelineStats::default()
            });
        }
    };
    out.flush()?;
    Ok(s)
}

/// The file's clock anchor, if it has one (both anchors set).
fn anchor(file: &TraceFile) -> Option<perfetto::Anchor> {
    let m = file.typhon_meta()?.ok()?;
    (m.mono_anchor_ns > 0 && m.wall_anchor_ns > 0).then_some(perfetto::Anchor {
        mono_ns: m.mono_anchor_ns as u64,
        wall_ns: m.wall_anchor_ns,
    })
}
