//! A run's written results: `results.jsonl` (one record per pair, classed
//! under the run's tau), `summary.json` (tau, counts overall and per
//! generator, the sweep) and `report.html`, one self-contained page whose
//! charts plotters draws as inline SVG.

use crate::mpe::pool::Source;
use crate::mpe::results::{self, Class, Pair, Tau};
use crate::mpe::store::{Store, StoreError};
use plotters::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Colours of the classes, in [`Class::ALL`] order.
const COLOURS: [RGBColor; 7] = [
    RGBColor(46, 125, 50),
    RGBColor(239, 108, 0),
    RGBColor(198, 40, 40),
    RGBColor(142, 36, 170),
    RGBColor(120, 144, 156),
    RGBColor(176, 190, 197),
    RGBColor(66, 66, 66),
];

/// Write results, summary and report for `pairs`; the summary is returned.
pub fn write_all(
    store: &Store,
    pairs: &[Pair],
    tau: Tau,
    source: Source,
) -> Result<Value, StoreError> {
    let median = results::median(&results::rated_laxities(pairs));
    let cutoff = match tau {
        Tau::Fixed(x) => Some(x),
        Tau::Median => median,
    };
    // With no rated pair there is nothing to cut; any value classes the same.
    let t = cutoff.unwrap_or(0.0);
    let mut lines = String::new();
    for p in pairs {
        let mut record = serde_json::to_value(p).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut record {
            map.remove("params");
            map.remove("status");
            map.insert("class".into(), json!(p.class(t).name()));
            map.insert(
                "variants".into(),
                json!(Store::variants_path(&p.instance_id, &p.model_name_or_path)),
            );
        }
        lines.push_str(&record.to_string());
        lines.push('\n');
    }
    store.write(Path::new("results.jsonl"), lines.as_bytes())?;
    let all: Vec<&Pair> = pairs.iter().collect();
    let mut generators: BTreeMap<&str, Vec<&Pair>> = BTreeMap::new();
    for p in pairs {
        generators.entry(&p.model_name_or_path).or_default().push(p);
    }
    let per_generator: BTreeMap<&str, Value> = generators
        .iter()
        .map(|(g, ps)| {
            let lax: Vec<f64> = ps.iter().filter_map(|p| p.laxity).collect();
            (
                *g,
                json!({
                    "pairs": ps.len(),
                    "counts": results::counts(ps, t),
                    "median_laxity": results::median(&lax),
                }),
            )
        })
        .collect();
    let summary = json!({
        "operators": source.label(),
        "tau": cutoff,
        "tau_choice": match tau { Tau::Median => "median".to_string(), Tau::Fixed(x) => x.to_string() },
        "median_laxity": median,
        "pairs": pairs.len(),
        "counts": results::counts(&all, t),
        "per_generator": per_generator,
        "sweep": results::sweep(&all, median),
    });
    store.write(
        Path::new("summary.json"),
        serde_json::to_string_pretty(&summary)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    let html = page(pairs, &summary, t, &generators);
    store.write(Path::new("report.html"), html.as_bytes())?;
    Ok(summary)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The stacked class bars, one per generator.
fn class_bars(generators: &BTreeMap<&str, Vec<&Pair>>, tau: f64) -> String {
    let names: Vec<&str> = generators.keys().copied().collect();
    let counts: Vec<BTreeMap<&str, u32>> = generators
        .values()
        .map(|ps| results::counts(ps, tau))
        .collect();
    let top = counts
        .iter()
        .map(|c| c.values().sum::<u32>())
        .max()
        .unwrap_or(0)
        .max(1);
    let mut svg = String::new();
    {
        let width = (160 + 120 * names.len() as u32).clamp(480, 1200);
        let root = SVGBackend::with_string(&mut svg, (width, 360)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let n = names.len().max(1) as f64;
        let chart = ChartBuilder::on(&root)
            .caption("Classes per generator", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(48)
            .build_cartesian_2d(0f64..n, 0f64..f64::from(top) * 1.1);
        let Ok(mut chart) = chart else {
            return String::new();
        };
        let label = |x: &f64| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 1e-9 {
                names.get(i).map(|s| s.to_string()).unwrap_or_default()
            } else {
                String::new()
            }
        };
        let _ = chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(names.len() * 2 + 1)
            .x_label_formatter(&label)
            .y_desc("pairs")
            .draw();
        for (k, class) in Class::ALL.iter().enumerate() {
            let bars: Vec<Rectangle<(f64, f64)>> = counts
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    let below: u32 = Class::ALL[..k].iter().map(|c2| c[c2.name()]).sum();
                    let here = c[class.name()];
                    (here > 0).then(|| {
                        Rectangle::new(
                            [
                                (i as f64 + 0.2, f64::from(below)),
                                (i as f64 + 0.8, f64::from(below + here)),
                            ],
                            COLOURS[k].filled(),
                        )
                    })
                })
                .collect();
            if let Ok(series) = chart.draw_series(bars) {
                series.label(class.name()).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], COLOURS[k].filled())
                });
            }
        }
        let _ = chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .position(SeriesLabelPosition::UpperRight)
            .draw();
        let _ = root.present();
    }
    svg
}

