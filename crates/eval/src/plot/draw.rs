//! Rendering figure descriptions to PNG with plotters' bitmap backend.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use shoal_rl_core::{Error, Result};

use super::series::Points;
use crate::canvas::png_bytes;
use crate::fsio::atomic_write;

/// Width of every figure, in pixels.
pub const PLOT_WIDTH: u32 = 1000;
/// Height of a one-panel figure, in pixels.
pub const PLOT_HEIGHT: u32 = 600;
/// Height of each panel of a figure with several panels, in pixels.
pub const PANEL_HEIGHT: u32 = 360;

/// Matplotlib's "tab10" colours: distinct, and familiar to RL readers.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// How prominently a line is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Weight {
    /// Raw noisy data behind its smoothed version.
    Faint,
    /// One seed of a group whose mean is drawn bold.
    Member,
    /// The curve the reader should look at.
    Bold,
}

/// One polyline of a panel.
#[derive(Clone, Debug)]
pub(crate) struct Line {
    pub points: Points,
    pub color: usize,
    pub weight: Weight,
    pub label: Option<String>,
    /// Dots at the data points, for sparse curves such as evaluations.
    pub markers: bool,
}

/// A shaded region between two curves sampled at the same `x` values.
#[derive(Clone, Debug)]
pub(crate) struct Band {
    pub lower: Points,
    pub upper: Points,
    pub color: usize,
}

/// One chart: axes, curves, shaded bands.
#[derive(Clone, Debug)]
pub(crate) struct Panel {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    /// Fixed `y` range (e.g. 0–1 for rates); otherwise fitted to the data.
    pub y_range: Option<(f64, f64)>,
    pub lines: Vec<Line>,
    pub bands: Vec<Band>,
}

/// Panels stacked vertically under a common title.
#[derive(Clone, Debug)]
pub(crate) struct Figure {
    pub title: String,
    pub panels: Vec<Panel>,
}

/// Pixel size of a figure with `panels` panels.
pub(crate) fn figure_size(panels: usize) -> (u32, u32) {
    match panels {
        0 | 1 => (PLOT_WIDTH, PLOT_HEIGHT),
        n => (PLOT_WIDTH, PANEL_HEIGHT * n as u32),
    }
}

/// Renders `figure` to a PNG at `path`, drawn in memory and written with
/// [`atomic_write`], so a reader never sees half a picture.
pub(crate) fn render(figure: &Figure, path: &Path) -> Result<()> {
    let (width, height) = figure_size(figure.panels.len());
    let mut rgb = vec![0u8; width as usize * height as usize * 3];
    draw_figure(figure, &mut rgb, (width, height))
        .map_err(|e| Error::file(path, format!("could not draw plot: {e}")))?;
    let png = png_bytes(width, height, &rgb)
        .map_err(|e| Error::file(path, format!("could not encode plot: {e}")))?;
    atomic_write(path, &png)
}

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

fn draw_figure(figure: &Figure, rgb: &mut [u8], size: (u32, u32)) -> DrawResult {
    let root = BitMapBackend::with_buffer(rgb, size).into_drawing_area();
    root.fill(&WHITE)?;
    let body = root.titled(&figure.title, ("sans-serif", 24))?;
    let areas = body.split_evenly((figure.panels.len().max(1), 1));
    for (area, panel) in areas.iter().zip(&figure.panels) {
        draw_panel(area, panel)?;
    }
    root.present()?;
    Ok(())
}

fn draw_panel(area: &DrawingArea<BitMapBackend<'_>, Shift>, panel: &Panel) -> DrawResult {
    let ((x0, x1), (y0, y1)) = bounds(panel);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 18))
        .margin(12)
        // Room for the last x tick label, which is centred on the right edge.
        .margin_right(32)
        .x_label_area_size(44)
        .y_label_area_size(76)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .x_desc(panel.x_desc.as_str())
        .y_desc(panel.y_desc.as_str())
        .x_label_formatter(&|x| format_tick(*x))
        .y_label_formatter(&|y| format_tick(*y))
        .max_light_lines(4)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .bold_line_style(RGBColor(214, 214, 214))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()?;

    for band in &panel.bands {
        let mut outline = band.upper.clone();
        outline.extend(band.lower.iter().rev());
        let fill = color(band.color).mix(0.2).filled();
        chart.draw_series(std::iter::once(Polygon::new(outline, fill)))?;
    }
    let mut has_legend = false;
    for line in &panel.lines {
        let base = color(line.color);
        let style = match line.weight {
            Weight::Faint => base.mix(0.25).stroke_width(1),
            Weight::Member => base.mix(0.5).stroke_width(1),
            Weight::Bold => base.stroke_width(2),
        };
        let series = chart.draw_series(LineSeries::new(line.points.iter().copied(), style))?;
        if let Some(label) = &line.label {
            series.label(label.as_str()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], base.stroke_width(3))
            });
            has_legend = true;
        }
        if line.markers {
            let dots = line
                .points
                .iter()
                .map(|&p| Circle::new(p, 3, base.filled()));
            chart.draw_series(dots)?;
        }
    }
    if has_legend {
        let position = emptiest_corner(panel, ((x0, x1), (y0, y1)));
        chart
            .configure_series_labels()
            .position(position)
            .margin(12)
            .label_font(("sans-serif", 14))
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(190, 190, 190))
            .draw()?;
    }
    Ok(())
}

