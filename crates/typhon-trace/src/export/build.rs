//! [`Timeline::build`]: the streaming engine's output collected in memory (for tests and
//! tools that look at the events), and [`Timeline::replay`], which feeds a collected timeline
//! to a writer.

use super::engine::{self, Item, Kind, Sink};
use super::error::ExportError;
use super::timeline::{Event, Phase, Thread, Timeline, Track};
use crate::tracedat::{TraceDatError, TraceFile};
use std::io;

/// Collects the engine's output into a [`Timeline`] borrowing the file's bytes.
struct Collect<'a, 't> {
    file: &'a TraceFile,
    t: &'t mut Timeline<'a>,
    /// A record not found in the file's memory (a streaming file).
    missing: bool,
}

impl Sink for Collect<'_, '_> {
    fn track(
        &mut self,
        index: u32,
        track: Track,
        thread: &Thread,
        _thread_track: u32,
        _name: &str,
    ) -> io::Result<()> {
        let t = &mut *self.t;
        if track.thread >= t.threads.len() {
            t.threads.resize(
                track.thread + 1,
                Thread {
                    slot: 0,
                    tid: 0,
                    name: String::new(),
                },
            );
        }
        t.threads[track.thread] = thread.clone();
        let i = index as usize;
        if t.tracks.len() <= i {
            t.tracks.resize(i + 1, track);
        }
        t.tracks[i] = track;
        Ok(())
    }

    fn item(&mut self, it: &Item<'_>) -> io::Result<()> {
        // The file's own bytes where they are the record as read; a record the reader resolved
        // (SPEC §15: names and callsites by id) is kept as resolved.
        let (rec, resolved) = match it.rec {
            Some((d, at)) => match self.file.bytes_at(at, d.len()) {
                Some(r) if r == d => (Some(r), 0),
                Some(_) => {
                    self.t.resolved.push(d.into());
                    (None, self.t.resolved.len() as u32)
                }
                None => {
                    self.missing = true;
                    return Ok(());
                }
            },
            None => (None, 0),
        };
        let ev = |ts, phase, rec| Event {
            ts,
            track: it.track,
            phase,
            rec,
            resolved: 0,
            flow: it.flow,
            fields: 0,
        };
        match it.kind {
            Kind::Slice => {
                let mut begin = ev(it.ts, Phase::Begin, rec);
                begin.resolved = resolved;
                if let Some(f) = it.fields {
                    self.t.span_fields.push(f.to_string());
                    begin.fields = self.t.span_fields.len() as u32;
                }
                self.t.events.push(begin);
                self.t.events.push(Event {
                    flow: 0,
                    ..ev(it.end, Phase::End, None)
                });
            }
            Kind::Instant => self.t.events.push(Event {
                resolved,
                ..ev(it.ts, Phase::Instant, rec)
            }),
            Kind::Counter => self.t.events.push(Event {
                resolved,
                ..ev(it.ts, Phase::Counter, rec)
            }),
            Kind::Lost(n) => self.t.events.push(ev(it.ts, Phase::Lost(n), None)),
            Kind::Damaged(n) => self.t.events.push(ev(it.ts, Phase::Damaged(n), None)),
            // Pushed with its slice's Begin.
            Kind::End => {}
        }
        Ok(())
    }
}

impl<'a> Timeline<'a> {
    /// Reads every record of `file` (one held in memory: [`TraceFile::parse`] or
    /// [`TraceFile::open`]) into a timeline, with the streaming engine [`super::export`] uses,
    /// and sorts its events by time (stable: at equal times, in the order they were final,
    /// which keeps every track nested).
    ///
    /// A damaged page (see [`TraceDatError::DamagedPage`]) is skipped and counted in
    /// `damaged_pages`; its thread gets a [`Phase::Damaged`] mark before its next record, one
    /// for each run of damaged pages with their count.
    ///
    /// # Errors
    /// [`ExportError::Read`] if the record data cannot be read, or the file is a streaming one
    /// ([`TraceFile::open_streaming`]: export it with [`super::export`] instead).
    ///
    /// ```no_run
    /// use typhon_trace::{export::Timeline, tracedat::TraceFile};
    /// let f = TraceFile::open("run.dat")?;
    /// let t = Timeline::build(&f)?;
    /// println!("{} slices", t.stats().slices);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(file: &'a TraceFile) -> Result<Self, ExportError> {
        let mut t = Timeline {
            process_name: "typhon-recorder".to_string(),
            pid: engine::find_pid(file),
            ..Timeline::default()
        };
        let mut c = Collect {
            file,
            t: &mut t,
            missing: false,
        };
        let s = engine::run(file, &mut c)?;
        if c.missing {
            return Err(ExportError::Read {
                records: s.records,
                error: TraceDatError::Corrupt {
                    what: "Timeline::build needs a file held in memory".into(),
                    at: 0,
                },
            });
        }
        t.records = s.records;
        t.negative_times = s.negative_times;
        t.damaged_pages = s.damaged_pages;
        t.events.sort_by_key(|e| e.ts);
        Ok(t)
    }

    /// Feeds the timeline to a writer: its tracks, then in time order each slice's start (with
    /// its end) and end, instant and loss mark.
    pub(super) fn replay(&self, sink: &mut impl Sink) -> io::Result<()> {
        for (i, tr) in self.tracks.iter().enumerate() {
            let Some(th) = self.threads.get(tr.thread) else {
                continue;
            };
            let own = self
                .tracks
                .iter()
                .position(|x| x.thread == tr.thread && x.lane == 0)
                .unwrap_or(i);
            sink.track(i as u32, *tr, th, own as u32, &self.track_name(i))?;
        }
        // Each slice's end, found by pairing Begin and End events per track.
        let mut ends = vec![0u64; self.events.len()];
        let mut open: Vec<Vec<usize>> = vec![Vec::new(); self.tracks.len()];
        for (i, e) in self.events.iter().enumerate() {
            let Some(o) = open.get_mut(e.track as usize) else {
                continue;
            };
            match e.phase {
                Phase::Begin => o.push(i),
                Phase::End => {
                    if let Some(b) = o.pop() {
                        ends[b] = e.ts;
                    }
                }
                Phase::Instant | Phase::Counter | Phase::Lost(_) | Phase::Damaged(_) => {}
            }
        }
        for (i, e) in self.events.iter().enumerate() {
            let kind = match e.phase {
                Phase::End => Kind::End,
                Phase::Begin => Kind::Slice,
                Phase::Instant => Kind::Instant,
                Phase::Counter => Kind::Counter,
                Phase::Lost(n) => Kind::Lost(n),
                Phase::Damaged(n) => Kind::Damaged(n),
            };
            sink.item(&Item {
                ts: e.ts,
                end: if kind == Kind::Slice { ends[i] } else { e.ts },
                track: e.track,
                kind,
                rec: self.record(e).map(|r| (r, 0)),
                flow: e.flow,
                fields: (e.fields as usize)
                    .checked_sub(1)
                    .and_then(|i| self.span_fields.get(i))
                    .map(String::as_str),
            })?;
        }
        Ok(())
    }
}
