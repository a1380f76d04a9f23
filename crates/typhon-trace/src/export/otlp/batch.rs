//! Spans into requests: each batch of at most `max` spans becomes one
//! `ExportTraceServiceRequest` carrying the recording's resource and scope, handed to the
//! output (a file writer, or `push`'s HTTP client) as soon as it is full.

use super::OtlpStats;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use std::io;

/// Where full batches go: the request, and the records read so far (for progress).
pub(super) type Output<'o> = dyn FnMut(ExportTraceServiceRequest, u64) -> io::Result<()> + 'o;

pub(super) struct Batch<'o> {
    pub(super) resource: Resource,
    pub(super) scope: InstrumentationScope,
    pub(super) spans: Vec<Span>,
    pub(super) max: usize,
    pub(super) out: &'o mut Output<'o>,
    pub(super) stats: OtlpStats,
}

impl Batch<'_> {
    pub(super) fn push(&mut self, s: Span) -> io::Result<()> {
        self.stats.events += s.events.len() as u64;
        self.stats.spans_written += 1;
        self.spans.push(s);
        if self.spans.len() >= self.max {
            self.flush()?;
        }
        Ok(())
    }

    /// Sends the spans held (none: nothing).
    pub(super) fn flush(&mut self) -> io::Result<()> {
        if self.spans.is_empty() {
            return Ok(());
        }
        let spans = std::mem::replace(&mut self.spans, Vec::with_capacity(self.max));
        let req = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(self.resource.clone()),
                scope_spans: vec![ScopeSpans {
                    scope: Some(self.scope.clone()),
                    spans,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        };
        self.stats.batches += 1;
        (self.out)(req, self.stats.records)
    }
}
