//! `stats`' counters: per counter name (over every thread), the count of values, their min,
//! max, mean and last (by time; the later record at equal times). Integer series stay exact
//! (min, max and last as integers, the mean from an exact sum); a series with an f64 value is
//! summed as f64.

use std::collections::BTreeMap;
use typhon_recorder::codec::records::{self, CounterValue, Record};

#[derive(Clone, Copy)]
struct Series {
    count: u64,
    /// Every value so far is an integer: the `*_i` fields hold them exactly.
    ints: bool,
    min_i: i64,
    max_i: i64,
    sum_i: i128,
    min_f: f64,
    max_f: f64,
    sum_f: f64,
    last: CounterValue,
    last_ts: u64,
}

/// The counters of a recording, by name.
#[derive(Default)]
pub(crate) struct Counters {
    by_name: BTreeMap<String, Series>,
}

impl Counters {
    /// Takes `data` if it is a Counter record (ids already resolved by the reader) at `ts`.
    pub(crate) fn add(&mut self, ts: u64, data: &[u8]) {
        let Ok((_, Record::Counter { value, name })) = records::decode(data) else {
            return;
        };
        let f = value.as_f64();
        match self.by_name.get_mut(name) {
            None => {
                let i = value.as_i64().unwrap_or(0);
                self.by_name.insert(
                    name.to_string(),
                    Series {
                        count: 1,
                        ints: !value.is_f64(),
                        min_i: i,
                        max_i: i,
                        sum_i: i128::from(i),
                        min_f: f,
                        max_f: f,
                        sum_f: f,
                        last: value,
                        last_ts: ts,
                    },
                );
            }
            Some(s) => {
                s.count += 1;
                match value.as_i64() {
                    Some(i) if s.ints => {
                        s.min_i = s.min_i.min(i);
                        s.max_i = s.max_i.max(i);
                        s.sum_i += i128::from(i);
                    }
                    _ => s.ints = false,
                }
                s.min_f = s.min_f.min(f);
                s.max_f = s.max_f.max(f);
                s.sum_f += f;
                if ts >= s.last_ts {
                    s.last = value;
                    s.last_ts = ts;
                }
            }
        }
    }

    fn stats(s: &Series) -> [serde_json::Value; 4] {
        if s.ints {
            [
                s.min_i.into(),
                s.max_i.into(),
                (s.sum_i as f64 / s.count as f64).into(),
                s.last.raw.into(),
            ]
        } else {
            // NaN and infinities are no JSON numbers: serde_json writes them as null.
            [
                s.min_f.into(),
                s.max_f.into(),
                (s.sum_f / s.count as f64).into(),
                s.last.as_f64().into(),
            ]
        }
    }

    /// `stats --json`'s `counters`: `{name: {count, min, max, mean, last}}`.
    pub(crate) fn json(&self) -> serde_json::Value {
        self.by_name
            .iter()
            .map(|(name, s)| {
                let [min, max, mean, last] = Self::stats(s);
                let v = serde_json::json!({
                    "count": s.count, "min": min, "max": max, "mean": mean, "last": last,
                });
                (name.clone(), v)
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    /// `stats`' counter table (nothing when the recording has no counters).
    pub(crate) fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        if self.by_name.is_empty() {
            return out;
        }
        let _ = writeln!(
            out,
            "\n{:<24} {:>10} {:>14} {:>14} {:>16} {:>14}",
            "counter", "count", "min", "max", "mean", "last"
        );
        for (name, s) in &self.by_name {
            let [min, max, mean, last] = Self::stats(s);
            let _ = writeln!(
                out,
                "{:<24} {:>10} {:>14} {:>14} {:>16} {:>14}",
                typhon_recorder::printable::printable(name),
                s.count,
                min.to_string(),
                max.to_string(),
                format!("{:.3}", mean.as_f64().unwrap_or(f64::NAN)),
                last.to_string()
            );
        }
        out
    }
}
