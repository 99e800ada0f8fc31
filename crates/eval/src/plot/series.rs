//! Numeric helpers for curves: extraction from records, smoothing, thinning, seed bands.

use serde_json::Value;

/// A curve: `(x, y)` points in record order.
pub(crate) type Points = Vec<(f64, f64)>;

/// Points `(record[x_key], record[y_key])` of every record holding both as
/// finite numbers (a `null` from a NaN loss is skipped).
pub(crate) fn extract(records: &[Value], x_key: &str, y_key: &str) -> Points {
    records
        .iter()
        .filter_map(|record| {
            let x = record.get(x_key)?.as_f64()?;
            let y = record.get(y_key)?.as_f64()?;
            (x.is_finite() && y.is_finite()).then_some((x, y))
        })
        .collect()
}

/// Smoothing window for a curve of `len` points: about a twentieth of it,
/// between 1 and 500.
pub(crate) fn smoothing_window(len: usize) -> usize {
    (len / 20).clamp(1, 500)
}

/// Trailing moving average over `window` points (fewer at the start).
pub(crate) fn moving_average(points: &[(f64, f64)], window: usize) -> Points {
    let window = window.max(1);
    let mut sum = 0.0;
    let mut out = Vec::with_capacity(points.len());
    for (i, &(x, y)) in points.iter().enumerate() {
        sum += y;
        if i >= window {
            sum -= points[i - window].1;
        }
        out.push((x, sum / (i + 1).min(window) as f64));
    }
    out
}

/// At most about `max_points` points that keep the visual envelope of a
/// noisy curve: each bucket contributes its lowest and highest point.
pub(crate) fn thin_envelope(points: &[(f64, f64)], max_points: usize) -> Points {
    if points.len() <= max_points {
        return points.to_vec();
    }
    let bucket = points.len().div_ceil((max_points / 2).max(1));
    let mut out = Vec::with_capacity(max_points + 2);
    for chunk in points.chunks(bucket) {
        let lowest = chunk
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.1.total_cmp(&b.1.1));
        let highest = chunk
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.1.total_cmp(&b.1.1));
        if let (Some((i_low, &low)), Some((i_high, &high))) = (lowest, highest) {
            if i_low <= i_high {
                out.extend([low, high]);
            } else {
                out.extend([high, low]);
            }
        }
    }
    out
}

/// At most about `max_points` evenly strided points of a smooth curve,
/// always keeping the last.
pub(crate) fn thin_stride(points: &[(f64, f64)], max_points: usize) -> Points {
    if points.len() <= max_points {
        return points.to_vec();
    }
    let stride = points.len().div_ceil(max_points.max(1));
    let mut out: Points = points.iter().step_by(stride).copied().collect();
    if let Some(&last) = points.last()
        && out.last() != Some(&last)
    {
        out.push(last);
    }
    out
}

/// Linear interpolation of a curve with increasing `x` at `x`; `None`
/// outside its range.
pub(crate) fn interpolate(points: &[(f64, f64)], x: f64) -> Option<f64> {
    let first = points.first()?;
    let last = points.last()?;
    if x < first.0 || x > last.0 {
        return None;
    }
    let right = points.partition_point(|p| p.0 < x);
    if right == 0 {
        return Some(first.1);
    }
    let (x1, y1) = points[right.min(points.len() - 1)];
    let (x0, y0) = points[right - 1];
    if x1 <= x0 {
        return Some(y1);
    }
    Some(y0 + (y1 - y0) * (x - x0) / (x1 - x0))
}

/// Mean and min–max envelope of several curves on their common `x` range.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SeedBand {
    pub mean: Points,
    pub lower: Points,
    pub upper: Points,
}