/// The corner whose quarter-sized box holds the fewest data points, so the
/// legend hides as little as possible.
fn emptiest_corner(
    panel: &Panel,
    ((x0, x1), (y0, y1)): ((f64, f64), (f64, f64)),
) -> SeriesLabelPosition {
    let mut counts = [0usize; 4];
    let points = panel.lines.iter().flat_map(|line| line.points.iter());
    for &(x, y) in points {
        let u = (x - x0) / (x1 - x0);
        let v = (y - y0) / (y1 - y0);
        let left = u < 0.45;
        let right = u > 0.55;
        let top = v > 0.65;
        let bottom = v < 0.35;
        counts[0] += usize::from(top && left);
        counts[1] += usize::from(top && right);
        counts[2] += usize::from(bottom && right);
        counts[3] += usize::from(bottom && left);
    }
    let corners = [
        SeriesLabelPosition::UpperLeft,
        SeriesLabelPosition::UpperRight,
        SeriesLabelPosition::LowerRight,
        SeriesLabelPosition::LowerLeft,
    ];
    // Ties go to the earlier corner: upper left is where readers look first.
    let best = (0..4).min_by_key(|&i| counts[i]).unwrap_or(0);
    corners[best].clone()
}

/// Tick labels without spurious decimals: `50`, `0.25`, `1.5e-4`, `2.00e6`.
fn format_tick(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude == 0.0 {
        "0".to_string()
    } else if magnitude >= 1e6 {
        format!("{value:.2e}")
    } else if magnitude < 1e-3 {
        format!("{value:.1e}")
    } else if (value - value.round()).abs() < 1e-9 * magnitude.max(1.0) {
        format!("{value:.0}")
    } else {
        let text = format!("{value:.4}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// Axis ranges covering every point, padded by 4% (or by 1 when flat).
fn bounds(panel: &Panel) -> ((f64, f64), (f64, f64)) {
    let points = panel
        .lines
        .iter()
        .flat_map(|line| line.points.iter())
        .chain(
            panel
                .bands
                .iter()
                .flat_map(|band| band.lower.iter().chain(&band.upper)),
        );
    let (mut x_min, mut x_max, mut y_min, mut y_max) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for &(x, y) in points {
        x_min = x_min.min(x);
        x_max = x_max.max(x);
        y_min = y_min.min(y);
        y_max = y_max.max(y);
    }
    let pad = |lo: f64, hi: f64, fraction: f64| {
        if !lo.is_finite() || !hi.is_finite() {
            (0.0, 1.0)
        } else if hi - lo <= f64::EPSILON * lo.abs().max(1.0) {
            (lo - 1.0, hi + 1.0)
        } else {
            let margin = (hi - lo) * fraction;
            (lo - margin, hi + margin)
        }
    };
    let (x_lo, x_hi) = pad(x_min, x_max, 0.0);
    let y = panel.y_range.unwrap_or_else(|| pad(y_min, y_max, 0.04));
    ((x_lo, x_hi), y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_drop_spurious_decimals() {
        assert_eq!(format_tick(50.0), "50");
        assert_eq!(format_tick(-0.0), "0");
        assert_eq!(format_tick(0.30000000000000004), "0.3");
        assert_eq!(format_tick(-12.5), "-12.5");
        assert_eq!(format_tick(0.00015), "1.5e-4");
        assert_eq!(format_tick(2_500_000.0), "2.50e6");
    }

    #[test]
    fn legend_avoids_the_corner_the_curve_passes_through() {
        let rising: Points = (0..=100).map(|i| (i as f64, i as f64)).collect();
        let panel = Panel {
            title: String::new(),
            x_desc: String::new(),
            y_desc: String::new(),
            y_range: None,
            lines: vec![Line {
                points: rising,
                color: 0,
                weight: Weight::Bold,
                label: None,
                markers: false,
            }],
            bands: Vec::new(),
        };
        let corner = emptiest_corner(&panel, bounds(&panel));
        assert!(matches!(corner, SeriesLabelPosition::UpperLeft));
        let mut falling = panel.clone();
        falling.lines[0]
            .points
            .iter_mut()
            .for_each(|p| p.1 = 100.0 - p.1);
        let corner = emptiest_corner(&falling, bounds(&falling));
        assert!(matches!(corner, SeriesLabelPosition::UpperRight));
    }
}
