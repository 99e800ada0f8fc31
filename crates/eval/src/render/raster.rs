//! Drawing one frame of a scene into an RGB pixel buffer with plotters, and
//! clipping shapes to the window a panel shows.

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::scene::{Bounds, Frame, FrameView, Rgb, Scene, Shape, View};

/// Height of the strip holding the scene title and the frame caption, pixels.
const HEADER_HEIGHT: u32 = 30;
/// Height of the strip holding a panel's title, pixels.
const VIEW_TITLE_HEIGHT: u32 = 20;
/// Blank border around each panel's chart, pixels.
const MARGIN: u32 = 8;
/// Room for x tick labels and the x axis name, pixels.
const X_LABEL_AREA: u32 = 38;
/// Room for y tick labels and the y axis name, pixels.
const Y_LABEL_AREA: u32 = 56;
/// Sides of the polygon standing in for a circle.
const CIRCLE_SEGMENTS: usize = 40;

pub(crate) type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

type Chart<'a, 'b> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draws `frame` of `scene` into `buffer`, which holds `width · height · 3`
/// bytes of RGB.
pub(crate) fn draw_frame(scene: &Scene, frame: &Frame, buffer: &mut [u8]) -> DrawResult {
    let root = BitMapBackend::with_buffer(buffer, (scene.width, scene.height)).into_drawing_area();
    root.fill(&colour(scene.background))?;
    let (header, body) = root.split_vertically(HEADER_HEIGHT);
    let title_style = TextStyle::from(("sans-serif", 18)).color(&BLACK);
    header.draw_text(&scene.title, &title_style, (10, 6))?;
    let caption_style = TextStyle::from(("sans-serif", 16))
        .color(&BLACK)
        .pos(Pos::new(HPos::Right, VPos::Top));
    header.draw_text(&frame.caption, &caption_style, (scene.width as i32 - 10, 8))?;
    let panels = body.split_evenly((1, scene.views.len().max(1)));
    for (i, (area, view)) in panels.iter().zip(&scene.views).enumerate() {
        draw_view(area, view, frame.views.get(i))?;
    }
    root.present()?;
    Ok(())
}

fn draw_view(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    view: &View,
    content: Option<&FrameView>,
) -> DrawResult {
    let (title_area, chart_area) = area.split_vertically(VIEW_TITLE_HEIGHT);
    let (width, _) = title_area.dim_in_pixel();
    let title_style = TextStyle::from(("sans-serif", 15))
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    title_area.draw_text(&view.title, &title_style, (width as i32 / 2, 2))?;

    let (w, h) = chart_area.dim_in_pixel();
    let plot_w = w.saturating_sub(2 * MARGIN + Y_LABEL_AREA).max(1);
    let plot_h = h.saturating_sub(2 * MARGIN + X_LABEL_AREA).max(1);
    let camera = content.and_then(|c| c.camera).unwrap_or(view.bounds);
    let window = camera.with_aspect(plot_w as f32 / plot_h as f32);
    let mut chart = ChartBuilder::on(&chart_area)
        .margin(MARGIN)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(
            f64::from(window.min[0])..f64::from(window.max[0]),
            f64::from(window.min[1])..f64::from(window.max[1]),
        )?;
    chart
        .configure_mesh()
        .x_desc(view.x_label.as_str())
        .y_desc(view.y_label.as_str())
        .x_labels(7)
        .y_labels(6)
        .max_light_lines(1)
        .x_label_formatter(&|x| format_tick(*x))
        .y_label_formatter(&|y| format_tick(*y))
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 13))
        .bold_line_style(RGBColor(222, 222, 222))
        .light_line_style(RGBColor(242, 242, 242))
        .draw()?;
    for shape in content.map(|c| c.shapes.as_slice()).unwrap_or_default() {
        draw_shape(&mut chart, shape, &window)?;
    }
    Ok(())
}

