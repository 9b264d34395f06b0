//! The report's charts, drawn by plotters as inline SVG: bars with 95%
//! whiskers per arm, and lines over k (rounds, pass@k). Line charts carry
//! their legend as HTML beneath the drawing, where it cannot cover a point.

use crate::experiment::stats::Rate;
use crate::report_html::{bar_label, legend, CAPTION, LABELS};
use plotters::prelude::*;

/// One colour per arm, by the arm's place in the report.
const PALETTE: [RGBColor; 8] = [
    RGBColor(25, 118, 210),
    RGBColor(239, 108, 0),
    RGBColor(46, 125, 50),
    RGBColor(198, 40, 40),
    RGBColor(106, 27, 154),
    RGBColor(0, 131, 143),
    RGBColor(141, 110, 99),
    RGBColor(96, 125, 139),
];

const HEIGHT: u32 = 400;

fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// One arm's bar: its name, its colour index and its rate.
pub(super) struct Bar {
    pub name: String,
    pub colour: usize,
    pub rate: Rate,
}

/// Bars with 95% whiskers, one per arm.
pub(super) fn rate_bars(title: &str, bars: &[Bar]) -> String {
    let mut svg = String::new();
    {
        let width = (160 + 120 * bars.len() as u32).clamp(520, 1300);
        let root = SVGBackend::with_string(&mut svg, (width, HEIGHT)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let n = bars.len().max(1) as f64;
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(title, CAPTION)
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(72)
            .build_cartesian_2d(0f64..n, 0f64..1.05f64)
        else {
            return String::new();
        };
        let names: Vec<String> = bars.iter().map(|b| b.name.clone()).collect();
        let label = |x: &f64| bar_label(&names, *x);
        let _ = chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(bars.len() * 2 + 1)
            .x_label_formatter(&label)
            .label_style(LABELS)
            .y_desc("share of runs")
            .axis_desc_style(LABELS)
            .draw();
        for (i, bar) in bars.iter().enumerate() {
            let (x, r) = (i as f64, bar.rate);
            let _ = chart.draw_series([Rectangle::new(
                [(x + 0.2, 0.0), (x + 0.8, r.rate)],
                colour(bar.colour).mix(0.8).filled(),
            )]);
            let _ = chart.draw_series([PathElement::new(
                [(x + 0.5, r.low), (x + 0.5, r.high)],
                BLACK.stroke_width(2),
            )]);
            for y in [r.low, r.high] {
                let _ =
                    chart.draw_series([PathElement::new([(x + 0.42, y), (x + 0.58, y)], BLACK)]);
            }
        }
        let _ = root.present();
    }
    svg
}

/// One arm's line over k = 1, 2, ...: a value and its 95% interval per
/// k (`None`: no value at that k).
pub(super) struct Line {
    pub name: String,
    pub colour: usize,
    pub points: Vec<Option<(f64, f64, f64)>>,
}

/// Lines over k with whiskers, and the legend as HTML.
pub(super) fn lines(title: &str, x_desc: &str, y_desc: &str, lines: &[Line]) -> String {
    let max_k = lines
        .iter()
        .map(|l| l.points.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (660, HEIGHT)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(title, CAPTION)
            .margin(14)
            .x_label_area_size(56)
            .y_label_area_size(72)
            .build_cartesian_2d(0.5f64..max_k as f64 + 0.5, 0f64..1.05f64)
        else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .x_labels(max_k.min(20))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .label_style(LABELS)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .axis_desc_style(LABELS)
            .draw();
        // Lines side by side at each k, so equal values stay visible.
        let spread = 0.25 / lines.len().max(1) as f64;
        for (i, line) in lines.iter().enumerate() {
            let c = colour(line.colour);
            let shift = (i as f64 - (lines.len() as f64 - 1.0) / 2.0) * spread;
            let points: Vec<(f64, f64, f64, f64)> = line
                .points
                .iter()
                .enumerate()
                .filter_map(|(k, p)| p.map(|(v, lo, hi)| ((k + 1) as f64 + shift, v, lo, hi)))
                .collect();
            let _ = chart.draw_series(LineSeries::new(
                points.iter().map(|p| (p.0, p.1)),
                c.stroke_width(3),
            ));
            for &(x, v, lo, hi) in &points {
                let _ =
                    chart.draw_series([PathElement::new([(x, lo), (x, hi)], c.stroke_width(1))]);
                let _ = chart.draw_series([Circle::new((x, v), 4, c.filled())]);
            }
        }
        let _ = root.present();
    }
    let keys: Vec<(String, RGBColor)> = lines
        .iter()
        .map(|l| (l.name.clone(), colour(l.colour)))
        .collect();
    format!("{svg}{}", legend(&keys))
}
