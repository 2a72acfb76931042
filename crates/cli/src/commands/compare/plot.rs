//! `--plot FILE.svg`: quality against diversity, one point per pipeline — distinct-2 across,
//! perplexity under the raw model up (lower is closer to what the model itself prefers).

use std::path::Path;

use plotters::prelude::*;

use super::PipelineReport;

/// Draws the reports into an SVG file at `path`.
///
/// # Errors
/// When the file cannot be written.
pub fn write(path: &Path, reports: &[PipelineReport]) -> anyhow::Result<()> {
    let xs: Vec<f64> = reports.iter().map(|r| r.distinct_2).collect();
    let ys: Vec<f64> = reports
        .iter()
        .map(|r| r.perplexity.unwrap_or(f64::NAN))
        .collect();
    let (x_min, x_max) = padded_span(&xs, 0.0, 1.0);
    let (y_min, y_max) = padded_span(&ys, 0.0, 1.0);
    let root = SVGBackend::new(path, (800, 560)).into_drawing_area();
    let draw = |e: DrawingAreaErrorKind<std::io::Error>| {
        anyhow::anyhow!("drawing {}: {e}", path.display())
    };
    root.fill(&WHITE).map_err(draw)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("quality against diversity", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x_min..x_max, y_min..y_max)
        .map_err(draw)?;
    chart
        .configure_mesh()
        .x_desc("distinct-2 (more diverse →)")
        .y_desc("perplexity under the raw model (↓ closer to the model)")
        .draw()
        .map_err(draw)?;
    let palette = [&BLUE, &RED, &GREEN, &MAGENTA, &CYAN, &BLACK];
    for (i, (report, (&x, &y))) in reports.iter().zip(xs.iter().zip(&ys)).enumerate() {
        if !y.is_finite() {
            continue;
        }
        let color = palette[i % palette.len()];
        chart
            .draw_series(std::iter::once(Circle::new((x, y), 6, color.filled())))
            .map_err(draw)?
            .label(label(&report.sampler))
            .legend(move |(lx, ly)| Circle::new((lx, ly), 5, color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(draw)?;
    root.present().map_err(draw)?;
    Ok(())
}

/// The span of the finite `values` with 10 % padding on each side; `(lo, hi)` when there is
/// none, and a unit span around a single value.
fn padded_span(values: &[f64], lo: f64, hi: f64) -> (f64, f64) {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let (Some(min), Some(max)) = (
        finite.iter().copied().reduce(f64::min),
        finite.iter().copied().reduce(f64::max),
    ) else {
        return (lo, hi);
    };
    let pad = if max > min { (max - min) * 0.1 } else { 0.5 };
    (min - pad, max + pad)
}

/// A legend label: the pipeline text, cut to 60 characters.
fn label(sampler: &str) -> String {
    let mut text: String = sampler.chars().take(60).collect();
    if sampler.chars().count() > 60 {
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_pad_and_fall_back() {
        assert_eq!(padded_span(&[1.0, 3.0], 0.0, 1.0), (0.8, 3.2));
        assert_eq!(padded_span(&[2.0], 0.0, 1.0), (1.5, 2.5));
        assert_eq!(padded_span(&[f64::NAN], 0.0, 1.0), (0.0, 1.0));
        assert_eq!(label("a".repeat(61).as_str()).chars().count(), 61);
    }
}
