//! Triggers the recorder evaluates on the records its flusher takes: a snapshot when a tick or a
//! named span lasts longer than a bound. The writers pay nothing: the flusher looks only at
//! records it already handles out of line (spans; ticks only while a tick rule exists).

use std::time::Duration;

/// What a trigger watches.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Watch {
    /// A tick (TickEnd after its slot's last TickStart) longer than this (ns).
    TickOver(u64),
    /// A span with this name longer than this (ns).
    SpanOver(String, u64),
}

/// A rule for [`RecorderBuilder::snapshot_when`](crate::RecorderBuilder::snapshot_when): the
/// recorder takes a snapshot of its window when it sees the condition.
///
/// ```
/// use std::time::Duration;
/// use typhon_recorder::window::Trigger;
/// let t = Trigger::tick_over(Duration::from_millis(20))
///     .keep_after(Duration::from_millis(500))
///     .at_most_every(Duration::from_secs(10));
/// assert_eq!(t.keep_after_ns(), 500_000_000);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trigger {
    watch: Watch,
    keep_after_ns: u64,
    every_ns: u64,
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Trigger {
    /// When a tick (from `tick_start` to `tick_end` on one thread) lasts longer than `d`.
    ///
    /// ```
    /// let t = typhon_recorder::window::Trigger::tick_over(std::time::Duration::from_millis(20));
    /// assert_eq!(t.to_string(), "tick over 20ms");
    /// ```
    pub fn tick_over(d: Duration) -> Self {
        Self {
            watch: Watch::TickOver(ns(d)),
            keep_after_ns: 0,
            every_ns: 0,
        }
    }

    /// When a span named `name` (a `span("name")` or a static span) lasts longer than `d`.
    ///
    /// ```
    /// let t = typhon_recorder::window::Trigger::span_over("update", std::time::Duration::from_millis(5));
    /// assert_eq!(t.to_string(), "span update over 5ms");
    /// ```
    pub fn span_over(name: &str, d: Duration) -> Self {
        Self {
            watch: Watch::SpanOver(name.to_owned(), ns(d)),
            keep_after_ns: 0,
            every_ns: 0,
        }
    }

    /// Keeps recording for `d` after the trigger before the snapshot is cut, so that it shows
    /// what followed.
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = typhon_recorder::window::Trigger::tick_over(Duration::from_millis(1))
    ///     .keep_after(Duration::from_secs(2));
    /// assert_eq!(t.keep_after_ns(), 2_000_000_000);
    /// ```
    pub fn keep_after(mut self, d: Duration) -> Self {
        self.keep_after_ns = ns(d);
        self
    }

    /// At most one snapshot from this trigger every `d`: it does not fire again before `d`
    /// has passed since it last fired.
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = typhon_recorder::window::Trigger::tick_over(Duration::from_millis(1))
    ///     .at_most_every(Duration::from_secs(60));
    /// assert_eq!(t.at_most_every_ns(), 60_000_000_000);
    /// ```
    pub fn at_most_every(mut self, d: Duration) -> Self {
        self.every_ns = ns(d);
        self
    }

    /// The time kept after the trigger, ns.
    pub fn keep_after_ns(&self) -> u64 {
        self.keep_after_ns
    }

    /// The minimum spacing between two of its snapshots, ns.
    pub fn at_most_every_ns(&self) -> u64 {
        self.every_ns
    }
}

impl std::fmt::Display for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = |n: u64| format!("{:?}", Duration::from_nanos(n));
        match &self.watch {
            Watch::TickOver(n) => write!(f, "tick over {}", d(*n)),
            Watch::SpanOver(name, n) => write!(f, "span {name} over {}", d(*n)),
        }
    }
}

/// The flusher's state for the triggers: per slot the last TickStart, per rule when it last
/// fired.
pub(crate) struct Rules {
    rules: Vec<Trigger>,
    fired: Vec<Option<u64>>,
    tick_start: Vec<Option<u64>>,
    /// Times a rule's condition held but it did not fire (too soon, or a snapshot in flight).
    pub(crate) skipped: u64,
}