fn draw_shape(chart: &mut Chart<'_, '_>, shape: &Shape, window: &Bounds) -> DrawResult {
    match shape {
        Shape::Polyline {
            points,
            colour: c,
            width,
        } => stroke(chart, points, *c, *width, window),
        Shape::Circle {
            centre,
            radius,
            colour: c,
            filled,
        } => {
            let ring = circle_points(*centre, *radius);
            if *filled {
                fill(chart, &ring, *c, window)
            } else {
                let mut closed = ring;
                closed.push(closed[0]);
                stroke(chart, &closed, *c, 2, window)
            }
        }
        Shape::Rect {
            min,
            max,
            colour: c,
            filled,
        } => {
            let corners = vec![*min, [max[0], min[1]], *max, [min[0], max[1]]];
            if *filled {
                fill(chart, &corners, *c, window)
            } else {
                let mut closed = corners;
                closed.push(*min);
                stroke(chart, &closed, *c, 2, window)
            }
        }
        Shape::Text {
            at,
            text,
            colour: c,
            size,
        } => {
            if window.contains(*at) {
                let fill = colour(*c);
                let style = TextStyle::from(("sans-serif", *size)).color(&fill);
                let at = (f64::from(at[0]), f64::from(at[1]));
                chart.draw_series(std::iter::once(Text::new(text.clone(), at, style)))?;
            }
            Ok(())
        }
    }
}

fn stroke(
    chart: &mut Chart<'_, '_>,
    points: &[[f32; 2]],
    c: Rgb,
    width: u32,
    window: &Bounds,
) -> DrawResult {
    let style = colour(c).stroke_width(width.max(1));
    let pieces = clip_polyline(points, window)
        .into_iter()
        .map(|piece| PathElement::new(to_f64(&piece), style));
    chart.draw_series(pieces)?;
    Ok(())
}

fn fill(chart: &mut Chart<'_, '_>, polygon: &[[f32; 2]], c: Rgb, window: &Bounds) -> DrawResult {
    let clipped = clip_polygon(polygon, window);
    if clipped.len() >= 3 {
        let element = Polygon::new(to_f64(&clipped), colour(c).filled());
        chart.draw_series(std::iter::once(element))?;
    }
    Ok(())
}

fn to_f64(points: &[[f32; 2]]) -> Vec<(f64, f64)> {
    points
        .iter()
        .map(|p| (f64::from(p[0]), f64::from(p[1])))
        .collect()
}

fn colour(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// Vertices of a regular polygon close to the circle (not repeating the first).
pub(crate) fn circle_points(centre: [f32; 2], radius: f32) -> Vec<[f32; 2]> {
    (0..CIRCLE_SEGMENTS)
        .map(|i| {
            let angle = std::f32::consts::TAU * i as f32 / CIRCLE_SEGMENTS as f32;
            [
                centre[0] + radius * angle.cos(),
                centre[1] + radius * angle.sin(),
            ]
        })
        .collect()
}

/// The parts of the segment `a → b` inside `window` (Liang–Barsky), as
/// parameters `t0 ≤ t1` along it.
fn clip_segment(a: [f32; 2], b: [f32; 2], window: &Bounds) -> Option<(f32, f32)> {
    let d = [b[0] - a[0], b[1] - a[1]];
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    let tests = [
        (-d[0], a[0] - window.min[0]),
        (d[0], window.max[0] - a[0]),
        (-d[1], a[1] - window.min[1]),
        (d[1], window.max[1] - a[1]),
    ];
    for (p, q) in tests {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let r = q / p;
            if p < 0.0 {
                if r > t1 {
                    return None;
                }
                t0 = t0.max(r);
            } else {
                if r < t0 {
                    return None;
                }
                t1 = t1.min(r);
            }
        }
    }
    Some((t0, t1))
}

