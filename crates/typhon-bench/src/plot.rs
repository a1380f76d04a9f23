//! The pictures of one run (`typhon-rec bench --plot DIR`), drawn with plotters as SVG:
//! `latency.svg`, the percentile curves of the paced run (our write, the clocked floor, a lone
//! clock read) on log scales as HdrHistogram plots them; `cost.svg`, the per-call cost of our
//! writes and spans beside the floors and every peer, as bars on a log scale with each figure's
//! fastest–slowest run as a whisker.

use crate::report::{BenchReport, NsFigure};
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

/// Draws within the plot area are clamped to this (a log axis has no 0): bracket-subtracted
/// percentiles of a call shorter than the clock's step can be 0.
const LEAST_NS: f64 = 1.0;

/// Writes `latency.svg` and `cost.svg` of `r` into `dir` (created if missing), returning their
/// paths; an error names the file it could not write.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("typhon-plot-doc-{}", std::process::id()));
/// let files = typhon_bench::plot::write_plots(&typhon_bench::BenchReport::default(), &dir).unwrap();
/// assert_eq!(files.len(), 2);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn write_plots(r: &BenchReport, dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let latency = dir.join("latency.svg");
    let cost = dir.join("cost.svg");
    percentiles(r, &latency).map_err(|e| format!("{}: {e}", latency.display()))?;
    bars(r, &cost).map_err(|e| format!("{}: {e}", cost.display()))?;
    Ok(vec![latency, cost])
}

type Res = Result<(), Box<dyn std::error::Error>>;

