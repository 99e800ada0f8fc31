//! Scenes of the jointed tasks (the UR5 reacher, the pendulum): the links
//! as a polyline through the joints, the goal pose and each hierarchy
//! level's subgoal pose as faint copies of the arm. With the `env` feature
//! a [`ChainTask`] turns a task's observations into frames.

use std::path::{Path, PathBuf};

use shoal_rl_core::Result;

use super::scene::{Bounds, Frame, Rgb, Scene, Shape, Trail, View};
use super::tasks::{RenderOptions, episode_caption};
use super::{png_beside, render_gif};

/// The colour of each subgoal level's pose, lowest level first.
const SUBGOAL_COLOURS: [Rgb; 3] = [Rgb::PURPLE, Rgb::ORANGE, Rgb::BROWN];

/// A jointed task at one step; points are `[x, y, z]`, metres, from the
/// base through every joint to the tip.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChainFrameInput {
    /// Which rollout episode the frame belongs to; the tip's trail restarts
    /// when it changes.
    pub episode: usize,
    /// The chain's points.
    pub points: Vec<[f32; 3]>,
    /// The goal pose's points.
    pub goal: Vec<[f32; 3]>,
    /// The pose each upper level of a hierarchy (HAC) proposes, lowest level first.
    pub subgoals: Vec<Vec<[f32; 3]>>,
    /// The task's distance to its goal, as the caption shows it (`"angle
    /// error 12.3°"`).
    pub status: String,
}

/// The rollout of a jointed task, from the side (x–z) and, when `top_view`,
/// from above (x–y). Drawn: the goal pose (green), subgoal poses (purple,
/// orange, brown for levels 1, 2, 3), the tip's trail (light blue) and the
/// chain (blue, joints dark).
pub fn chain_scene(
    inputs: &[ChainFrameInput],
    top_view: bool,
    options: &RenderOptions,
) -> (Scene, Vec<Frame>) {
    let (width, height) = options
        .size
        .unwrap_or(if top_view { (1000, 480) } else { (560, 480) });
    let title = options
        .title
        .clone()
        .unwrap_or_else(|| "jointed task".into());
    let every_point = || {
        inputs.iter().flat_map(|i| {
            i.points
                .iter()
                .chain(&i.goal)
                .chain(i.subgoals.iter().flatten())
                .copied()
                .filter(|p| p.iter().all(|v| v.is_finite()))
        })
    };
    let bounds = |axes: [usize; 2]| {
        Bounds::around(every_point().map(|p| [p[axes[0]], p[axes[1]]]))
            .unwrap_or(Bounds::new([-1.0, -1.0], [1.0, 1.0]))
            .padded(0.08)
    };
    // Each panel: the world axes it shows, its title and its vertical axis' label.
    const SIDE: ([usize; 2], &str, &str) = ([0, 2], "from the side", "z (m)");
    const ABOVE: ([usize; 2], &str, &str) = ([0, 1], "from above", "y (m)");
    let panels: &[([usize; 2], &str, &str)] = if top_view { &[SIDE, ABOVE] } else { &[SIDE] };
    let views = panels
        .iter()
        .map(|&(axes, name, label)| View::new(name, bounds(axes)).axes("x (m)", label))
        .collect();
    let scene = Scene::new(title, width, height, views);
    let episodes = inputs.last().map_or(0, |i| i.episode + 1);
    let steps = options.frame_steps(inputs.len());
    let mut trails: Vec<Trail> = panels.iter().map(|_| Trail::new()).collect();
    let mut frames = Vec::with_capacity(steps.len());
    let mut next = 0;
    for (step, input) in inputs.iter().enumerate() {
        if step > 0 && inputs[step - 1].episode != input.episode {
            trails.iter_mut().for_each(Trail::clear);
        }
        for ((axes, ..), trail) in panels.iter().zip(&mut trails) {
            if let Some(tip) = input.points.last() {
                trail.push([tip[axes[0]], tip[axes[1]]]);
            }
        }
        if steps.get(next) != Some(&step) {
            continue;
        }
        next += 1;
        let episode = episode_caption(input.episode, episodes);
        let mut frame = Frame::new(
            format!(
                "{episode}step {}/{}   {}",
                step + 1,
                inputs.len(),
                input.status
            ),
            panels.len(),
        );
        for (view, (&(axes, ..), trail)) in panels.iter().zip(&trails).enumerate() {
            let project = |points: &[[f32; 3]]| -> Vec<[f32; 2]> {
                points.iter().map(|p| [p[axes[0]], p[axes[1]]]).collect()
            };
            draw_pose(&mut frame, view, &project(&input.goal), Rgb::GREEN, 3);
            for (level, subgoal) in input.subgoals.iter().enumerate() {
                let colour = SUBGOAL_COLOURS[level % SUBGOAL_COLOURS.len()];
                draw_pose(&mut frame, view, &project(subgoal), colour, 2);
            }
            frame.draw(view, trail.shape(Rgb(170, 200, 230), 1));
            let chain = project(&input.points);
            draw_pose(&mut frame, view, &chain, Rgb::BLUE, 5);
            for joint in chain {
                frame.draw(
                    view,
                    Shape::Circle {
                        centre: joint,
                        radius: 0.015,
                        colour: Rgb(20, 60, 110),
                        filled: true,
                    },
                );
            }
        }
        frames.push(frame);
    }
    (scene, frames)
}

