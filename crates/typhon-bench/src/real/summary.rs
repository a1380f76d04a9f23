//! The best and the median of each mode over the rounds, and its overhead over no subscriber
//! measured within each round.

use super::{Mode, Sample};
use serde_json::{json, Value};

/// One mode over every round. `cost_ns` is the figure compared (CPU a request, time a frame);
/// the per-unit figures are medians over the rounds, `missed` the sum.
#[derive(Clone, Debug, Default)]
pub struct ModeSummary {
    /// The mode's name.
    pub mode: String,
    /// Its label in the table.
    pub label: String,
    /// Rounds measured.
    pub rounds: usize,
    /// The lowest cost of any round, ns.
    pub best_ns: f64,
    /// The median cost, ns.
    pub median_ns: f64,
    /// The median over rounds of (this mode's cost − no subscriber's cost in the same round),
    /// ns; 0 for no subscriber itself, or when it was not measured.
    pub over_none_ns: f64,
    /// The median over rounds of (this mode's cost − the Registry alone's in the same round).
    pub over_registry_ns: f64,
    /// Bytes on disk a unit (request, frame), median.
    pub bytes_per_unit: f64,
    /// Records a unit (ours), median.
    pub records_per_unit: f64,
    /// Resident memory grown a unit, median (Tracy's queue; noisy for the others).
    pub mem_per_unit: f64,
    /// Records lost to a full ring, all rounds.
    pub missed: u64,
    /// Units the measured windows held, all rounds.
    pub units: u64,
    /// Further figures (key, median over rounds), in the order asked for.
    pub extras: Vec<(String, f64)>,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The difference of `mode`'s cost from `base`'s within each round where both ran, as a median.
fn over(samples: &[Sample], mode: &str, base: &str) -> f64 {
    let rounds = samples.iter().map(|s| s.round).max().map_or(0, |r| r + 1);
    let cost = |m: &str, r: usize| {
        samples
            .iter()
            .find(|s| s.mode == m && s.round == r)
            .map(|s| s.get("cost_ns"))
    };
    median(
        (0..rounds)
            .filter_map(|r| Some(cost(mode, r)? - cost(base, r)?))
            .collect(),
    )
}

/// Sums the samples up, one entry per mode measured, in the order of [`Mode::ALL`], with the
/// medians of the figures `extras` names besides the fixed ones.
pub fn summarise(samples: &[Sample], extras: &[&str]) -> Vec<ModeSummary> {
    Mode::ALL
        .iter()
        .filter_map(|m| {
            let of: Vec<&Sample> = samples.iter().filter(|s| s.mode == m.name()).collect();
            if of.is_empty() {
                return None;
            }
            let col = |k: &str| median(of.iter().map(|s| s.get(k)).collect());
            Some(ModeSummary {
                mode: m.name().to_owned(),
                label: m.label().to_owned(),
                rounds: of.len(),
                best_ns: of.iter().map(|s| s.get("cost_ns")).fold(f64::MAX, f64::min),
                median_ns: col("cost_ns"),
                over_none_ns: over(samples, m.name(), Mode::None.name()),
                over_registry_ns: over(samples, m.name(), Mode::Registry.name()),
                bytes_per_unit: col("bytes_per_unit"),
                records_per_unit: col("records_per_unit"),
                mem_per_unit: col("mem_bytes_per_unit"),
                missed: of.iter().map(|s| s.get("missed") as u64).sum(),
                units: of.iter().map(|s| s.get("units") as u64).sum(),
                extras: extras.iter().map(|k| (k.to_string(), col(k))).collect(),
            })
        })
        .collect()
}

impl ModeSummary {
    /// The summary as a JSON object.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "mode": self.mode, "rounds": self.rounds, "best_ns": self.best_ns,
            "median_ns": self.median_ns, "over_none_ns": self.over_none_ns,
            "over_registry_ns": self.over_registry_ns, "bytes_per_unit": self.bytes_per_unit,
            "records_per_unit": self.records_per_unit, "mem_per_unit": self.mem_per_unit,
            "missed": self.missed, "units": self.units,
        });
        for (k, x) in &self.extras {
            v[k] = json!(x);
        }
        v
    }
}