/// "one in N" → its percentile, trimmed: 1 → "0%", 10 → "90%", 1000 → "99.9%".
fn percentile_label(one_in: f64) -> String {
    let p = 100.0 * (1.0 - 1.0 / one_in);
    let s = format!("{p:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

fn percentiles(r: &BenchReport, path: &Path) -> Res {
    let l = &r.latency;
    let one_in = |q: f64| 1.0 / (1.0 - q).max(1e-12);
    let x_max = l
        .curves
        .iter()
        .flat_map(|(_, c)| c.last().map(|p| one_in(p.0)))
        .fold(10.0, f64::max);
    let y_max = l
        .curves
        .iter()
        .flat_map(|(_, c)| c.iter().map(|p| p.1))
        .fold(100.0, f64::max)
        * 1.5;
    let root = SVGBackend::new(path, (760, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Per-call latency, {} paced calls, flusher writing a file (bracket subtracted; 0 drawn at 1 ns)",
                l.samples
            ),
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d((1.0..x_max).log_scale(), (LEAST_NS..y_max).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("percentile")
        .y_desc("ns")
        .x_label_formatter(&|x| percentile_label(*x))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    let colours = [BLUE, RGBColor(120, 120, 120), RGBColor(230, 120, 0)];
    for ((name, c), colour) in l.curves.iter().zip(colours) {
        let points = c.iter().map(|&(q, ns)| (one_in(q), ns.max(LEAST_NS)));
        chart
            .draw_series(LineSeries::new(points, colour.stroke_width(2)))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Which kind of figure a bar is: its colour.
#[derive(Clone, Copy)]
enum Kind {
    Floor,
    Ours,
    Peer,
}

fn bars(r: &BenchReport, path: &Path) -> Res {
    use Kind::*;
    let all: [(&str, &NsFigure, Kind); 15] = [
        ("a clock read (quanta Clock::raw)", &r.clock, Floor),
        ("store floor: 24 B + release", &r.store_floor, Floor),
        ("our write, recorder clock", &r.write_clock, Ours),
        ("our write, caller timestamp", &r.write_caller_ts, Ours),
        ("crossbeam ArrayQueue push", &r.arrayqueue, Peer),
        ("our span pair, recorder clock", &r.span, Ours),
        ("our span pair, caller times", &r.span_caller_ts, Ours),
        ("our span pair, &str name (copied)", &r.span_str, Ours),
        ("fastrace LocalSpan", &r.peer_span, Peer),
        ("puffin profile_scope!", &r.puffin_span, Peer),
        ("Tracy span!", &r.tracy_span, Peer),
        ("tracing: Registry, no-op layer", &r.tracing_floor, Floor),
        ("tracing: TyphonLayer", &r.tracing_span, Ours),
        ("tracing: tracing-tracy", &r.tracing_tracy_span, Peer),
        ("tracing: tracing-chrome", &r.tracing_chrome_span, Peer),
    ];
    // Top to bottom in the order above; figures not measured are left out. A segmented range
    // a..b has a segment for b too, hence `n - 1` below.
    let rows: Vec<_> = all.iter().rev().filter(|e| e.1.median > 0.0).collect();
    let n = rows.len().max(1);
    let x_max = rows.iter().map(|e| e.1.max).fold(10.0, f64::max) * 4.0;
    let root = SVGBackend::new(path, (760, 60 + 26 * n as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "ns per call, median of side-by-side runs (whisker: fastest to slowest run)",
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(220)
        .build_cartesian_2d((0.5..x_max).log_scale(), (0..n - 1).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("ns per call (log scale)")
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => rows.get(*i).map_or(String::new(), |e| e.0.to_owned()),
            _ => String::new(),
        })
        .x_label_formatter(&|x| format!("{x}"))
        .draw()?;
    let colour = |k: Kind| match k {
        Floor => RGBColor(150, 150, 150),
        Ours => RGBColor(40, 90, 200),
        Peer => RGBColor(230, 120, 0),
    };
    chart.draw_series(rows.iter().enumerate().map(|(i, e)| {
        let mut bar = Rectangle::new(
            [
                (0.5, SegmentValue::Exact(i)),
                (e.1.median, SegmentValue::Exact(i + 1)),
            ],
            colour(e.2).filled(),
        );
        bar.set_margin(4, 4, 0, 0);
        bar
    }))?;
    chart.draw_series(rows.iter().enumerate().map(|(i, e)| {
        PathElement::new(
            vec![
                (e.1.min, SegmentValue::CenterOf(i)),
                (e.1.max, SegmentValue::CenterOf(i)),
            ],
            BLACK.stroke_width(1),
        )
    }))?;
    let font = TextStyle::from(("sans-serif", 12)).pos(Pos::new(HPos::Left, VPos::Center));
    chart.draw_series(rows.iter().enumerate().map(|(i, e)| {
        Text::new(
            format!("{:.1}", e.1.median),
            (e.1.max * 1.1, SegmentValue::CenterOf(i)),
            font.clone(),
        )
    }))?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_labels_read_as_hdrhistogram_axes() {
        assert_eq!(percentile_label(1.0), "0%");
        assert_eq!(percentile_label(10.0), "90%");
        assert_eq!(percentile_label(1000.0), "99.9%");
        assert_eq!(percentile_label(1e6), "99.9999%");
    }

    #[test]
    fn plots_are_svg_with_every_measured_bar_and_curve() {
        let f = |m: f64| NsFigure {
            median: m,
            min: m * 0.9,
            max: m * 1.2,
        };
        let mut r = BenchReport {
            clock: f(9.0),
            span: f(25.0),
            tracy_span: f(42.0),
            tracing_chrome_span: f(640.0),
            ..Default::default()
        };
        r.latency.samples = 1000;
        r.latency.curves = vec![
            ("ours", vec![(0.0, 0.0), (0.9, 10.0), (0.999, 30.0)]),
            ("floor", vec![(0.0, 0.0), (0.9, 10.0), (0.999, 20.0)]),
        ];
        let dir = std::env::temp_dir().join(format!("typhon-plot-test-{}", std::process::id()));
        let files = write_plots(&r, &dir).expect("plots written");
        let read = |i: usize| std::fs::read_to_string(&files[i]).expect("readable");
        let (lat, cost) = (read(0), read(1));
        std::fs::remove_dir_all(&dir).expect("removed");
        assert!(lat.starts_with("<svg") && cost.starts_with("<svg"));
        for s in ["ours", "floor", "90%", "percentile"] {
            assert!(lat.contains(s), "latency.svg lacks {s}");
        }
        for s in [
            "a clock read",
            "our span pair, recorder clock",
            "Tracy span!",
            "640.0",
        ] {
            assert!(cost.contains(s), "cost.svg lacks {s}");
        }
        // Figures not measured (0) get no bar.
        assert!(!cost.contains("fastrace"));
    }

    #[test]
    fn an_unwritable_directory_is_named() {
        let e = write_plots(&BenchReport::default(), Path::new("/proc/typhon-no-such/x"))
            .expect_err("cannot create under /proc");
        assert!(e.contains("/proc/typhon-no-such/x"), "{e}");
    }
}
