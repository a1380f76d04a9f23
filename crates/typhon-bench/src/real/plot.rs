//! A real program's figures as an SVG: each mode's median cost as a bar, its best round as a
//! tick, the no-subscriber cost as a line, on a linear scale (the modes differ by small
//! factors, not by orders of magnitude).

use super::ModeSummary;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Draws `rows` into the SVG file `path`, captioned `title`, the axis in µs `per` ("a request").
/// An error names the file.
pub fn overhead_svg(
    path: &Path,
    title: &str,
    per: &str,
    rows: &[ModeSummary],
) -> Result<(), String> {
    draw(path, title, per, rows).map_err(|e| format!("{}: {e}", path.display()))
}

fn draw(
    path: &Path,
    title: &str,
    per: &str,
    rows: &[ModeSummary],
) -> Result<(), Box<dyn std::error::Error>> {
    // Top to bottom in the order given.
    let rows: Vec<&ModeSummary> = rows.iter().rev().collect();
    let n = rows.len().max(1);
    let us = |ns: f64| ns / 1e3;
    let x_max = rows.iter().map(|r| us(r.median_ns)).fold(1.0, f64::max) * 1.3;
    let root = SVGBackend::new(path, (760, 70 + 30 * n as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(230)
        .build_cartesian_2d(0.0..x_max, (0..n - 1).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(format!("µs {per}: bar the median round, tick the best"))
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => rows.get(*i).map_or(String::new(), |r| r.label.clone()),
            _ => String::new(),
        })
        .draw()?;
    let colour = |m: &str| match m {
        "none" | "registry" => RGBColor(150, 150, 150),
        "typhon" | "typhon-zstd" => RGBColor(40, 90, 200),
        _ => RGBColor(230, 120, 0),
    };
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        let mut bar = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(i)),
                (us(r.median_ns), SegmentValue::Exact(i + 1)),
            ],
            colour(&r.mode).filled(),
        );
        bar.set_margin(5, 5, 0, 0);
        bar
    }))?;
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        PathElement::new(
            vec![
                (us(r.best_ns), SegmentValue::Exact(i)),
                (us(r.best_ns), SegmentValue::Exact(i + 1)),
            ],
            BLACK.stroke_width(2),
        )
    }))?;
    if let Some(none) = rows.iter().find(|r| r.mode == "none") {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![
                (us(none.median_ns), SegmentValue::Exact(0)),
                (us(none.median_ns), SegmentValue::Exact(n)),
            ],
            RGBColor(90, 90, 90).stroke_width(1),
        )))?;
    }
    let font = TextStyle::from(("sans-serif", 12)).pos(Pos::new(HPos::Left, VPos::Center));
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        let over = if r.mode == "none" {
            String::new()
        } else {
            format!(" (+{:.1})", us(r.over_none_ns))
        };
        Text::new(
            format!("{:.1}{over}", us(r.median_ns)),
            (us(r.median_ns) + x_max * 0.01, SegmentValue::CenterOf(i)),
            font.clone(),
        )
    }))?;
    root.present()?;
    Ok(())
}
