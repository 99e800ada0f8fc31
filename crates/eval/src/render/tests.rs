//! Rendering tests: files written whole, frame counts, sizes, failures.

use std::fs;

use super::*;
use crate::fsio::testutil::{TempDir, entries};

/// Frame count and logical screen size of a GIF, decoded.
fn gif_frames(path: &Path) -> (usize, u16, u16, Vec<u16>) {
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::Indexed);
    let mut decoder = options.read_info(fs::File::open(path).unwrap()).unwrap();
    let (w, h) = (decoder.width(), decoder.height());
    let mut delays = Vec::new();
    while let Some(frame) = decoder.read_next_frame().unwrap() {
        delays.push(frame.delay);
    }
    (delays.len(), w, h, delays)
}

/// The last picture of a GIF as RGB, composing its partial frames over each
/// other as a viewer does (every frame uses "keep" disposal).
fn gif_last_picture(path: &Path) -> Vec<u8> {
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::RGBA);
    let mut decoder = options.read_info(fs::File::open(path).unwrap()).unwrap();
    let (w, h) = (usize::from(decoder.width()), usize::from(decoder.height()));
    let mut canvas = vec![0u8; w * h * 3];
    while let Some(frame) = decoder.read_next_frame().unwrap() {
        assert!(matches!(
            frame.dispose,
            gif::DisposalMethod::Keep | gif::DisposalMethod::Any
        ));
        let (left, top) = (usize::from(frame.left), usize::from(frame.top));
        for (i, px) in frame.buffer.chunks_exact(4).enumerate() {
            let (x, y) = (
                left + i % usize::from(frame.width),
                top + i / usize::from(frame.width),
            );
            canvas[(y * w + x) * 3..(y * w + x) * 3 + 3].copy_from_slice(&px[..3]);
        }
    }
    canvas
}