/// ns as µs with one decimal.
fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1e3)
}

/// The summary as a Markdown table, `unit` naming what a cost is per ("request", "frame"),
/// `extras` the headers of the extra figures (in µs), and the overheads as ratios to ours
/// (`typhon`) where both were measured.
pub fn table(rows: &[ModeSummary], cost: &str, unit: &str, extras: &[&str]) -> String {
    let mut s = format!(
        "| mode | {cost}, best | median | over no subscriber | over the Registry |{} B on disk a {unit} | records a {unit} | missed |\n|---|---|---|---|---|{}---|---|---|\n",
        extras.iter().map(|e| format!(" {e} |")).collect::<String>(),
        "---|".repeat(extras.len()),
    );
    for r in rows {
        let mem = if r.mode == Mode::Tracy.name() {
            format!(" ({:.0} B of memory)", r.mem_per_unit)
        } else {
            String::new()
        };
        let ex: String = r
            .extras
            .iter()
            .map(|(_, x)| format!(" {} |", us(*x)))
            .collect();
        s += &format!(
            "| {} | {} | {} | {} | {} |{ex} {:.0}{mem} | {:.1} | {} |\n",
            r.label,
            us(r.best_ns),
            us(r.median_ns),
            if r.mode == Mode::None.name() {
                "–".into()
            } else {
                us(r.over_none_ns)
            },
            if r.mode == Mode::Registry.name() || r.mode == Mode::None.name() {
                "–".into()
            } else {
                us(r.over_registry_ns)
            },
            r.bytes_per_unit,
            r.records_per_unit,
            r.missed,
        );
    }
    if let Some(ours) = rows.iter().find(|r| r.mode == Mode::Typhon.name()) {
        for r in rows
            .iter()
            .filter(|r| r.mode == Mode::Chrome.name() || r.mode == Mode::Tracy.name())
        {
            if ours.over_none_ns > 0.0 {
                s += &format!(
                    "\n{}'s overhead over no subscriber is {:.1}× ours.",
                    r.label,
                    r.over_none_ns / ours.over_none_ns
                );
            }
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(mode: &str, round: usize, cost: f64) -> Sample {
        Sample {
            mode: mode.into(),
            round,
            figures: json!({ "cost_ns": cost, "units": 10, "missed": 1, "bytes_per_unit": 7, "extra_ns": cost / 10.0 }),
        }
    }

    #[test]
    fn overheads_are_medians_of_differences_within_a_round() {
        // Round 1 is slow for both modes alike: the differences stay 2, 3, 4.
        let s = vec![
            sample("none", 0, 10e3),
            sample("typhon", 0, 12e3),
            sample("none", 1, 100e3),
            sample("typhon", 1, 103e3),
            sample("none", 2, 11e3),
            sample("typhon", 2, 15e3),
        ];
        let sum = summarise(&s, &["extra_ns"]);
        assert_eq!(sum.len(), 2);
        let ours = &sum[1];
        assert_eq!(ours.mode, "typhon");
        assert_eq!(ours.best_ns, 12e3);
        assert_eq!(ours.median_ns, 15e3);
        assert_eq!(ours.over_none_ns, 3e3);
        // No Registry round: no difference to take.
        assert_eq!(ours.over_registry_ns, 0.0);
        assert_eq!((ours.missed, ours.units, ours.rounds), (3, 30, 3));
        assert_eq!(ours.extras, vec![("extra_ns".to_string(), 1500.0)]);
        let t = table(&sum, "CPU", "request", &["extra"]);
        assert!(
            t.contains("| Registry + TyphonLayer (file) | 12.0 µs | 15.0 µs | 3.0 µs | 0.0 µs | 1.5 µs | 7 | 0.0 | 3 |"),
            "{t}"
        );
    }
}