/// The laxity histogram of rated pairs, bins of 0.05, the cutoff marked.
fn histogram(pairs: &[Pair], tau: f64) -> String {
    let laxities = results::rated_laxities(pairs);
    let mut bins = [0u32; 20];
    for l in &laxities {
        bins[((l * 20.0).floor() as usize).min(19)] += 1;
    }
    let top = bins.iter().copied().max().unwrap_or(0).max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 360)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(
                "Laxity rate of F->P tests (beta / total)",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(48)
            .build_cartesian_2d(0f64..1f64, 0f64..f64::from(top) * 1.15)
        else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .x_desc("laxity rate")
            .y_desc("tests")
            .draw();
        let _ = chart.draw_series(bins.iter().enumerate().filter(|(_, c)| **c > 0).map(
            |(i, c)| {
                let x = i as f64 / 20.0;
                Rectangle::new(
                    [(x + 0.003, 0.0), (x + 0.047, f64::from(*c))],
                    BLUE.mix(0.6).filled(),
                )
            },
        ));
        if let Ok(series) = chart.draw_series(LineSeries::new(
            [(tau, 0.0), (tau, f64::from(top) * 1.1)],
            RED.stroke_width(2),
        )) {
            series
                .label(format!("tau = {tau:.3}"))
                .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], RED.stroke_width(2)));
        }
        let _ = chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .draw();
        let _ = root.present();
    }
    svg
}

/// Rigorous and Lax counts across the sweep's cutoffs.
fn sweep_chart(rows: &[results::SweepRow]) -> String {
    let top = rows
        .iter()
        .map(|r| r.rigorous.max(r.lax))
        .max()
        .unwrap_or(0)
        .max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 360)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption("Cutoff sensitivity", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(48)
            .build_cartesian_2d(0f64..0.55f64, 0f64..f64::from(top) * 1.15)
        else {
            return String::new();
        };
        let _ = chart.configure_mesh().x_desc("tau").y_desc("tests").draw();
        for (name, colour, pick) in [
            (
                "rigorous",
                COLOURS[0],
                (|r: &results::SweepRow| r.rigorous) as fn(&results::SweepRow) -> u32,
            ),
            ("lax", COLOURS[1], |r: &results::SweepRow| r.lax),
        ] {
            let points: Vec<(f64, f64)> =
                rows.iter().map(|r| (r.tau, f64::from(pick(r)))).collect();
            if let Ok(series) =
                chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
            {
                series.label(name).legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 14, y)], colour.stroke_width(2))
                });
            }
            let _ = chart.draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, colour.filled())),
            );
        }
        let _ = chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .draw();
        let _ = root.present();
    }
    svg
}

fn page(
    pairs: &[Pair],
    summary: &Value,
    tau: f64,
    generators: &BTreeMap<&str, Vec<&Pair>>,
) -> String {
    let rows: Vec<results::SweepRow> =
        serde_json::from_value(summary["sweep"].clone()).unwrap_or_default();
    let mut table = String::from("<table><tr><th>generator</th><th>pairs</th>");
    for c in Class::ALL {
        table.push_str(&format!("<th>{}</th>", c.name()));
    }
    table.push_str("</tr>");
    for (g, ps) in generators {
        let c = results::counts(ps, tau);
        table.push_str(&format!("<tr><td>{}</td><td>{}</td>", escape(g), ps.len()));
        for k in Class::ALL {
            table.push_str(&format!("<td>{}</td>", c[k.name()]));
        }
        table.push_str("</tr>");
    }
    table.push_str("</table>");
    let mut sweep = String::from(
        "<table><tr><th>tau</th><th>rigorous</th><th>lax</th><th>misaligned</th></tr>",
    );
    for r in &rows {
        sweep.push_str(&format!(
            "<tr><td>{:.3}{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.tau,
            if r.label.is_some() { " (median)" } else { "" },
            r.rigorous,
            r.lax,
            r.misaligned
        ));
    }
    sweep.push_str("</table>");
    let operators = summary["operators"].as_str().unwrap_or_default();
    let label = if operators == "deterministic" {
        " <strong>(deterministic operators: no model; not the paper's pool)</strong>"
    } else {
        ""
    };
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Mutation Patch Evaluation</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; max-width: 1200px; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 4px 10px; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
figure {{ display: inline-block; margin: 0 1em 1em 0; }}
</style></head><body>
<h1>Mutation Patch Evaluation</h1>
<p>{pairs} pairs (instance × generator); pool from <code>{operators}</code>{label};
tau = {tau:.3} ({choice}); median laxity of F-&gt;P tests: {median}.</p>
{table}
<figure id="classes">{bars}</figure>
<figure id="laxity">{hist}</figure>
<figure id="sweep">{sweep_svg}</figure>
<h2>Cutoff sweep</h2>
{sweep}
<p>Rigorous: F-&gt;P and laxity &lt; tau. Lax: F-&gt;P and laxity ≥ tau. Misaligned: not F-&gt;P. No test: the prediction adds no test to run.
harness_error: a run of the generated test said nothing (excluded). no_pool: no admissible variant.
error: not evaluated (see results.jsonl).</p>
</body></html>
"#,
        pairs = pairs.len(),
        choice = escape(summary["tau_choice"].as_str().unwrap_or_default()),
        median = summary["median_laxity"]
            .as_f64()
            .map_or("none".to_string(), |m| format!("{m:.3}")),
        bars = class_bars(generators, tau),
        hist = histogram(pairs, tau),
        sweep_svg = sweep_chart(&rows),
    )
}
