//! The live view's counters: a ring of each charted counter's last seconds, the counters past
//! [`COUNTERS_KEPT`] counted, and what the page is sent of them (thinned, envelope kept).

use super::{Model, COUNTERS_KEPT, COUNTER_NS, COUNTER_POINTS, OTHER_COUNTERS_COUNTED};
use std::collections::VecDeque;

/// One counter's recent values.
pub struct CounterSeries {
    pub name: String,
    /// Values taken in all (not only those kept).
    pub count: u64,
    /// The last values: (the record's time in ns, the value), in the order read.
    pub points: VecDeque<(u64, f64)>,
}

/// What the page is sent of one counter ([`Model::counter_view`]).
#[derive(Debug, PartialEq)]
pub struct CounterView<'a> {
    pub name: &'a str,
    pub count: u64,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub points: Vec<(u64, f64)>,
}

/// At most `n` of `v` (in time order): of each of `n / 2` stretches its least and greatest
/// value in their order, and the last of `v` always.
pub(super) fn thin(v: &[(u64, f64)], n: usize) -> Vec<(u64, f64)> {
    if v.len() <= n {
        return v.to_vec();
    }
    let buckets = (n.saturating_sub(1) / 2).max(1);
    let size = v.len().div_ceil(buckets);
    let mut out = Vec::with_capacity(n);
    for b in v.chunks(size) {
        let lo = (0..b.len()).min_by(|&i, &j| b[i].1.total_cmp(&b[j].1));
        let hi = (0..b.len()).max_by(|&i, &j| b[i].1.total_cmp(&b[j].1));
        let (Some(lo), Some(hi)) = (lo, hi) else {
            continue;
        };
        out.push(b[lo.min(hi)]);
        if lo != hi {
            out.push(b[lo.max(hi)]);
        }
    }
    if out.last() != v.last() {
        out.push(v[v.len() - 1]);
    }
    out
}

/// The counters past [`COUNTERS_KEPT`]: counted, not charted.
#[derive(Default)]
pub struct OtherCounters {
    /// Their values, in all.
    pub values: u64,
    /// Hashes of their names, up to [`OTHER_COUNTERS_COUNTED`].
    pub(super) names: std::collections::HashSet<u64>,
}

impl OtherCounters {
    /// Distinct names counted (at least this many once [`OTHER_COUNTERS_COUNTED`] is reached).
    pub fn names(&self) -> usize {
        self.names.len()
    }
}

impl Model {
    /// A counter's value at `ts`: into its ring (the oldest values out past [`COUNTER_NS`]
    /// before the newest record, or past [`COUNTER_POINTS`]), or counted among the others.
    pub(super) fn counter(&mut self, name: &str, ts: u64, v: f64) {
        let i = match self.counter_index.get(name) {
            Some(&i) => i,
            None if self.counters.len() < COUNTERS_KEPT => {
                self.counter_index
                    .insert(name.to_owned(), self.counters.len());
                self.counters.push(CounterSeries {
                    name: name.to_owned(),
                    count: 0,
                    points: VecDeque::new(),
                });
                self.counters.len() - 1
            }
            None => {
                let o = &mut self.other_counters;
                o.values += 1;
                if o.names.len() < OTHER_COUNTERS_COUNTED {
                    use std::hash::{BuildHasher, BuildHasherDefault};
                    let h =
                        BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                            .hash_one(name);
                    o.names.insert(h);
                }
                return;
            }
        };
        let cut = self.newest.saturating_sub(COUNTER_NS);
        let c = &mut self.counters[i];
        c.count += 1;
        while c
            .points
            .front()
            .is_some_and(|p| p.0 < cut || c.points.len() >= COUNTER_POINTS)
        {
            c.points.pop_front();
        }
        c.points.push_back((ts, v));
    }

    /// The counters' values of the last [`COUNTER_NS`] before the newest record: per counter
    /// its name, values taken in all, the min and max of those kept of the window, and the
    /// values thinned to at most `points` (the least and the greatest of each stretch, so that
    /// the chart keeps its envelope, and the last value).
    pub fn counter_view(&self, points: usize) -> Vec<CounterView<'_>> {
        let cut = self.newest.saturating_sub(COUNTER_NS);
        self.counters
            .iter()
            .map(|c| {
                let mut recent: Vec<(u64, f64)> =
                    c.points.iter().copied().filter(|p| p.0 >= cut).collect();
                // In time order (a counter written on several threads arrives merged by page).
                recent.sort_by_key(|p| p.0);
                let finite = recent.iter().map(|p| p.1).filter(|v| v.is_finite());
                let min = finite.clone().reduce(f64::min);
                let max = finite.reduce(f64::max);
                CounterView {
                    name: &c.name,
                    count: c.count,
                    min,
                    max,
                    points: thin(&recent, points),
                }
            })
            .collect()
    }
}