/// Width, height and RGB pixels of a PNG.
fn png_pixels(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

fn count_colour(rgb: &[u8], c: Rgb) -> usize {
    rgb.chunks_exact(3)
        .filter(|p| p[0] == c.0 && p[1] == c.1 && p[2] == c.2)
        .count()
}

/// A worm of 5 links swimming along +x with a travelling wave.
fn swim(steps: usize, speed: f32) -> Vec<WormFrameInput> {
    (0..steps)
        .map(|t| {
            let t = t as f32;
            WormFrameInput::new(
                (0..6)
                    .map(|j| {
                        let j = j as f32;
                        [speed * t - j, 0.3 * (0.3 * t - 1.2 * j).sin()]
                    })
                    .collect(),
            )
        })
        .collect()
}

/// The box pushed from the middle of the table toward a goal, with one subgoal.
fn push(steps: usize) -> Vec<ArmFrameInput> {
    (0..steps)
        .map(|t| {
            let s = t as f32 / steps as f32;
            ArmFrameInput {
                episode: 0,
                gripper: [-0.06 + 0.15 * s, 0.02, 0.43],
                object: [0.15 * s, 0.02, 0.425],
                goal: [0.15, 0.0, 0.425],
                subgoals: vec![[0.08, 0.01, 0.425]],
            }
        })
        .collect()
}

#[test]
fn worm_render_writes_gif_and_png_with_one_frame_per_step() {
    let dir = TempDir::new("render-worm");
    let out = dir.path().join("renders").join("worm.gif");
    let (gif, png) = render_worm(&swim(24, 0.02), &out).unwrap();
    assert_eq!(gif, out);
    assert_eq!(png, dir.path().join("renders").join("worm.png"));
    let bytes = fs::read(&gif).unwrap();
    assert_eq!(&bytes[..6], b"GIF89a");
    let (frames, w, h, delays) = gif_frames(&gif);
    assert_eq!((frames, w, h), (24, 720, 432));
    assert_eq!(delays[0], 5, "20 fps is 5 hundredths per frame");
    assert_eq!(*delays.last().unwrap(), FINAL_HOLD_CS);
    let (pw, ph, rgb) = png_pixels(&png);
    assert_eq!((pw, ph), (720, 432));
    // Head, body and trail are all visible in the last frame.
    assert!(count_colour(&rgb, Rgb::RED) > 30);
    assert!(count_colour(&rgb, Rgb::BLUE) > 100);
    assert!(count_colour(&rgb, Rgb::ORANGE) > 5);
    // The GIF, played to its end, shows the PNG (up to palette rounding).
    let shown = gif_last_picture(&gif);
    let close = shown
        .chunks_exact(3)
        .zip(rgb.chunks_exact(3))
        .filter(|(a, b)| a.iter().zip(*b).all(|(x, y)| x.abs_diff(*y) <= 40))
        .count();
    assert!(close * 100 >= 99 * (rgb.len() / 3), "{close}");
    // Only the two files: temp files were renamed away.
    assert_eq!(
        entries(&dir.path().join("renders")),
        vec!["worm.gif", "worm.png"]
    );
}

#[test]
fn long_swim_is_followed_by_the_camera_and_short_one_is_not() {
    let options = RenderOptions::default();
    let (scene, frames) = worm_scene(&swim(200, 0.1), &options);
    assert!(scene.views[0].title.contains("follows"));
    let first = frames[0].views[0].camera.unwrap();
    let last = frames.last().unwrap().views[0].camera.unwrap();
    assert!(last.centre()[0] - first.centre()[0] > 19.0);
    let (scene, frames) = worm_scene(&swim(20, 0.01), &options);
    assert!(!scene.views[0].title.contains("follows"));
    assert_eq!(frames[0].views[0].camera, frames[19].views[0].camera);
    assert!(
        frames[19].caption.contains("x-distance +0.19 m"),
        "{}",
        frames[19].caption
    );
}

#[test]
fn long_rollouts_are_thinned_to_max_frames_keeping_the_last_step() {
    let options = RenderOptions {
        max_frames: 50,
        ..RenderOptions::default()
    };
    for steps in [1, 49, 50, 51, 99, 100, 1000, 1001] {
        let picked = options.frame_steps(steps);
        assert!(picked.len() <= 50, "{steps}: {}", picked.len());
        assert_eq!(picked.last(), Some(&(steps - 1)));
        assert_eq!(picked[0], 0);
        assert!(picked.windows(2).all(|w| w[0] < w[1]));
    }
    assert_eq!(options.frame_steps(40).len(), 40);
    assert!(options.frame_steps(0).is_empty());
    let (_, frames) = worm_scene(&swim(1000, 0.01), &options);
    assert_eq!(frames.len(), options.frame_steps(1000).len());
    assert!(frames.last().unwrap().caption.starts_with("step 1000/1000"));
}

#[test]
fn arm_render_has_two_panels_and_marks_subgoals() {
    let dir = TempDir::new("render-arm");
    let layout = ArmLayout::default();
    let (scene, frames) = arm_scene(&layout, &push(30), &RenderOptions::default());
    assert_eq!(scene.views.len(), 2);
    assert_eq!(frames.len(), 30);
    let hollow_purple = frames[0].views[0]
        .shapes
        .iter()
        .filter(|s| {
            matches!(
                s,
                Shape::Rect {
                    colour: Rgb::PURPLE,
                    filled: false,
                    ..
                }
            )
        })
        .count();
    assert_eq!(hollow_purple, 1);
    assert!(frames.last().unwrap().caption.contains("goal reached"));
    assert!(!frames[0].caption.contains("goal reached"));

    let (gif, png) = render_arm(&layout, &push(30), dir.path().join("push.gif")).unwrap();
    let (count, w, h, _) = gif_frames(&gif);
    assert_eq!((count, w, h), (30, 1000, 440));
    let (_, _, rgb) = png_pixels(&png);
    assert!(count_colour(&rgb, Rgb::PURPLE) > 20);
    assert!(count_colour(&rgb, Rgb::GREEN) > 20);
    assert!(count_colour(&rgb, Rgb::BROWN) > 20);

    let ball = ArmLayout {
        object: ArmObject::Ball { radius: 0.025 },
        ..layout
    };
    let options = RenderOptions {
        size: Some((640, 300)),
        fps: 10.0,
        ..RenderOptions::default()
    };
    let (gif, _) = render_arm_with(&ball, &push(8), dir.path().join("ball.gif"), &options).unwrap();
    let (count, w, h, delays) = gif_frames(&gif);
    assert_eq!((count, w, h, delays[0]), (8, 640, 300, 10));
}

/// Points of the first orange polyline (a trail) in view 0.
fn orange_points(frame: &Frame) -> usize {
    frame.views[0]
        .shapes
        .iter()
        .find_map(|s| match s {
            Shape::Polyline {
                points,
                colour: Rgb::ORANGE,
                ..
            } => Some(points.len()),
            _ => None,
        })
        .unwrap()
}

#[test]
fn arm_trails_restart_with_each_episode() {
    let mut inputs = push(10);
    inputs.extend(
        push(6)
            .into_iter()
            .map(|i| ArmFrameInput { episode: 1, ..i }),
    );
    let (_, frames) = arm_scene(&ArmLayout::default(), &inputs, &RenderOptions::default());
    assert_eq!(orange_points(&frames[9]), 10);
    assert_eq!(
        orange_points(&frames[15]),
        6,
        "only the second episode's path"
    );
    assert!(frames[15].caption.starts_with("episode 2/2"));
}

#[test]
fn worm_trail_and_distance_restart_with_each_episode() {
    let mut inputs = swim(10, 0.1);
    inputs.extend(swim(4, 0.1).into_iter().map(|i| i.episode(1)));
    let (_, frames) = worm_scene(&inputs, &RenderOptions::default());
    assert_eq!(orange_points(&frames[9]), 10);
    assert_eq!(orange_points(&frames[13]), 4);
    assert!(
        frames[9].caption.contains("x-distance +0.90 m"),
        "{}",
        frames[9].caption
    );
    assert!(
        frames[13].caption.starts_with("episode 2/2") && frames[13].caption.contains("+0.30 m"),
        "{}",
        frames[13].caption
    );
}

#[test]
fn unwritable_destination_is_an_error_and_writes_nothing() {
    let dir = TempDir::new("render-unwritable");
    // A regular file where a directory should be: nobody can create it,
    // not even root.
    let blocker = dir.path().join("blocker");
    fs::write(&blocker, b"not a directory").unwrap();
    let err = render_worm(&swim(5, 0.02), blocker.join("worm.gif")).unwrap_err();
    assert!(err.to_string().contains("blocker"), "{err}");
    assert_eq!(entries(dir.path()), vec!["blocker"]);

    // The GIF's directory is fine but the PNG's is not: neither is written.
    let scene_frames = worm_scene(&swim(5, 0.02), &RenderOptions::default());
    let gif = dir.path().join("ok.gif");
    let err = render_gif(
        &scene_frames.0,
        &scene_frames.1,
        &gif,
        blocker.join("x.png"),
        20.0,
    )
    .unwrap_err();
    assert!(err.to_string().contains("blocker"), "{err}");
    assert_eq!(entries(dir.path()), vec!["blocker"]);

    // An old render survives a failed attempt to replace it.
    let (gif, png) = render_worm(&swim(3, 0.02), dir.path().join("old.gif")).unwrap();
    let before = (fs::read(&gif).unwrap(), fs::read(&png).unwrap());
    let err = render_worm(&[], &gif).unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");
    assert_eq!((fs::read(&gif).unwrap(), fs::read(&png).unwrap()), before);
}

#[test]
fn bad_requests_are_config_errors() {
    let dir = TempDir::new("render-bad");
    let (scene, frames) = worm_scene(&swim(3, 0.02), &RenderOptions::default());
    let gif = dir.path().join("a.gif");
    let png = dir.path().join("a.png");
    for fps in [0.0, -1.0, f32::NAN, 1000.0] {
        let err = render_gif(&scene, &frames, &gif, &png, fps).unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{err}");
    }
    let mut empty = scene.clone();
    empty.views.clear();
    assert!(render_gif(&empty, &frames, &gif, &png, 10.0).is_err());
    let mut huge = scene.clone();
    huge.width = 70_000;
    assert!(render_gif(&huge, &frames, &gif, &png, 10.0).is_err());
    let err = render_worm(&swim(3, 0.02), dir.path().join("worm.png")).unwrap_err();
    assert!(err.to_string().contains(".png"), "{err}");
    assert!(entries(dir.path()).is_empty());
}

/// Centroid (column, row) of the pixels of exactly colour `c` in the
/// columns `columns` of an image.
fn centroid(image: &RgbImage, c: Rgb, columns: std::ops::Range<u32>) -> (f64, f64) {
    let (mut sum_x, mut sum_y, mut n) = (0.0, 0.0, 0.0);
    for row in 0..image.height {
        for col in columns.clone() {
            let at = ((row * image.width + col) * 3) as usize;
            if image.rgb[at..at + 3] == [c.0, c.1, c.2] {
                (sum_x, sum_y, n) = (sum_x + f64::from(col), sum_y + f64::from(row), n + 1.0);
            }
        }
    }
    assert!(n > 0.0, "no pixel of {c:?}");
    (sum_x / n, sum_y / n)
}

#[test]
fn arm_frames_draw_the_gripper_and_the_object_where_they_are() {
    // Two episodes of one frame each (trails restart), one scene: the same
    // world-to-pixel mapping for both. Only the gripper moves, +0.3 m in x.
    let frame = |episode, gripper_x| ArmFrameInput {
        episode,
        gripper: [gripper_x, 0.0, 0.45],
        object: [0.1, 0.1, 0.425],
        goal: [0.0, -0.2, 0.425],
        subgoals: Vec::new(),
    };
    let inputs = [frame(0, -0.1), frame(1, 0.2)];
    let (scene, frames) = arm_scene(&ArmLayout::default(), &inputs, &RenderOptions::default());
    let images: Vec<RgbImage> = frames
        .iter()
        .map(|f| draw_frame(&scene, f).unwrap())
        .collect();
    // The left panel is the view from above (x right, y up).
    let top = 0..images[0].width / 2;
    let (gripper_a, object_a) = (
        centroid(&images[0], Rgb::RED, top.clone()),
        centroid(&images[0], Rgb::BROWN, top.clone()),
    );
    let (gripper_b, object_b) = (
        centroid(&images[1], Rgb::RED, top.clone()),
        centroid(&images[1], Rgb::BROWN, top),
    );
    // Gripper at x = −0.1, y = 0 left of and below the object at (0.1, 0.1).
    assert!(
        gripper_a.0 < object_a.0 && gripper_a.1 > object_a.1,
        "{gripper_a:?} {object_a:?}"
    );
    // The object stays; the gripper moves right by 1.5× its first x
    // distance to the object (0.3 m against 0.2 m), and not up or down.
    assert!((object_b.0 - object_a.0).abs() < 0.5 && (object_b.1 - object_a.1).abs() < 0.5);
    let per_metre = (object_a.0 - gripper_a.0) / 0.2;
    assert!(
        ((gripper_b.0 - gripper_a.0) - 0.3 * per_metre).abs() < 1.5,
        "{gripper_b:?}"
    );
    assert!((gripper_b.1 - gripper_a.1).abs() < 0.5);
    // The same metres per pixel in y: the object is 0.1 m above the gripper.
    assert!(((gripper_a.1 - object_a.1) - 0.1 * per_metre).abs() < 1.5);
}
