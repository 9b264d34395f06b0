//! A run's written results: `results.jsonl` (one record per pair, classed
//! under the run's tau), `summary.json` (tau, counts overall and per
//! generator and per model, the sweep) and `report.html`, one
//! self-contained page whose charts plotters draws as inline SVG, their
//! legends beneath them.

use crate::mpe::pool::Source;
use crate::mpe::results::{self, Class, Pair, Tau};
use crate::mpe::store::{Store, StoreError};
use crate::report_html::{bar_label, escape, legend, CAPTION, LABELS};
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
    let numbers = |ps: &[&Pair]| {
        let lax: Vec<f64> = ps.iter().filter_map(|p| p.laxity).collect();
        json!({
            "pairs": ps.len(),
            "counts": results::counts(ps, t),
            "median_laxity": results::median(&lax),
        })
    };
    let per_generator: BTreeMap<&str, Value> =
        generators.iter().map(|(g, ps)| (*g, numbers(ps))).collect();
    let models = by_model(&generators);
    let per_model: BTreeMap<&str, Value> = models
        .iter()
        .map(|(m, samples)| {
            let ps: Vec<&Pair> = samples.values().flatten().copied().collect();
            let mut entry = numbers(&ps);
            entry["samples"] = json!(samples
                .iter()
                .filter_map(|(s, ps)| s.map(|(_, name)| (name.to_string(), numbers(ps))))
                .collect::<serde_json::Map<String, Value>>());
            (*m, entry)
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
        "per_model": per_model,
        "sweep": results::sweep(&all, median),
    });
    store.write(
        Path::new("summary.json"),
        serde_json::to_string_pretty(&summary)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    let html = page(pairs, &summary, t, &models);
    store.write(Path::new("report.html"), html.as_bytes())?;
    Ok(summary)
}

/// A generator's model and sample: `critic experiment` names its samples
/// `<experiment>/<arm>/<n>`, so a name ending in `/<digits>` is sample n of
/// the model named before it. Samples sort by number; `01` and `1` stay
/// apart.
fn model_and_sample(generator: &str) -> (&str, Option<Sample<'_>>) {
    match generator.rsplit_once('/') {
        Some((model, n)) if !model.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            match n.parse() {
                Ok(number) => (model, Some((number, n))),
                Err(_) => (generator, None),
            }
        }
        _ => (generator, None),
    }
}

/// A sample's number, and its name as written.
type Sample<'a> = (u64, &'a str);

/// Pairs by model, then by sample (`None`: a generator that names no sample).
type ByModel<'a> = BTreeMap<&'a str, BTreeMap<Option<Sample<'a>>, Vec<&'a Pair>>>;

fn by_model<'a>(generators: &BTreeMap<&'a str, Vec<&'a Pair>>) -> ByModel<'a> {
    let mut models: ByModel = BTreeMap::new();
    for (g, ps) in generators {
        let (model, sample) = model_and_sample(g);
        models
            .entry(model)
            .or_default()
            .entry(sample)
            .or_default()
            .extend(ps.iter().copied());
    }
    models
}

/// The histogram's bars.
const HISTOGRAM: RGBColor = RGBColor(102, 102, 255);

