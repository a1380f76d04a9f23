//! The API's shorter forms write what the long ones do: `span!` (formatted names, a literal,
//! a name whose `Display` itself opens a span), `span(&format!(..))`, `traced_span` with
//! `command_causal_id`'s result, `phase()` guards, `instant!`, and the `CeLog` builder (each
//! of its options against the positional `celog_data` fields). Records are read back from the
//! memory sink's pages, static names resolved as the readers do.

mod recording;

use recording::{read_stream, Names};
use std::fmt;
use typhon_recorder::codec::celog::{CELID_USER, CELZONE_HEAP};
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::sink::MemorySink;
use typhon_recorder::{doc_lock, instant, span, CeLog, RecorderBuilder, TraceContext};

/// Every record of slot 1 as (kind name, detail).
fn records_of(sink: &MemorySink) -> Vec<String> {
    let pages = sink.pages();
    let pages = pages.lock();
    let mut out = Vec::new();
    let mut names = Names::default();
    for p in read_stream(&pages.slots[1]) {
        for (_, r) in &p.records {
            let Some(r) = names.read(r) else { continue };
            let (_, rec) = records::decode(&r).unwrap();
            out.push(match rec {
                Record::NamedSpan { name, .. } => format!("span {name}"),
                Record::TracedSpan { name, context, .. } => {
                    format!("traced {name} {:#x} {:#x}", context.hi, context.lo)
                }
                Record::NamedPhaseStart { phase, name } => format!("phase+ {phase} {name}"),
                Record::NamedPhaseEnd { phase, name } => format!("phase- {phase} {name}"),
                Record::NamedInstant { payload, name } => format!("instant {name} {payload}"),
                Record::CeLog(ev) => format!(
                    "celog {:#x} ts={} flag={:?} data={:?}",
                    ev.id,
                    ev.timestamp.is_some(),
                    ev.flag,
                    ev.data
                ),
                Record::ThreadInfo { .. } => continue,
                other => format!("{other:?}"),
            });
        }
    }
    out
}

/// A value whose `Display` opens a span of its own: `span!` must not lose either name.
struct Nested;
impl fmt::Display for Nested {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let _inner = span!("inner {}", 1);
        f.write_str("outer")
    }
}

#[test]
fn short_forms_write_what_the_long_ones_do() {
    let _g = doc_lock();
    // Nothing installed: `span!` formats nothing and opens nothing.
    assert_eq!(span!("never {}", 1).id(), 0);
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
    {
        let level = 3;
        let _a = span!("load level {level}");
        let _b = span!("plain");
        let _c = typhon_recorder::span(&format!("made {}", "here"));
        let _d = span!("{}", Nested);
    }
    {
        let _t = typhon_recorder::traced_span("apply", typhon_recorder::command_causal_id(7, 2, 3));
    }
    {
        let _p = typhon_recorder::phase(4, "physics");
        instant!("hit");
        instant!("hit", -2);
    }
    CeLog::new(CELID_USER, b"a").write().unwrap();
    CeLog::new(CELID_USER + 1, b"b")
        .flag(9)
        .without_timestamp()
        .write()
        .unwrap();
    CeLog::new(CELID_USER + 2, b"c")
        .zone_ce(CELZONE_HEAP)
        .at(rec.now())
        .write()
        .unwrap();
    // Outside every enabled zone: filtered, like celog_data's.
    typhon_recorder::celog_set_zones(0, CELZONE_HEAP, 0);
    CeLog::new(CELID_USER + 3, b"d").write().unwrap();
    let stats = rec.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
    assert_eq!(
        stats.slot(1).unwrap().filtered,
        1,
        "the CeLog outside the zones"
    );
    let ctx = TraceContext::from_command(7, 2, 3);
    assert_eq!(
        records_of(&sink),
        [
            "span inner 1".to_string(),
            "span outer".into(),
            "span made here".into(),
            "span plain".into(),
            "span load level 3".into(),
            format!("traced apply {:#x} {:#x}", ctx.hi, ctx.lo),
            "phase+ 4 physics".into(),
            "instant hit 0".into(),
            "instant hit -2".into(),
            "phase- 4 physics".into(),
            "celog 0x2000 ts=true flag=None data=[97]".into(),
            "celog 0x2001 ts=false flag=Some(9) data=[98]".into(),
            "celog 0x2002 ts=true flag=None data=[99]".into(),
        ]
    );
    typhon_recorder::celog_set_zones(u32::MAX, u32::MAX, u32::MAX);
}

/// Counters: `counter!` of a literal and of a run-time name, every value type, the `*_at`
/// forms and `tick_end_with_gauges`, whose gauges and TickEnd share one time, read back
/// resolved (the static names' CounterIds as Counters) with their exact values.
#[test]
fn counters_and_tick_gauges_read_back_exactly() {
    use records::CounterValue as V;
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
    typhon_recorder::counter!("depth", 3u8);
    typhon_recorder::counter!("depth", -7i64);
    typhon_recorder::counter!("load", 0.25f32);
    typhon_recorder::counter!(&format!("shard {}", 2), usize::MAX);
    typhon_recorder::counter_at(100, "depth", 9);
    typhon_recorder::counter_f64_at(101, "load", f64::MIN_POSITIVE);
    typhon_recorder::counter_named_f64("run-time", -0.5);
    typhon_recorder::tick_end_with_gauges(2, 3, &[("entities", 1000), ("bytes", 5 << 20)]);
    rec.finish().unwrap();
    let pages = sink.pages();
    let pages = pages.lock();
    let mut names = Names::default();
    let mut got = Vec::new();
    for p in read_stream(&pages.slots[1]) {
        for (_, r) in &p.records {
            let Some(r) = names.read(r) else { continue };
            let (h, rec) = records::decode(&r).unwrap();
            match rec {
                Record::Counter { value, name } => got.push((h.timestamp, name.to_string(), value)),
                Record::TickEnd { .. } => got.push((h.timestamp, "TickEnd".into(), V::default())),
                _ => {}
            }
        }
    }
    let values: Vec<(&str, V)> = got.iter().map(|(_, n, v)| (n.as_str(), *v)).collect();
    assert_eq!(
        values,
        [
            ("depth", V::from_i64(3)),
            ("depth", V::from_i64(-7)),
            ("load", V::from_f64(0.25)),
            ("shard 2", V::from_i64(i64::MAX)),
            ("depth", V::from_i64(9)),
            ("load", V::from_f64(f64::MIN_POSITIVE)),
            ("run-time", V::from_f64(-0.5)),
            ("entities", V::from_i64(1000)),
            ("bytes", V::from_i64(5 << 20)),
            ("TickEnd", V::default()),
        ]
    );
    let tick: Vec<i64> = got[7..].iter().map(|g| g.0).collect();
    assert!(tick.iter().all(|&t| t == tick[0]), "one time: {tick:?}");
}
