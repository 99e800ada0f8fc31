//! The figure of `shoal scale`: learning against episodes per worker for
//! each worker count, the time to the target on as many cores as workers,
//! and the efficiency that time gives, seed by seed.

use std::path::Path;

use shoal_rl_core::Result;

use super::draw::{Figure, Line, Panel, Weight, render};
use super::series::{Points, seed_band, thin_stride};
use crate::canvas::register_embedded_font;

/// Most points drawn per curve.
const MAX_POINTS: usize = 400;

/// One worker count's evaluation curves, one per seed, against episodes
/// per worker.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalingCurves {
    /// Workers of these runs.
    pub workers: usize,
    /// `(episodes per worker, evaluation score)` of each seed's run.
    pub curves: Vec<Vec<(f64, f64)>>,
}

/// One worker count's time to the target, in seconds (medians over seeds),
/// and its efficiency seed by seed.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalingPoint {
    /// Workers.
    pub workers: usize,
    /// Projected onto one core per worker; `None` if no run reached the target.
    pub projected_s: Option<f64>,
    /// As measured on the machine that trained the runs.
    pub measured_s: Option<f64>,
    /// `(T_base · base workers) / (T_N · N)` of each seed that reached the
    /// target at both worker counts (1 is linear scaling).
    pub efficiency_by_seed: Vec<f64>,
}

/// Draws the scaling figure to `path` (PNG, written atomically): the
/// evaluation score (`y_desc`) against episodes per worker, mean and
/// min–max over seeds for each worker count; the time to the target
/// against workers, projected and measured, beside the ideal T₁ / N; and
/// the efficiency against workers, median and min–max over seeds.
///
/// ```
/// use shoal_rl_eval::{ScalingCurves, ScalingPoint, plot_scaling};
/// let path = std::env::temp_dir().join(format!("shoal-doc-scale-{}.png", std::process::id()));
/// let curves = [1usize, 2].map(|workers| ScalingCurves {
///     workers,
///     curves: vec![vec![(0.0, 0.0), (100.0, 0.5 * workers as f64)]; 2],
/// });
/// let points = [
///     ScalingPoint {
///         workers: 1,
///         projected_s: Some(100.0),
///         measured_s: Some(104.0),
///         efficiency_by_seed: vec![1.0, 1.0],
///     },
///     ScalingPoint {
///         workers: 2,
///         projected_s: Some(55.0),
///         measured_s: None,
///         efficiency_by_seed: vec![0.8, 0.95],
///     },
/// ];
/// plot_scaling(&curves, "eval success rate", &points, &path).unwrap();
/// assert!(std::fs::metadata(&path).unwrap().len() > 0);
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn plot_scaling(
    curves: &[ScalingCurves],
    y_desc: &str,
    points: &[ScalingPoint],
    path: &Path,
) -> Result<()> {
    let mut learning = Panel {
        title: format!("{y_desc} against episodes per worker (mean, min–max over seeds)"),
        x_desc: "episodes per worker".into(),
        y_desc: y_desc.into(),
        y_range: None,
        lines: Vec::new(),
        bands: Vec::new(),
    };
    for (color, group) in curves.iter().enumerate() {
        let label = format!(
            "{} worker{} ({} seed{})",
            group.workers,
            if group.workers == 1 { "" } else { "s" },
            group.curves.len(),
            if group.curves.len() == 1 { "" } else { "s" }
        );
        match seed_band(&group.curves, MAX_POINTS) {
            Some(band) => {
                learning.bands.push(super::draw::Band {
                    lower: band.lower,
                    upper: band.upper,
                    color,
                });
                learning.lines.push(bold(band.mean, color, label));
            }
            None => {
                for curve in group.curves.iter().filter(|c| !c.is_empty()) {
                    learning
                        .lines
                        .push(bold(thin_stride(curve, MAX_POINTS), color, label.clone()));
                }
            }
        }
    }
    let mut time = Panel {
        title: "time to the target with one core per worker".into(),
        x_desc: "workers".into(),
        y_desc: "seconds".into(),
        y_range: None,
        lines: Vec::new(),
        bands: Vec::new(),
    };
    let series = |value: fn(&ScalingPoint) -> Option<f64>| -> Points {
        points
            .iter()
            .filter_map(|p| Some((p.workers as f64, value(p)?)))
            .collect()
    };
    let projected = series(|p| p.projected_s);
    if let Some(&(first_workers, first_s)) = projected.first() {
        let ideal = points
            .iter()
            .map(|p| (p.workers as f64, first_s * first_workers / p.workers as f64))
            .collect();
        time.lines.push(Line {
            points: ideal,
            color: 7,
            weight: Weight::Member,
            label: Some(format!("ideal: T({first_workers}) × {first_workers} / N")),
            markers: false,
        });
    }
    time.lines.push(Line {
        markers: true,
        ..bold(projected, 0, "projected from the profiles".into())
    });
    let measured = series(|p| p.measured_s);
    if !measured.is_empty() {
        time.lines.push(Line {
            markers: true,
            ..bold(measured, 3, "measured on the training machine".into())
        });
    }
    time.lines.retain(|line| !line.points.is_empty());
    register_embedded_font()?;
    let figure = Figure {
        title: "scaling".into(),
        panels: vec![learning, time, efficiency_panel(points)],
    };
    render(&figure, path)
}

/// Efficiency against workers: the median over seeds, their min–max as a
/// band, and linear scaling (1) for reference.
fn efficiency_panel(points: &[ScalingPoint]) -> Panel {
    let mut median = Points::new();
    let (mut lower, mut upper) = (Points::new(), Points::new());
    for point in points {
        let mut seeds = point.efficiency_by_seed.clone();
        seeds.retain(|e| e.is_finite());
        seeds.sort_by(f64::total_cmp);
        let (Some(&low), Some(&high), Some(middle)) =
            (seeds.first(), seeds.last(), crate::median(&seeds))
        else {
            continue;
        };
        let x = point.workers as f64;
        median.push((x, middle));
        lower.push((x, low));
        upper.push((x, high));
    }
    let mut panel = Panel {
        title: "efficiency to the target (median, min–max over seeds)".into(),
        x_desc: "workers".into(),
        y_desc: "(T_base × base workers) / (T_N × N)".into(),
        y_range: None,
        lines: Vec::new(),
        bands: Vec::new(),
    };
    if median.is_empty() {
        return panel;
    }
    let linear = points.iter().map(|p| (p.workers as f64, 1.0)).collect();
    panel.lines.push(Line {
        points: linear,
        color: 7,
        weight: Weight::Member,
        label: Some("linear scaling".into()),
        markers: false,
    });
    panel.bands.push(super::draw::Band {
        lower,
        upper,
        color: 0,
    });
    panel.lines.push(Line {
        markers: true,
        ..bold(median, 0, "projected, median over seeds".into())
    });
    panel
}

fn bold(points: Points, color: usize, label: String) -> Line {
    Line {
        points,
        color,
        weight: Weight::Bold,
        label: Some(label),
        markers: false,
    }
}
