//! `render_mode="rgb_array"`: the current state drawn by shoal-rl-eval's renderer as RGB pixels.
//!
//! An env that renders records one frame input per reset and step (the
//! trails need the episode so far) and, when asked for a picture, has
//! shoal-rl-eval draw the scene's last frame in memory.

use shoal_rl_core::{Error, Result};
use shoal_rl_env::arm::ArmObs;
use shoal_rl_eval::{
    ArmFrameInput, ArmLayout, ChainFrameInput, ChainTask, RenderOptions, WormFrameInput, arm_scene,
    chain_scene, draw_frame, worm_scene,
};

/// An RGB picture, row-major, 3 bytes per pixel.
pub struct Image {
    /// Height in pixels.
    pub height: usize,
    /// Width in pixels.
    pub width: usize,
    /// `height · width · 3` bytes.
    pub rgb: Vec<u8>,
}

/// The frames of the current episode.
pub enum Recording {
    /// Worm outlines (head tip, joints, tail tip), one per step.
    Worm(Vec<WormFrameInput>),
    /// Gripper, object and goal positions of an arm task.
    Arm {
        /// What stays fixed: table, object shape, goal ring, gripper.
        layout: ArmLayout,
        /// One per step.
        frames: Vec<ArmFrameInput>,
    },
    /// The poses of a jointed task (UR5 reacher, pendulum).
    Chain {
        /// How observations become poses.
        task: ChainTask,
        /// One per step.
        frames: Vec<ChainFrameInput>,
    },
}

impl Recording {
    /// An empty recording of an arm task laid out as `layout`.
    pub fn arm(layout: ArmLayout) -> Self {
        Recording::Arm {
            layout,
            frames: Vec::new(),
        }
    }

    /// An empty recording of a jointed task.
    pub fn chain(task: ChainTask) -> Self {
        Recording::Chain {
            task,
            frames: Vec::new(),
        }
    }

    /// Forgets the episode so far (on reset).
    pub fn clear(&mut self) {
        match self {
            Recording::Worm(frames) => frames.clear(),
            Recording::Arm { frames, .. } => frames.clear(),
            Recording::Chain { frames, .. } => frames.clear(),
        }
    }

    /// Whether nothing was recorded yet (no reset since the env was made).
    pub fn is_empty(&self) -> bool {
        match self {
            Recording::Worm(frames) => frames.is_empty(),
            Recording::Arm { frames, .. } => frames.is_empty(),
            Recording::Chain { frames, .. } => frames.is_empty(),
        }
    }

    /// Records a worm outline.
    pub fn push_worm(&mut self, outline: Vec<[f32; 2]>) {
        if let Recording::Worm(frames) = self {
            frames.push(WormFrameInput::new(outline));
        }
    }

    /// Records an arm task's state, read from its flat observation.
    pub fn push_arm(&mut self, obs: &[f32]) {
        if let (Recording::Arm { frames, .. }, Some(view)) = (self, ArmObs::new(obs)) {
            frames.push(ArmFrameInput {
                episode: 0,
                gripper: view.gripper_position(),
                object: view.object_position(),
                goal: view.desired_goal(),
                subgoals: Vec::new(),
            });
        }
    }

    /// Records a jointed task's state, read from its flat observation.
    pub fn push_chain(&mut self, obs: &[f32]) {
        if let Recording::Chain { task, frames } = self
            && let Ok(frame) = task.frame(0, obs, &[])
        {
            frames.push(frame);
        }
    }

    /// The latest recorded state with the episode's trails.
    pub fn draw(&self) -> Result<Image> {
        // One frame drawn: the last step, with trails through every step.
        let options = RenderOptions {
            max_frames: 1,
            ..RenderOptions::default()
        };
        let (scene, frames) = match self {
            Recording::Worm(inputs) => worm_scene(inputs, &options),
            Recording::Arm { layout, frames } => arm_scene(layout, frames, &options),
            Recording::Chain { task, frames } => {
                let options = RenderOptions {
                    title: Some(task.title().into()),
                    ..options
                };
                chain_scene(frames, task.top_view(), &options)
            }
        };
        let Some(last) = frames.last() else {
            return Err(Error::NeedsReset);
        };
        let image = draw_frame(&scene, last)?;
        Ok(Image {
            height: image.height as usize,
            width: image.width as usize,
            rgb: image.rgb,
        })
    }
}