/// The pieces of a polyline inside `window`, each with at least two points;
/// non-finite vertices break the line. Plotters does not clip to the plotting
/// area, so without this a trail would spill over the axes.
pub(crate) fn clip_polyline(points: &[[f32; 2]], window: &Bounds) -> Vec<Vec<[f32; 2]>> {
    let finite = |p: &[f32; 2]| p[0].is_finite() && p[1].is_finite();
    let mut pieces: Vec<Vec<[f32; 2]>> = Vec::new();
    let mut open = false;
    for pair in points.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let clipped = if finite(&a) && finite(&b) {
            clip_segment(a, b, window)
        } else {
            None
        };
        let Some((t0, t1)) = clipped else {
            open = false;
            continue;
        };
        let at = |t: f32| [a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])];
        let end = if t1 >= 1.0 { b } else { at(t1) };
        match pieces.last_mut() {
            Some(piece) if open && t0 <= 0.0 => piece.push(end),
            _ => pieces.push(vec![if t0 <= 0.0 { a } else { at(t0) }, end]),
        }
        open = t1 >= 1.0;
    }
    pieces
}

/// The part of a polygon inside `window` (Sutherland–Hodgman).
pub(crate) fn clip_polygon(polygon: &[[f32; 2]], window: &Bounds) -> Vec<[f32; 2]> {
    if polygon
        .iter()
        .any(|p| !(p[0].is_finite() && p[1].is_finite()))
    {
        return Vec::new();
    }
    // (axis, limit, keep values above the limit?)
    let edges = [
        (0, window.min[0], true),
        (0, window.max[0], false),
        (1, window.min[1], true),
        (1, window.max[1], false),
    ];
    let mut current = polygon.to_vec();
    for (axis, limit, above) in edges {
        if current.is_empty() {
            break;
        }
        let inside = |p: &[f32; 2]| {
            if above {
                p[axis] >= limit
            } else {
                p[axis] <= limit
            }
        };
        let crossing = |a: [f32; 2], b: [f32; 2]| {
            let t = (limit - a[axis]) / (b[axis] - a[axis]);
            [a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])]
        };
        let input = std::mem::take(&mut current);
        for (i, &b) in input.iter().enumerate() {
            let a = input[(i + input.len() - 1) % input.len()];
            match (inside(&a), inside(&b)) {
                (true, true) => current.push(b),
                (true, false) => current.push(crossing(a, b)),
                (false, true) => {
                    current.push(crossing(a, b));
                    current.push(b);
                }
                (false, false) => {}
            }
        }
    }
    current
}

/// Tick labels without spurious decimals: `1`, `0.25`, `-0.1`.
fn format_tick(value: f64) -> String {
    if value.abs() < 1e-9 {
        return "0".into();
    }
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit() -> Bounds {
        Bounds::new([0.0, 0.0], [1.0, 1.0])
    }

    #[test]
    fn polyline_leaving_and_reentering_the_window_is_split() {
        let line = [[0.5, 0.5], [1.5, 0.5], [1.5, 0.2], [0.5, 0.2], [0.2, 0.2]];
        let pieces = clip_polyline(&line, &unit());
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[0], vec![[0.5, 0.5], [1.0, 0.5]]);
        assert_eq!(pieces[1], vec![[1.0, 0.2], [0.5, 0.2], [0.2, 0.2]]);
        let outside = [[2.0, 2.0], [3.0, 3.0]];
        assert!(clip_polyline(&outside, &unit()).is_empty());
        let broken = [[0.1, 0.1], [f32::NAN, 0.5], [0.2, 0.2], [0.3, 0.3]];
        assert_eq!(clip_polyline(&broken, &unit()).len(), 1);
    }

    #[test]
    fn polygon_is_cut_to_the_window() {
        let square = [[0.5, 0.5], [1.5, 0.5], [1.5, 1.5], [0.5, 1.5]];
        let mut clipped = clip_polygon(&square, &unit());
        clipped.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert_eq!(
            clipped,
            vec![[0.5, 0.5], [0.5, 1.0], [1.0, 0.5], [1.0, 1.0]]
        );
        let far = [[2.0, 2.0], [3.0, 2.0], [3.0, 3.0]];
        assert!(clip_polygon(&far, &unit()).is_empty());
    }

    #[test]
    fn ticks_are_short() {
        assert_eq!(format_tick(0.25), "0.25");
        assert_eq!(format_tick(2.0), "2");
        assert_eq!(format_tick(-1e-12), "0");
        assert_eq!(format_tick(0.1 + 0.2), "0.3");
    }
}