/// The stacked class bars, one per model (its samples together).
fn class_bars(models: &ByModel, tau: f64) -> String {
    let names: Vec<&str> = models.keys().copied().collect();
    let counts: Vec<BTreeMap<&str, u32>> = models
        .values()
        .map(|samples| {
            let ps: Vec<&Pair> = samples.values().flatten().copied().collect();
            results::counts(&ps, tau)
        })
        .collect();
    let top = counts
        .iter()
        .map(|c| c.values().sum::<u32>())
        .max()
        .unwrap_or(0)
        .max(1);
    let mut svg = String::new();
    {
        let width = (180 + 130 * names.len() as u32).clamp(520, 1300);
        let root = SVGBackend::with_string(&mut svg, (width, 400)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let n = names.len().max(1) as f64;
        let chart = ChartBuilder::on(&root)
            .caption("Classes per model", CAPTION)
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(72)
            .build_cartesian_2d(0f64..n, 0f64..f64::from(top) * 1.05);
        let Ok(mut chart) = chart else {
            return String::new();
        };
        let labels: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let label = |x: &f64| bar_label(&labels, *x);
        let _ = chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(names.len() * 2 + 1)
            .x_label_formatter(&label)
            .label_style(LABELS)
            .y_desc("pairs")
            .axis_desc_style(LABELS)
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
            let _ = chart.draw_series(bars);
        }
        let _ = root.present();
    }
    let keys: Vec<(String, RGBColor)> = Class::ALL
        .iter()
        .zip(COLOURS)
        .map(|(c, colour)| (c.name().to_string(), colour))
        .collect();
    format!("{svg}{}", legend(&keys))
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
        let root = SVGBackend::with_string(&mut svg, (660, 400)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption("Laxity rate of F->P tests", CAPTION)
            .margin(14)
            .x_label_area_size(56)
            .y_label_area_size(72)
            .build_cartesian_2d(0f64..1f64, 0f64..f64::from(top) * 1.15)
        else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .label_style(LABELS)
            .x_desc("laxity rate (beta / total)")
            .y_desc("tests")
            .axis_desc_style(LABELS)
            .draw();
        let _ = chart.draw_series(bins.iter().enumerate().filter(|(_, c)| **c > 0).map(
            |(i, c)| {
                let x = i as f64 / 20.0;
                Rectangle::new(
                    [(x + 0.003, 0.0), (x + 0.047, f64::from(*c))],
                    HISTOGRAM.filled(),
                )
            },
        ));
        let _ = chart.draw_series(LineSeries::new(
            [(tau, 0.0), (tau, f64::from(top) * 1.1)],
            RED.stroke_width(2),
        ));
        let _ = root.present();
    }
    format!(
        "{svg}{}",
        legend(&[
            ("F->P tests".into(), HISTOGRAM),
            (format!("tau = {tau:.3}"), RED)
        ])
    )
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
        let root = SVGBackend::with_string(&mut svg, (660, 400)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption("Cutoff sensitivity", CAPTION)
            .margin(14)
            .x_label_area_size(56)
            .y_label_area_size(72)
            .build_cartesian_2d(0f64..0.55f64, 0f64..f64::from(top) * 1.15)
        else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .label_style(LABELS)
            .x_desc("tau")
            .y_desc("tests")
            .axis_desc_style(LABELS)
            .draw();
        for (colour, pick) in [
            (
                COLOURS[0],
                (|r: &results::SweepRow| r.rigorous) as fn(&results::SweepRow) -> u32,
            ),
            (COLOURS[1], |r: &results::SweepRow| r.lax),
        ] {
            let points: Vec<(f64, f64)> =
                rows.iter().map(|r| (r.tau, f64::from(pick(r)))).collect();
            let _ = chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(3)));
            let _ = chart.draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 4, colour.filled())),
            );
        }
        let _ = root.present();
    }
    format!(
        "{svg}{}",
        legend(&[("rigorous".into(), COLOURS[0]), ("lax".into(), COLOURS[1])])
    )
}

