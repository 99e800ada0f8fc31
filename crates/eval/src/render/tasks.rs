//! Scenes for shoal's tasks built from plain per-step numbers: the worm
//! seen from above, and the arm tasks (push, ball-to-net) from above and
//! from the side. shoal-rl-eval does not depend on shoal-rl-env; the caller copies
//! positions out of the environment into the input structs. With the `env`
//! feature an [`ArmLayout`] also comes straight from a task's config.

use std::path::{Path, PathBuf};

use shoal_rl_core::Result;

use super::scene::{Bounds, Frame, Rgb, Scene, Shape, Trail, View};
use super::{png_beside, render_gif};

/// Light red for the gripper's recent path: visible, but behind the object's.
const GRIPPER_TRAIL: Rgb = Rgb(240, 160, 160);
/// Dark blue for the worm's joints, on its lighter body.
const JOINT: Rgb = Rgb(20, 60, 110);
/// Steps of gripper path drawn behind it.
const GRIPPER_TRAIL_STEPS: usize = 30;

/// Size, speed and length of a rendered rollout.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderOptions {
    /// Picture size in pixels; `None` picks the task's default (720 × 432 for
    /// the worm, 1000 × 440 for the two-panel arm views).
    pub size: Option<(u32, u32)>,
    /// GIF frames per second. Default 20.
    pub fps: f32,
    /// At most this many frames: longer rollouts show every k-th step (always
    /// including the last), which keeps a 1000-step episode to a GIF of a
    /// few megabytes. Trails still use every step. Default 300.
    pub max_frames: usize,
    /// Title at the top left; `None` names the task.
    pub title: Option<String>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            size: None,
            fps: 20.0,
            max_frames: 300,
            title: None,
        }
    }
}

impl RenderOptions {
    /// Indices of the steps to draw out of `steps`: evenly strided, the last
    /// always included.
    pub(crate) fn frame_steps(&self, steps: usize) -> Vec<usize> {
        if steps == 0 {
            return Vec::new();
        }
        let stride = steps.div_ceil(self.max_frames.max(1));
        let mut picked: Vec<usize> = (0..steps).step_by(stride).collect();
        if picked.last() != Some(&(steps - 1)) {
            if picked.len() >= self.max_frames.max(1) {
                picked.pop();
            }
            picked.push(steps - 1);
        }
        picked
    }
}

// ---------------------------------------------------------------- worm ----

/// The worm at one step, seen from above (the `x`–`y` plane, metres).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WormFrameInput {
    /// Head tip, every joint, then tail tip (what `Worm::outline` returns).
    pub outline: Vec<[f32; 2]>,
    /// Centre of mass; `None` uses the mean of the link centres computed
    /// from the outline (exact for equal links).
    pub centre_of_mass: Option<[f32; 2]>,
    /// Which rollout episode the frame belongs to; the trail and the
    /// distance restart when it changes.
    pub episode: usize,
}

impl WormFrameInput {
    /// The worm given by its outline, centre of mass from the links.
    pub fn new(outline: Vec<[f32; 2]>) -> Self {
        WormFrameInput {
            outline,
            centre_of_mass: None,
            episode: 0,
        }
    }

    /// Sets the episode the frame belongs to.
    #[must_use]
    pub fn episode(mut self, episode: usize) -> Self {
        self.episode = episode;
        self
    }

    /// The centre of mass given or computed; `None` for an empty outline.
    fn com(&self) -> Option<[f32; 2]> {
        if let Some(c) = self.centre_of_mass {
            return Some(c);
        }
        match self.outline.as_slice() {
            [] => None,
            [only] => Some(*only),
            points => {
                let links = points.len() - 1;
                let sum = points.windows(2).fold([0.0, 0.0], |s, w| {
                    [
                        s[0] + 0.5 * (w[0][0] + w[1][0]),
                        s[1] + 0.5 * (w[0][1] + w[1][1]),
                    ]
                });
                Some([sum[0] / links as f32, sum[1] / links as f32])
            }
        }
    }
}

fn body_length(outline: &[[f32; 2]]) -> f32 {
    outline
        .windows(2)
        .map(|w| ((w[1][0] - w[0][0]).powi(2) + (w[1][1] - w[0][1]).powi(2)).sqrt())
        .sum()
}

