//! Rollouts as pictures: an animated GIF plus a PNG of the last frame,
//! drawn in pure Rust (plotters' bitmap backend, the `gif` and `png`
//! encoders, DejaVu Sans compiled in), so no system library is needed.
//!
//! What to draw is plain data — a [`Scene`] (size, title, panels) and one
//! [`Frame`] of [`Shape`]s per picture — so environments describe their
//! state with numbers and never touch drawing code. [`worm_scene`] and
//! [`arm_scene`] build those for shoal's tasks from per-step positions.

mod chain;
mod encode;
mod raster;
mod scene;
mod tasks;

use std::path::{Path, PathBuf};

use shoal_rl_core::{Error, Result};

#[cfg(feature = "env")]
pub use chain::ChainTask;
pub use chain::{ChainFrameInput, chain_scene, render_chain};
pub use scene::{Bounds, Frame, FrameView, Rgb, Scene, Shape, Trail, View};
pub use tasks::{
    ArmFrameInput, ArmLayout, ArmObject, RenderOptions, WormFrameInput, arm_scene, render_arm,
    render_arm_with, render_worm, render_worm_with, worm_scene,
};

use crate::canvas::{png_bytes, register_embedded_font};
use crate::fsio::{atomic_write, create_dir_all, parent_dir};
use encode::{GifBuilder, Palette};

/// How long the last frame of a GIF stays up before the loop restarts, in
/// hundredths of a second, so a viewer can see how the episode ended.
const FINAL_HOLD_CS: u16 = 150;

/// Draws `frames` of `scene` into an animated GIF at `gif_path` (looping,
/// `fps` frames per second, the last frame held 1.5 s) and the last frame
/// into a PNG at `png_path`.
///
/// Both files are encoded in memory first and then written with
/// [`atomic_write`](crate::atomic_write), creating missing parent
/// directories: a failure at any point leaves no partial file behind (an
/// old file at either path is kept). Drawing one 720 × 432 frame takes a few
/// milliseconds, so hundreds of frames render in seconds.
///
/// Errors ([`Error::Config`]): no frames, no views, a size of zero or above
/// 65 535 pixels (GIF's limit), or `fps` not in (0, 100]; I/O errors name the
/// file.
///
/// ```
/// use shoal_rl_eval::{Bounds, Frame, Rgb, Scene, Shape, View, render_gif};
/// let dir = std::env::temp_dir().join(format!("shoal-doc-render-{}", std::process::id()));
/// let scene = Scene::new("a dot", 320, 240, vec![View::new("plane", Bounds::new([0.0, 0.0], [1.0, 1.0]))]);
/// let frames: Vec<Frame> = (0..5)
///     .map(|i| {
///         let mut frame = Frame::new(format!("step {i}"), 1);
///         frame.draw(0, Shape::Circle { centre: [0.2 * i as f32, 0.5], radius: 0.05, colour: Rgb::RED, filled: true });
///         frame
///     })
///     .collect();
/// render_gif(&scene, &frames, dir.join("dot.gif"), dir.join("dot.png"), 10.0).unwrap();
/// assert_eq!(&std::fs::read(dir.join("dot.gif")).unwrap()[..6], b"GIF89a");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn render_gif(
    scene: &Scene,
    frames: &[Frame],
    gif_path: impl AsRef<Path>,
    png_path: impl AsRef<Path>,
    fps: f32,
) -> Result<()> {
    let (gif_path, png_path) = (gif_path.as_ref(), png_path.as_ref());
    if frames.is_empty() {
        return Err(Error::Config(format!(
            "nothing to render into {}: no frames",
            gif_path.display()
        )));
    }
    if scene.views.is_empty() {
        return Err(Error::Config(
            "a scene to render needs at least one view".into(),
        ));
    }
    let (width, height) = match (u16::try_from(scene.width), u16::try_from(scene.height)) {
        (Ok(w), Ok(h)) if w > 0 && h > 0 => (w, h),
        _ => {
            return Err(Error::Config(format!(
                "picture size {}x{} must be 1 to 65535 pixels each way",
                scene.width, scene.height
            )));
        }
    };
    if !(fps > 0.0 && fps <= 100.0) {
        return Err(Error::Config(format!(
            "frames per second must be in (0, 100], not {fps}"
        )));
    }
    register_embedded_font()?;
    let delay = (100.0 / fps).round().max(1.0) as u16;
    let encode_error = |what: &str, path: &Path, e: &dyn std::fmt::Display| {
        Error::file(path, format!("could not {what}: {e}"))
    };

    let mut palette_colours = vec![scene.background, Rgb::BLACK];
    for frame in frames {
        for shape in frame.views.iter().flat_map(|v| &v.shapes) {
            let c = match shape {
                Shape::Polyline { colour, .. }
                | Shape::Circle { colour, .. }
                | Shape::Rect { colour, .. }
                | Shape::Text { colour, .. } => *colour,
            };
            if !palette_colours.contains(&c) {
                palette_colours.push(c);
            }
        }
    }
    let mut gif = GifBuilder::new(width, height, Palette::new(palette_colours))
        .map_err(|e| encode_error("start the GIF", gif_path, &e))?;
    let mut rgb = vec![0u8; usize::from(width) * usize::from(height) * 3];
    for (i, frame) in frames.iter().enumerate() {
        rgb.fill(0);
        raster::draw_frame(scene, frame, &mut rgb)
            .map_err(|e| encode_error(&format!("draw frame {i}"), gif_path, &e))?;
        let hold = if i + 1 == frames.len() {
            delay.max(FINAL_HOLD_CS)
        } else {
            delay
        };
        gif.push(&rgb, hold)
            .map_err(|e| encode_error(&format!("encode frame {i}"), gif_path, &e))?;
    }
    let gif_bytes = gif
        .finish()
        .map_err(|e| encode_error("finish the GIF", gif_path, &e))?;
    // `rgb` now holds the last frame.
    let png = png_bytes(scene.width, scene.height, &rgb)
        .map_err(|e| encode_error("encode the PNG", png_path, &e))?;
    for path in [gif_path, png_path] {
        create_dir_all(&parent_dir(path))?;
    }
    atomic_write(gif_path, &gif_bytes)?;
    atomic_write(png_path, &png)
}