fn page(pairs: &[Pair], summary: &Value, tau: f64, models: &ByModel) -> String {
    let rows: Vec<results::SweepRow> =
        serde_json::from_value(summary["sweep"].clone()).unwrap_or_default();
    let mut table = String::from("<table id=\"models\"><tr><th>model</th><th>pairs</th>");
    for c in Class::ALL {
        table.push_str(&format!("<th>{}</th>", c.name()));
    }
    table.push_str("</tr>");
    let row = |label: String, class: &str, ps: &[&Pair]| {
        let c = results::counts(ps, tau);
        let mut row = format!(
            "<tr class=\"{class}\"><td>{label}</td><td>{}</td>",
            ps.len()
        );
        for k in Class::ALL {
            row.push_str(&format!("<td>{}</td>", c[k.name()]));
        }
        row.push_str("</tr>");
        row
    };
    for (model, samples) in models {
        let all: Vec<&Pair> = samples.values().flatten().copied().collect();
        table.push_str(&row(escape(model), "model", &all));
        if samples.keys().any(Option::is_some) {
            for (sample, ps) in samples {
                let label = match sample {
                    Some((_, n)) => format!("sample {}", escape(n)),
                    None => "no sample".into(),
                };
                table.push_str(&row(label, "sample", ps));
            }
        }
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
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>Mutation Patch Evaluation</title>
<style>
:root {{ font-size: 16px; }}
body {{ font-family: system-ui, sans-serif; line-height: 1.45; margin: 1.5em auto; padding: 0 1.5em;
  color: #1b1b1b; max-width: 1360px; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.95rem; }}
th, td {{ border: 1px solid #ccc; padding: 4px 10px; text-align: right; }}
th {{ background: #f2f2f2; }}
th:first-child, td:first-child {{ text-align: left; white-space: nowrap; }}
tr.model td {{ font-weight: bold; }}
tr.sample td:first-child {{ padding-left: 2em; color: #444; }}
figure {{ display: inline-block; margin: 0 1.2em 1.2em 0; vertical-align: top; max-width: 100%; }}
figure svg {{ max-width: 100%; height: auto; }}
figcaption {{ font-size: 0.95rem; margin-top: 0.3em; }}
.key {{ margin-right: 1.2em; white-space: nowrap; }}
.swatch {{ display: inline-block; width: 1em; height: 1em; vertical-align: middle; margin-right: 0.4em; }}
</style></head><body>
<h1>Mutation Patch Evaluation</h1>
<p>{pairs} pairs (instance × generator, a generator named <code>MODEL/N</code> being
sample N of MODEL); pool from <code>{operators}</code>{label};
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
        bars = class_bars(models, tau),
        hist = histogram(pairs, tau),
        sweep_svg = sweep_chart(&rows),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpe::results::{Excluded, F2p, Status};

    fn pair(instance: &str, generator: &str, laxity: f64) -> Pair {
        Pair {
            instance_id: instance.into(),
            model_name_or_path: generator.into(),
            params: String::new(),
            operators: "model".into(),
            status: Status::Rated,
            f2p: Some(F2p {
                fails_on_buggy: true,
                passes_on_golden: true,
            }),
            misaligned_reason: None,
            reason: None,
            matrix: None,
            laxity: Some(laxity),
            excluded: Excluded::default(),
            pool: BTreeMap::new(),
            test_files: Vec::new(),
            ignored_files: Vec::new(),
        }
    }

    #[test]
    fn a_generator_ending_in_a_number_is_a_sample_of_its_model() {
        assert_eq!(model_and_sample("exp/arm/0"), ("exp/arm", Some((0, "0"))));
        assert_eq!(
            model_and_sample("exp/arm/12"),
            ("exp/arm", Some((12, "12")))
        );
        assert_eq!(model_and_sample("exp/arm/01"), ("exp/arm", Some((1, "01"))));
        for whole in [
            "gpt-4",
            "org/model",
            "/3",
            "m/",
            "m/1x",
            "m/99999999999999999999999",
        ] {
            assert_eq!(model_and_sample(whole), (whole, None), "{whole}");
        }
    }

    #[test]
    fn samples_are_grouped_under_their_model_in_the_table_and_the_bars() {
        let pairs = vec![
            pair("a", "exp/brt/0", 0.0),
            pair("a", "exp/brt/1", 0.5),
            pair("b", "exp/brt/10", 0.5),
            pair("b", "exp/brt/2", 0.0),
            pair("a", "other", 0.0),
        ];
        let mut generators: BTreeMap<&str, Vec<&Pair>> = BTreeMap::new();
        for p in &pairs {
            generators.entry(&p.model_name_or_path).or_default().push(p);
        }
        let models = by_model(&generators);
        assert_eq!(
            models.keys().copied().collect::<Vec<_>>(),
            ["exp/brt", "other"]
        );
        let samples: Vec<Option<u64>> = models["exp/brt"].keys().map(|s| s.map(|s| s.0)).collect();
        assert_eq!(
            samples,
            [Some(0), Some(1), Some(2), Some(10)],
            "in number order"
        );
        let html = page(&pairs, &json!({"sweep": []}), 0.25, &models);
        let rows: Vec<&str> = html
            .split("<tr class=\"")
            .skip(1)
            .map(|r| &r[..r.find("</td>").unwrap()])
            .collect();
        assert_eq!(
            rows,
            [
                "model\"><td>exp/brt",
                "sample\"><td>sample 0",
                "sample\"><td>sample 1",
                "sample\"><td>sample 2",
                "sample\"><td>sample 10",
                "model\"><td>other",
            ]
        );
        // Two bars (one per model), and the legend outside the drawing.
        let bars = class_bars(&models, 0.25);
        assert!(bars.contains("<figcaption>"), "{bars}");
        let svg = &bars[..bars.find("</svg>").unwrap()];
        assert!(!svg.contains(">rigorous<"), "no legend inside the drawing");
    }
}
