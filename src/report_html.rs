//! What the host's HTML reports (an experiment's, `critic mpe`'s) share:
//! escaping, the type size of their charts, a label per bar, and legends
//! drawn beneath a chart as HTML, where they cover nothing.

use plotters::style::RGBColor;

/// `text` safe inside HTML text and quoted attribute values.
pub(crate) fn escape(text: &str) -> String {
    html_escape::encode_quoted_attribute(text).into_owned()
}

// plotters draws a font of size s at s / 1.24 px: about 22 px and 16 px.
/// A chart's caption.
pub(crate) const CAPTION: (&str, u32) = ("sans-serif", 27);
/// A chart's axis labels and descriptions.
pub(crate) const LABELS: (&str, u32) = ("sans-serif", 20);

/// The label at `x` of a bar chart whose bar i spans [i, i + 1]: the
/// bar's name at its middle, nothing elsewhere (plotters asks at every
/// half step).
pub(crate) fn bar_label(names: &[String], x: f64) -> String {
    if (x - x.floor() - 0.5).abs() < 1e-9 {
        names.get(x.floor() as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// Names beside their colours, as a `figcaption`.
pub(crate) fn legend(keys: &[(String, RGBColor)]) -> String {
    let items: Vec<String> = keys
        .iter()
        .map(|(name, RGBColor(r, g, b))| {
            format!(
                "<span class=\"key\"><span class=\"swatch\" style=\"background:rgb({r},{g},{b})\">\
                 </span>{}</span>",
                escape(name)
            )
        })
        .collect();
    format!("<figcaption>{}</figcaption>", items.join(" "))
}