/// The worm rollout as a one-panel scene seen from above: body (blue, with
/// dark joints), head (red), the centre of mass's trail (orange) from a
/// grey start line, and the caption `step t/T   x-distance ±d m` (after
/// `episode e/E` when there are several; trail and start restart with each).
///
/// The camera stays fixed on the whole trajectory when that is at most about
/// twice the size of a window around the body; for longer swims it follows
/// the centre of mass, and the grid lines moving past show the speed.
pub fn worm_scene(inputs: &[WormFrameInput], options: &RenderOptions) -> (Scene, Vec<Frame>) {
    let (width, height) = options.size.unwrap_or((720, 432));
    let title = options
        .title
        .clone()
        .unwrap_or_else(|| "worm, seen from above".into());
    let length = inputs
        .iter()
        .map(|i| body_length(&i.outline))
        .find(|l| *l > 0.0 && l.is_finite())
        .unwrap_or(1.0);
    let coms: Vec<Option<[f32; 2]>> = inputs.iter().map(WormFrameInput::com).collect();
    let start = coms.iter().flatten().next().copied().unwrap_or([0.0, 0.0]);
    let follow_window = [1.6 * length, 0.9 * length];
    let everything = Bounds::around(inputs.iter().flat_map(|i| i.outline.iter().copied()))
        .unwrap_or(Bounds::centred(start, follow_window[0], follow_window[1]))
        .padded(0.1 * length);
    let follow =
        everything.width() > 2.0 * follow_window[0] || everything.height() > 2.0 * follow_window[1];
    let view_title = if follow {
        "from above; the camera follows the centre of mass"
    } else {
        "from above"
    };
    let scene = Scene::new(
        title,
        width,
        height,
        vec![View::new(view_title, everything)],
    );

    let joint_radius =
        0.05 * length / inputs.first().map_or(1, |i| i.outline.len().max(2) - 1) as f32;
    let head_radius = 2.0 * joint_radius.max(0.01 * length);
    let steps = options.frame_steps(inputs.len());
    let mut trail = Trail::new();
    let mut frames = Vec::with_capacity(steps.len());
    let mut next = 0;
    let episodes = inputs.last().map_or(0, |i| i.episode + 1);
    let mut episode_start = start;
    for (step, (input, com)) in inputs.iter().zip(&coms).enumerate() {
        if step > 0 && inputs[step - 1].episode != input.episode {
            trail.clear();
            episode_start = com.unwrap_or(start);
        }
        if let Some(c) = com {
            trail.push(*c);
        }
        if steps.get(next) != Some(&step) {
            continue;
        }
        next += 1;
        let distance = com.map_or(0.0, |c| c[0] - episode_start[0]);
        let episode = episode_caption(input.episode, episodes);
        let mut frame = Frame::new(
            format!(
                "{episode}step {}/{}   x-distance {distance:+.2} m",
                step + 1,
                inputs.len()
            ),
            1,
        );
        let camera = if follow {
            Bounds::centred(com.unwrap_or(start), follow_window[0], follow_window[1])
        } else {
            everything
        };
        frame.camera(0, camera);
        let (y0, y1) = (camera.min[1] - length, camera.max[1] + length);
        frame.draw(
            0,
            Shape::Polyline {
                points: vec![[episode_start[0], y0], [episode_start[0], y1]],
                colour: Rgb::GREY,
                width: 1,
            },
        );
        frame.draw(
            0,
            Shape::Text {
                at: [
                    episode_start[0] + 0.03 * length,
                    camera.max[1] - 0.03 * length,
                ],
                text: "start".into(),
                colour: Rgb::GREY,
                size: 13,
            },
        );
        frame.draw(0, trail.shape(Rgb::ORANGE, 2));
        frame.draw(
            0,
            Shape::Polyline {
                points: input.outline.clone(),
                colour: Rgb::BLUE,
                width: 6,
            },
        );
        for joint in input.outline.iter().skip(1) {
            frame.draw(
                0,
                Shape::Circle {
                    centre: *joint,
                    radius: joint_radius,
                    colour: JOINT,
                    filled: true,
                },
            );
        }
        if let Some(head) = input.outline.first() {
            frame.draw(
                0,
                Shape::Circle {
                    centre: *head,
                    radius: head_radius,
                    colour: Rgb::RED,
                    filled: true,
                },
            );
        }
        if let Some(c) = com {
            frame.draw(
                0,
                Shape::Circle {
                    centre: *c,
                    radius: 0.8 * joint_radius,
                    colour: Rgb::BLACK,
                    filled: true,
                },
            );
        }
        frames.push(frame);
    }
    (scene, frames)
}