/// Mean and min–max of `curves`, sampled at up to `grid_points` evenly spaced
/// `x` values of the range every curve covers; `None` when fewer than two
/// curves or no common range.
pub(crate) fn seed_band(curves: &[Points], grid_points: usize) -> Option<SeedBand> {
    if curves.len() < 2 || curves.iter().any(Vec::is_empty) {
        return None;
    }
    let lo = curves
        .iter()
        .map(|c| c[0].0)
        .fold(f64::NEG_INFINITY, f64::max);
    let hi = curves
        .iter()
        .map(|c| c[c.len() - 1].0)
        .fold(f64::INFINITY, f64::min);
    if hi < lo {
        return None;
    }
    let shortest = curves.iter().map(Vec::len).min().unwrap_or(1);
    let samples = grid_points.min(shortest).max(2);
    let mut band = SeedBand {
        mean: Vec::new(),
        lower: Vec::new(),
        upper: Vec::new(),
    };
    for i in 0..samples {
        let x = if hi > lo {
            lo + (hi - lo) * i as f64 / (samples - 1) as f64
        } else {
            lo
        };
        let ys: Vec<f64> = curves.iter().filter_map(|c| interpolate(c, x)).collect();
        if ys.len() != curves.len() {
            continue;
        }
        let mean = ys.iter().sum::<f64>() / ys.len() as f64;
        band.mean.push((x, mean));
        band.lower
            .push((x, ys.iter().copied().fold(f64::INFINITY, f64::min)));
        band.upper
            .push((x, ys.iter().copied().fold(f64::NEG_INFINITY, f64::max)));
        if hi <= lo {
            break;
        }
    }
    Some(band)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn extract_skips_missing_and_null_values() {
        let records = vec![
            json!({"episode": 1, "r": 1.0}),
            json!({"episode": 2}),
            json!({"episode": 3, "r": null}),
            json!({"episode": 4, "r": -2}),
        ];
        assert_eq!(
            extract(&records, "episode", "r"),
            vec![(1.0, 1.0), (4.0, -2.0)]
        );
    }

    #[test]
    fn moving_average_is_trailing_mean() {
        let points: Points = (1..=5).map(|i| (i as f64, i as f64)).collect();
        let smooth = moving_average(&points, 2);
        assert_eq!(
            smooth,
            vec![(1.0, 1.0), (2.0, 1.5), (3.0, 2.5), (4.0, 3.5), (5.0, 4.5)]
        );
        assert_eq!(moving_average(&points, 1), points);
    }

    #[test]
    fn thinning_bounds_point_count_and_keeps_extremes() {
        let points: Points = (0..10_000)
            .map(|i| (i as f64, if i == 5_000 { 99.0 } else { 0.0 }))
            .collect();
        let thin = thin_envelope(&points, 400);
        assert!(thin.len() <= 402, "{}", thin.len());
        assert!(thin.contains(&(5_000.0, 99.0)));
        let strided = thin_stride(&points, 100);
        assert!(strided.len() <= 101);
        assert_eq!(strided.last(), points.last());
    }

    #[test]
    fn interpolation_is_linear_inside_and_none_outside() {
        let points = vec![(0.0, 0.0), (2.0, 4.0), (4.0, 0.0)];
        assert_eq!(interpolate(&points, 1.0), Some(2.0));
        assert_eq!(interpolate(&points, 3.0), Some(2.0));
        assert_eq!(interpolate(&points, 4.0), Some(0.0));
        assert_eq!(interpolate(&points, 4.5), None);
    }

    #[test]
    fn seed_band_covers_common_range_with_mean_min_max() {
        let a: Points = (0..=10).map(|i| (i as f64, 1.0)).collect();
        let b: Points = (2..=12).map(|i| (i as f64, 3.0)).collect();
        let band = seed_band(&[a.clone(), b], 100).unwrap();
        assert_eq!(band.mean.first().unwrap().0, 2.0);
        assert_eq!(band.mean.last().unwrap().0, 10.0);
        assert!(band.mean.iter().all(|p| p.1 == 2.0));
        assert!(band.lower.iter().all(|p| p.1 == 1.0));
        assert!(band.upper.iter().all(|p| p.1 == 3.0));
        assert!(seed_band(std::slice::from_ref(&a), 10).is_none());
        let disjoint: Points = vec![(20.0, 0.0), (30.0, 0.0)];
        assert!(seed_band(&[a, disjoint], 10).is_none());
    }
}