/// A pose drawn link by link: a folded arm seen from above doubles back on
/// itself, and a wide polyline's join at such a turn is a spike across the
/// picture.
fn draw_pose(frame: &mut Frame, view: usize, points: &[[f32; 2]], colour: Rgb, width: u32) {
    for link in points.windows(2) {
        frame.draw(
            view,
            Shape::Polyline {
                points: link.to_vec(),
                colour,
                width,
            },
        );
    }
}

/// Renders a jointed task's rollout to `out_gif` and its last frame to the
/// same path with extension `.png`; returns both paths.
pub fn render_chain(
    inputs: &[ChainFrameInput],
    top_view: bool,
    out_gif: impl AsRef<Path>,
    options: &RenderOptions,
) -> Result<(PathBuf, PathBuf)> {
    let gif = out_gif.as_ref().to_path_buf();
    let png = png_beside(&gif)?;
    let (scene, frames) = chain_scene(inputs, top_view, options);
    render_gif(&scene, &frames, &gif, &png, options.fps)?;
    Ok((gif, png))
}

/// A jointed task of shoal-rl-env, as the renderer needs it: how its
/// observations and subgoals become poses.
#[cfg(feature = "env")]
#[derive(Clone, Debug, PartialEq)]
pub enum ChainTask {
    /// `ur5-reacher`: subgoals begin with the three joint angles.
    Ur5,
    /// `pendulum` with a pole of this length: subgoals begin with the angle.
    Pendulum {
        /// Hinge to ball, m.
        length: f32,
    },
}

#[cfg(feature = "env")]
impl From<&shoal_rl_env::Ur5ReacherConfig> for ChainTask {
    fn from(_: &shoal_rl_env::Ur5ReacherConfig) -> Self {
        ChainTask::Ur5
    }
}

#[cfg(feature = "env")]
impl From<&shoal_rl_env::InvertedPendulumConfig> for ChainTask {
    fn from(pendulum: &shoal_rl_env::InvertedPendulumConfig) -> Self {
        ChainTask::Pendulum {
            length: pendulum.length,
        }
    }
}