impl Rules {
    pub(crate) fn new(rules: Vec<Trigger>) -> Self {
        Self {
            fired: vec![None; rules.len()],
            tick_start: vec![None; crate::write::slots::SLOTS],
            rules,
            skipped: 0,
        }
    }

    /// True if a rule watches ticks (the flusher then looks at TickStart and TickEnd).
    pub(crate) fn watches_ticks(&self) -> bool {
        self.rules
            .iter()
            .any(|r| matches!(r.watch, Watch::TickOver(_)))
    }

    /// True if a rule watches spans.
    pub(crate) fn watches_spans(&self) -> bool {
        self.rules
            .iter()
            .any(|r| matches!(r.watch, Watch::SpanOver(..)))
    }

    pub(crate) fn tick_start(&mut self, slot: u8, ts: u64) {
        self.tick_start[slot as usize] = Some(ts);
    }

    /// A TickEnd of `slot` at `ts`: the rule that fires, if any.
    pub(crate) fn tick_end(&mut self, slot: u8, ts: u64) -> Option<(usize, u64)> {
        let start = self.tick_start[slot as usize].take()?;
        let d = ts.saturating_sub(start);
        let i = self
            .rules
            .iter()
            .position(|r| matches!(r.watch, Watch::TickOver(b) if d > b))?;
        self.fire(i, ts)
    }

    /// A span named `name` that lasted `d` ns, ending at `end`: the rule that fires, if any.
    /// `name` is only asked for when a span rule's bound is below `d`.
    pub(crate) fn span(
        &mut self,
        d: u64,
        end: u64,
        name: impl FnOnce() -> Option<Vec<u8>>,
    ) -> Option<(usize, u64)> {
        if !self
            .rules
            .iter()
            .any(|r| matches!(r.watch, Watch::SpanOver(_, b) if d > b))
        {
            return None;
        }
        let name = name()?;
        let i = self.rules.iter().position(
            |r| matches!(&r.watch, Watch::SpanOver(n, b) if d > *b && n.as_bytes() == name),
        )?;
        self.fire(i, end)
    }

    /// Rule `i`'s condition held at `at`: it fires unless it fired less than its spacing ago.
    fn fire(&mut self, i: usize, at: u64) -> Option<(usize, u64)> {
        let every = self.rules[i].every_ns;
        if self.fired[i].is_some_and(|t| at < t.saturating_add(every)) {
            self.skipped += 1;
            return None;
        }
        self.fired[i] = Some(at);
        Some((i, self.rules[i].keep_after_ns))
    }

    /// The text of rule `i` (for the snapshot's metadata).
    pub(crate) fn describe(&self, i: usize) -> String {
        self.rules[i].to_string()
    }

    /// Rule `i` fired but no request could be placed: it may fire again at once.
    pub(crate) fn unfire(&mut self, i: usize) {
        self.fired[i] = None;
        self.skipped += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_fires_at_most_once_per_spacing() {
        let ms = Duration::from_millis;
        let mut r = Rules::new(vec![Trigger::tick_over(ms(20)).at_most_every(ms(100))]);
        let t = |n: u64| n * 1_000_000;
        let mut fired = Vec::new();
        for k in 0..10u64 {
            let start = t(50 * k);
            r.tick_start(1, start);
            if r.tick_end(1, start + t(30)).is_some() {
                fired.push(k);
            }
        }
        // Every tick is over budget; ends at 30, 80, 130, …: fired at 30, 130, 230, … ms.
        assert_eq!(fired, vec![0, 2, 4, 6, 8]);
        assert_eq!(r.skipped, 5);
        r.tick_start(1, t(1000));
        assert!(r.tick_end(1, t(1010)).is_none(), "a tick under budget");
    }

    #[test]
    fn a_span_rule_reads_the_name_only_above_its_bound() {
        let mut r = Rules::new(vec![Trigger::span_over("slow", Duration::from_micros(1))]);
        assert!(r.span(500, 10, || panic!("not asked")).is_none());
        assert!(r.span(5000, 10, || Some(b"fast".to_vec())).is_none());
        assert_eq!(r.span(5000, 10, || Some(b"slow".to_vec())), Some((0, 0)));
    }
}