/// One drawn picture: `height` rows of `width` RGB pixels, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RgbImage {
    /// Pixels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// `height × width × 3` bytes, red, green, blue.
    pub rgb: Vec<u8>,
}

/// Draws one frame of `scene` in memory: what `render_gif` writes as a
/// picture, for a caller that shows it itself (Gymnasium's
/// `render_mode="rgb_array"`).
///
/// ```
/// use shoal_rl_eval::{Bounds, Frame, Rgb, Scene, Shape, View, draw_frame};
/// let scene = Scene::new("a dot", 320, 240, vec![View::new("plane", Bounds::new([0.0, 0.0], [1.0, 1.0]))]);
/// let mut frame = Frame::new("step 0", 1);
/// frame.draw(0, Shape::Circle { centre: [0.5, 0.5], radius: 0.1, colour: Rgb::RED, filled: true });
/// let image = draw_frame(&scene, &frame).unwrap();
/// assert_eq!((image.width, image.height, image.rgb.len()), (320, 240, 320 * 240 * 3));
/// assert!(image.rgb.chunks(3).any(|pixel| pixel == [214, 39, 40]), "the dot is drawn");
/// ```
pub fn draw_frame(scene: &Scene, frame: &Frame) -> Result<RgbImage> {
    if scene.views.is_empty() {
        return Err(Error::Config(
            "a scene to draw needs at least one view".into(),
        ));
    }
    if !(1..=65_535).contains(&scene.width) || !(1..=65_535).contains(&scene.height) {
        return Err(Error::Config(format!(
            "picture size {}x{} must be 1 to 65535 pixels each way",
            scene.width, scene.height
        )));
    }
    register_embedded_font()?;
    let mut rgb = vec![0u8; scene.width as usize * scene.height as usize * 3];
    raster::draw_frame(scene, frame, &mut rgb)
        .map_err(|e| Error::Config(format!("could not draw the frame: {e}")))?;
    Ok(RgbImage {
        width: scene.width,
        height: scene.height,
        rgb,
    })
}

/// `<stem>.png` beside `gif_path`, refusing a GIF path that already ends
/// in `.png` (the two files would collide).
fn png_beside(gif_path: &Path) -> Result<PathBuf> {
    let png = gif_path.with_extension("png");
    if png == gif_path {
        return Err(Error::Config(format!(
            "{} ends in .png; give the GIF's path (e.g. rollout.gif)",
            gif_path.display()
        )));
    }
    Ok(png)
}

#[cfg(test)]
mod tests;