/// Renders a worm rollout with [`RenderOptions::default`] to `out_gif` and
/// the last frame to the same path with extension `.png`; returns both
/// paths. See [`worm_scene`] for what is drawn and [`render_gif`] for how
/// files are written.
///
/// ```
/// use shoal_rl_eval::{WormFrameInput, render_worm};
/// let dir = std::env::temp_dir().join(format!("shoal-doc-worm-{}", std::process::id()));
/// let steps: Vec<WormFrameInput> = (0..10)
///     .map(|t| {
///         let x = 0.05 * t as f32;
///         WormFrameInput::new((0..6).map(|j| [x - j as f32, 0.2 * (t as f32 + j as f32).sin()]).collect())
///     })
///     .collect();
/// let (gif, png) = render_worm(&steps, dir.join("worm.gif")).unwrap();
/// assert!(gif.exists() && png.ends_with("worm.png"));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn render_worm(
    inputs: &[WormFrameInput],
    out_gif: impl AsRef<Path>,
) -> Result<(PathBuf, PathBuf)> {
    render_worm_with(inputs, out_gif, &RenderOptions::default())
}

/// [`render_worm`] with explicit size, speed, frame cap and title.
pub fn render_worm_with(
    inputs: &[WormFrameInput],
    out_gif: impl AsRef<Path>,
    options: &RenderOptions,
) -> Result<(PathBuf, PathBuf)> {
    let gif = out_gif.as_ref().to_path_buf();
    let png = png_beside(&gif)?;
    let (scene, frames) = worm_scene(inputs, options);
    render_gif(&scene, &frames, &gif, &png, options.fps)?;
    Ok((gif, png))
}

// ----------------------------------------------------------------- arm ----

/// The thing the arm moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ArmObject {
    /// A cube (arm push), drawn axis-aligned: its rotation is not shown.
    Box {
        /// Half the side length, m.
        half_size: f32,
    },
    /// A ball (ball-to-net).
    Ball {
        /// Radius, m.
        radius: f32,
    },
}

impl ArmObject {
    fn extent(&self) -> f32 {
        match *self {
            ArmObject::Box { half_size } => half_size,
            ArmObject::Ball { radius } => radius,
        }
    }

    /// The object (or a hollow marker of its size) centred on `c`.
    fn shape(&self, c: [f32; 2], colour: Rgb, filled: bool) -> Shape {
        match *self {
            ArmObject::Box { half_size: h } => Shape::Rect {
                min: [c[0] - h, c[1] - h],
                max: [c[0] + h, c[1] + h],
                colour,
                filled,
            },
            ArmObject::Ball { radius } => Shape::Circle {
                centre: c,
                radius,
                colour,
                filled,
            },
        }
    }
}

/// What stays fixed during an arm episode. World frame z up, metres, the
/// table top the plane `z = table_height` centred on `(0, 0)`; the defaults
/// are those of `arm-push-v1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArmLayout {
    /// Half the table's size along x and y. Default `[0.25, 0.35]`.
    pub table_half_extents: [f32; 2],
    /// Height of the table top. Default 0.4.
    pub table_height: f32,
    /// The object pushed or struck. Default a box of half size 0.025.
    pub object: ArmObject,
    /// Success distance between object and goal, drawn as the goal's ring.
    /// Default 0.05.
    pub goal_radius: f32,
    /// Radius of the gripper (a vertical cylinder). Default 0.02.
    pub gripper_radius: f32,
    /// Half height of the gripper. Default 0.03.
    pub gripper_half_height: f32,
}

impl Default for ArmLayout {
    fn default() -> Self {
        ArmLayout {
            table_half_extents: [0.25, 0.35],
            table_height: 0.4,
            object: ArmObject::Box { half_size: 0.025 },
            goal_radius: 0.05,
            gripper_radius: 0.02,
            gripper_half_height: 0.03,
        }
    }
}

/// The scene a task's settings describe: its table, gripper, success radius
/// and `object`.
#[cfg(feature = "env")]
impl ArmLayout {
    fn from_arm(arm: &shoal_rl_env::arm::ArmConfig, object: ArmObject) -> Self {
        ArmLayout {
            table_half_extents: arm.table_half_extents,
            table_height: arm.table_height,
            object,
            goal_radius: arm.distance_threshold,
            gripper_radius: arm.gripper.radius(),
            gripper_half_height: arm.gripper.half_height(),
        }
    }
}

#[cfg(feature = "env")]
impl From<&shoal_rl_env::ArmPushConfig> for ArmLayout {
    fn from(push: &shoal_rl_env::ArmPushConfig) -> Self {
        let object = ArmObject::Box {
            half_size: push.box_half_size,
        };
        ArmLayout::from_arm(&push.arm, object)
    }
}