#[cfg(feature = "env")]
impl ChainTask {
    /// The picture's title.
    pub fn title(&self) -> &'static str {
        match self {
            ChainTask::Ur5 => "UR5 reacher: arm (blue), goal (green), subgoals by level",
            ChainTask::Pendulum { .. } => "pendulum: pole (blue), goal (green), subgoals by level",
        }
    }

    /// Whether the task is drawn from above too (the pendulum swings in one plane).
    pub fn top_view(&self) -> bool {
        matches!(self, ChainTask::Ur5)
    }

    /// The pose of joint angles `angles`.
    fn pose(&self, angles: &[f32]) -> Result<Vec<[f32; 3]>> {
        let need = match self {
            ChainTask::Ur5 => 3,
            ChainTask::Pendulum { .. } => 1,
        };
        if angles.len() < need {
            return Err(shoal_rl_core::Error::Shape(format!(
                "a pose needs {need} angles, got {}",
                angles.len()
            )));
        }
        Ok(match *self {
            ChainTask::Ur5 => shoal_rl_env::ur5_joint_points(&angles[..3]).to_vec(),
            ChainTask::Pendulum { length } => {
                let (sin, cos) = angles[0].sin_cos();
                vec![[0.0, 0.0, 0.0], [length * sin, 0.0, length * cos]]
            }
        })
    }

    /// The frame of `episode` for observation `obs` and the subgoals of a
    /// hierarchy's upper levels (lowest first).
    pub fn frame(
        &self,
        episode: usize,
        obs: &[f32],
        subgoals: &[Vec<f32>],
    ) -> Result<ChainFrameInput> {
        let (angles, goal, status) = match self {
            ChainTask::Ur5 if obs.len() == 12 => {
                let error = shoal_rl_env::ur5_angle_error(&obs[6..9], &obs[9..12]);
                let status = format!("largest angle error {:.1}°", error.to_degrees());
                (&obs[..3], &obs[9..12], status)
            }
            ChainTask::Pendulum { .. } if obs.len() == 7 => {
                let status = format!(
                    "angle {:.1}° (goal {:.1}°), speed {:.2} (goal {:.2}) rad/s",
                    obs[3].to_degrees(),
                    obs[5].to_degrees(),
                    obs[4],
                    obs[6]
                );
                (&obs[3..4], &obs[5..6], status)
            }
            _ => {
                return Err(shoal_rl_core::Error::Shape(format!(
                    "an observation of {} values is not one of {self:?}",
                    obs.len()
                )));
            }
        };
        Ok(ChainFrameInput {
            episode,
            points: self.pose(angles)?,
            goal: self.pose(goal)?,
            subgoals: subgoals
                .iter()
                .map(|g| self.pose(g))
                .collect::<Result<_>>()?,
            status,
        })
    }
}

#[cfg(all(test, feature = "env"))]
mod tests {
    use super::*;

    fn near(a: &[[f32; 3]], b: &[[f32; 3]]) -> bool {
        a.len() == b.len()
            && a.iter()
                .flatten()
                .zip(b.iter().flatten())
                .all(|(x, y)| (x - y).abs() < 1e-5)
    }

    #[test]
    fn pendulum_frames_put_the_ball_where_the_angle_says() {
        let task = ChainTask::Pendulum { length: 0.5 };
        // Upright, goal a quarter turn toward +x, one subgoal hanging down.
        let obs = [1.0, 0.0, 0.0, 0.0, 0.0, std::f32::consts::FRAC_PI_2, 0.0];
        let subgoal = vec![std::f32::consts::PI, 3.0];
        let frame = task.frame(2, &obs, &[subgoal]).unwrap();
        assert_eq!(frame.episode, 2);
        assert!(near(&frame.points, &[[0.0, 0.0, 0.0], [0.0, 0.0, 0.5]]));
        assert!(near(&frame.goal, &[[0.0, 0.0, 0.0], [0.5, 0.0, 0.0]]));
        assert!(near(
            &frame.subgoals[0],
            &[[0.0, 0.0, 0.0], [0.0, 0.0, -0.5]]
        ));
        assert!(
            task.frame(0, &obs[..6], &[]).is_err(),
            "a short observation is refused"
        );
    }

    #[test]
    fn ur5_frames_pose_the_arm_goal_and_each_subgoal_level() {
        let task = ChainTask::Ur5;
        // Arm straight out along x; goal panned a quarter turn to +y.
        let half_pi = std::f32::consts::FRAC_PI_2;
        let mut obs = vec![0.0; 12];
        obs[9] = half_pi;
        let subgoals = vec![vec![0.0, -half_pi, 0.0, 1.0, 1.0, 1.0], vec![half_pi; 6]];
        let frame = task.frame(0, &obs, &subgoals).unwrap();
        let (h, reach) = (
            shoal_rl_env::UR5_SHOULDER_HEIGHT,
            shoal_rl_env::UR5_UPPER_ARM + shoal_rl_env::UR5_FOREARM,
        );
        assert!(near(&frame.points[3..], &[[reach, 0.0, h]]));
        assert!(near(&frame.goal[3..], &[[0.0, reach, h]]));
        assert_eq!(frame.subgoals.len(), 2);
        assert!(
            near(&frame.subgoals[0][3..], &[[0.0, 0.0, h + reach]]),
            "lifted upright"
        );
        assert!(frame.status.contains("90.0°"), "{}", frame.status);
    }
}