#[cfg(feature = "env")]
impl From<&shoal_rl_env::BallToNetConfig> for ArmLayout {
    fn from(ball: &shoal_rl_env::BallToNetConfig) -> Self {
        let object = ArmObject::Ball {
            radius: ball.ball_radius,
        };
        ArmLayout::from_arm(&ball.arm, object)
    }
}

/// The arm task at one step; positions are `[x, y, z]` centres, metres.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArmFrameInput {
    /// Which rollout episode the frame belongs to; the trails restart
    /// when it changes.
    pub episode: usize,
    /// Gripper centre.
    pub gripper: [f32; 3],
    /// Object (box or ball) centre: the achieved goal.
    pub object: [f32; 3],
    /// Desired goal.
    pub goal: [f32; 3],
    /// Subgoals proposed by the upper levels of a hierarchical agent (HAC),
    /// lowest level first; drawn as hollow purple markers of the object's size.
    pub subgoals: Vec<[f32; 3]>,
}

/// `episode e/E   ` before a caption when a render holds several episodes.
pub(super) fn episode_caption(episode: usize, episodes: usize) -> String {
    if episodes > 1 {
        format!("episode {}/{episodes}   ", episode + 1)
    } else {
        String::new()
    }
}

fn distance3(a: [f32; 3], b: [f32; 3]) -> f32 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// The arm rollout as two panels: from above (x–y) and from the side (x–z),
/// sharing the x axis. Drawn: the table (grey), the goal's success ring
/// (green), subgoals (hollow purple), the object's trail (orange) and the
/// object (brown), and the gripper (red ring from above, red block from the
/// side) with its last steps faint; the trails restart with each episode.
/// Caption: `step t/T   object–goal d m` (after `episode e/E` when there are
/// several),
/// plus `goal reached` once within [`ArmLayout::goal_radius`].
pub fn arm_scene(
    layout: &ArmLayout,
    inputs: &[ArmFrameInput],
    options: &RenderOptions,
) -> (Scene, Vec<Frame>) {
    let (width, height) = options.size.unwrap_or((1000, 440));
    let title = options
        .title
        .clone()
        .unwrap_or_else(|| "arm, from above and from the side".into());
    let [hx, hy] = layout.table_half_extents;
    let top_z = layout.table_height;
    let extent = layout.object.extent();
    let margin = 0.03 + extent;
    let positions = || {
        inputs
            .iter()
            .flat_map(|i| {
                [i.gripper, i.object, i.goal]
                    .into_iter()
                    .chain(i.subgoals.iter().copied())
            })
            .filter(|p| p.iter().all(|v| v.is_finite()))
    };
    let top = Bounds::around(
        positions()
            .map(|p| [p[0], p[1]])
            .chain([[-hx, -hy], [hx, hy]]),
    )
    .unwrap_or(Bounds::new([-hx, -hy], [hx, hy]))
    .padded(margin);
    let highest =
        positions().map(|p| p[2]).fold(top_z + 0.15, f32::max) + layout.gripper_half_height + 0.02;
    let lowest = positions()
        .map(|p| p[2] - extent)
        .fold(top_z - 0.03, f32::min)
        - 0.02;
    let side = Bounds::new([top.min[0], lowest], [top.max[0], highest]);
    let scene = Scene::new(
        title,
        width,
        height,
        vec![
            View::new("from above", top),
            View::new("from the side", side).axes("x (m)", "z (m)"),
        ],
    );

    let steps = options.frame_steps(inputs.len());
    let mut object_top = Trail::new();
    let mut object_side = Trail::new();
    let mut gripper_top = Trail::bounded(GRIPPER_TRAIL_STEPS);
    let mut gripper_side = Trail::bounded(GRIPPER_TRAIL_STEPS);
    let mut frames = Vec::with_capacity(steps.len());
    let mut next = 0;
    let episodes = inputs.last().map_or(0, |i| i.episode + 1);
    for (step, input) in inputs.iter().enumerate() {
        if step > 0 && inputs[step - 1].episode != input.episode {
            for trail in [
                &mut object_top,
                &mut object_side,
                &mut gripper_top,
                &mut gripper_side,
            ] {
                trail.clear();
            }
        }
        let [ox, oy, oz] = input.object;
        let [gx, gy, gz] = input.gripper;
        object_top.push([ox, oy]);
        object_side.push([ox, oz]);
        gripper_top.push([gx, gy]);
        gripper_side.push([gx, gz]);
        if steps.get(next) != Some(&step) {
            continue;
        }
        next += 1;
        let distance = distance3(input.object, input.goal);
        let reached = if distance <= layout.goal_radius {
            "   goal reached"
        } else {
            ""
        };
        let episode = episode_caption(input.episode, episodes);
        let mut frame = Frame::new(
            format!(
                "{episode}step {}/{}   object–goal {distance:.3} m{reached}",
                step + 1,
                inputs.len()
            ),
            2,
        );
        // From above.
        frame.draw(
            0,
            Shape::Rect {
                min: [-hx, -hy],
                max: [hx, hy],
                colour: Rgb::LIGHT_GREY,
                filled: true,
            },
        );
        frame.draw(
            0,
            Shape::Rect {
                min: [-hx, -hy],
                max: [hx, hy],
                colour: Rgb::GREY,
                filled: false,
            },
        );
        // From the side: the table top as a slab.
        frame.draw(
            1,
            Shape::Rect {
                min: [-hx, top_z - 0.03],
                max: [hx, top_z],
                colour: Rgb::LIGHT_GREY,
                filled: true,
            },
        );
        frame.draw(
            1,
            Shape::Polyline {
                points: vec![[-hx, top_z], [hx, top_z]],
                colour: Rgb::GREY,
                width: 2,
            },
        );
        let [qx, qy, qz] = input.goal;
        for (view, centre) in [(0, [qx, qy]), (1, [qx, qz])] {
            frame.draw(
                view,
                Shape::Circle {
                    centre,
                    radius: layout.goal_radius,
                    colour: Rgb::GREEN,
                    filled: false,
                },
            );
            frame.draw(
                view,
                Shape::Circle {
                    centre,
                    radius: 0.2 * layout.goal_radius,
                    colour: Rgb::GREEN,
                    filled: true,
                },
            );
        }
        for sub in &input.subgoals {
            frame.draw(0, layout.object.shape([sub[0], sub[1]], Rgb::PURPLE, false));
            frame.draw(1, layout.object.shape([sub[0], sub[2]], Rgb::PURPLE, false));
        }
        frame.draw(0, gripper_top.shape(GRIPPER_TRAIL, 1));
        frame.draw(1, gripper_side.shape(GRIPPER_TRAIL, 1));
        frame.draw(0, object_top.shape(Rgb::ORANGE, 2));
        frame.draw(1, object_side.shape(Rgb::ORANGE, 2));
        frame.draw(0, layout.object.shape([ox, oy], Rgb::BROWN, true));
        frame.draw(1, layout.object.shape([ox, oz], Rgb::BROWN, true));
        // The gripper as a ring from above, so the object under it shows.
        frame.draw(
            0,
            Shape::Circle {
                centre: [gx, gy],
                radius: layout.gripper_radius,
                colour: Rgb::RED,
                filled: false,
            },
        );
        frame.draw(
            0,
            Shape::Circle {
                centre: [gx, gy],
                radius: 0.25 * layout.gripper_radius,
                colour: Rgb::RED,
                filled: true,
            },
        );
        let (r, h) = (layout.gripper_radius, layout.gripper_half_height);
        frame.draw(
            1,
            Shape::Rect {
                min: [gx - r, gz - h],
                max: [gx + r, gz + h],
                colour: Rgb::RED,
                filled: true,
            },
        );
        frames.push(frame);
    }
    (scene, frames)
}

/// Renders an arm rollout with [`RenderOptions::default`] to `out_gif` and
/// the last frame to the same path with extension `.png`; returns both
/// paths. See [`arm_scene`] for what is drawn and [`render_gif`] for how
/// files are written.
pub fn render_arm(
    layout: &ArmLayout,
    inputs: &[ArmFrameInput],
    out_gif: impl AsRef<Path>,
) -> Result<(PathBuf, PathBuf)> {
    render_arm_with(layout, inputs, out_gif, &RenderOptions::default())
}

/// [`render_arm`] with explicit size, speed, frame cap and title.
pub fn render_arm_with(
    layout: &ArmLayout,
    inputs: &[ArmFrameInput],
    out_gif: impl AsRef<Path>,
    options: &RenderOptions,
) -> Result<(PathBuf, PathBuf)> {
    let gif = out_gif.as_ref().to_path_buf();
    let png = png_beside(&gif)?;
    let (scene, frames) = arm_scene(layout, inputs, options);
    render_gif(&scene, &frames, &gif, &png, options.fps)?;
    Ok((gif, png))
}
