//! `shoal render` and `shoal compare`: watching a trained agent, and reading
//! several runs side by side.

use std::path::{Path, PathBuf};

use shoal_core::{Env, Error, Policy, Result};
use shoal_env::arm::ArmObs;
use shoal_eval::{
    ArmFrameInput, ArmLayout, ArmObject, WormFrameInput, compare_runs, render_arm, render_worm,
};

use crate::config::EnvConfig;
use crate::train::{eval_seed, load_run};

/// `shoal render`: rolls out the latest checkpoint's frozen policy for
/// `episodes` episodes (on the evaluation seeds) and writes an animated GIF
/// plus a PNG of the last frame.
pub fn render(run_dir: &Path, episodes: usize, out: Option<&Path>) -> Result<()> {
    if episodes == 0 {
        return Err(Error::Config("--episodes must be at least 1".into()));
    }
    let (cfg, learner) = load_run(run_dir)?;
    let policy = learner.policy().ok_or_else(|| {
        Error::Config(format!(
            "algo `{}` has no stateless frozen policy to render",
            cfg.algo.kind()
        ))
    })?;
    let out = out.map_or_else(|| run_dir.join("render.gif"), Path::to_path_buf);
    let seed = eval_seed(&cfg);
    let (gif, png) = match &cfg.env {
        EnvConfig::Worm(worm) => {
            let mut env = shoal_env::Worm::new(worm.clone())?;
            let mut frames = Vec::new();
            rollout(&mut env, policy.as_ref(), episodes, seed, |env, _| {
                frames.push(WormFrameInput::new(env.outline()));
                Ok(())
            })?;
            render_worm(&frames, &out)?
        }
        EnvConfig::ArmPush(push) => {
            let mut env = shoal_env::ArmPush::new(push.clone())?;
            let frames = arm_frames(&mut env, policy.as_ref(), episodes, seed)?;
            render_arm(&ArmLayout::default(), &frames, &out)?
        }
        EnvConfig::BallToNet(ball) => {
            let mut env = shoal_env::BallToNet::new(ball.clone())?;
            let frames = arm_frames(&mut env, policy.as_ref(), episodes, seed)?;
            let layout = ArmLayout {
                object: ArmObject::Ball {
                    radius: ball.ball_radius,
                },
                ..ArmLayout::default()
            };
            render_arm(&layout, &frames, &out)?
        }
        other => {
            return Err(Error::Config(format!(
                "no renderer for env `{}` (renderable: worm, arm-push, ball-to-net)",
                other.kind()
            )));
        }
    };
    println!("{}\n{}", gif.display(), png.display());
    Ok(())
}

/// Runs `episodes` frozen-policy episodes, calling `frame` with the env and
/// its observation before every step and after the last one.
fn rollout<E: Env>(
    env: &mut E,
    policy: &dyn Policy,
    episodes: usize,
    seed: u64,
    mut frame: impl FnMut(&E, &[f32]) -> Result<()>,
) -> Result<()> {
    for episode in 0..episodes {
        let mut obs = env.reset(Some(seed + episode as u64));
        loop {
            frame(env, &obs)?;
            let step = env.step(&policy.act(&obs))?;
            obs = step.obs;
            if step.terminated || step.truncated {
                frame(env, &obs)?;
                break;
            }
        }
    }
    Ok(())
}

/// Gripper, object and goal positions of arm-task rollouts, read from the
/// observations (the same layout for push and ball).
fn arm_frames<E: Env>(
    env: &mut E,
    policy: &dyn Policy,
    episodes: usize,
    seed: u64,
) -> Result<Vec<ArmFrameInput>> {
    let mut frames = Vec::new();
    rollout(env, policy, episodes, seed, |_, obs| {
        frames.push(arm_frame(obs)?);
        Ok(())
    })?;
    Ok(frames)
}

fn arm_frame(obs: &[f32]) -> Result<ArmFrameInput> {
    let view = ArmObs::new(obs)
        .ok_or_else(|| Error::Shape(format!("arm observation of length {}", obs.len())))?;
    Ok(ArmFrameInput {
        gripper: view.gripper_position(),
        object: view.object_position(),
        goal: view.desired_goal(),
        subgoals: Vec::new(),
    })
}

/// `shoal compare`: the summaries of several runs side by side, as an
/// aligned table, or Markdown with `--markdown`.
pub fn compare(run_dirs: &[PathBuf], markdown: bool) -> Result<()> {
    let table = compare_runs(run_dirs)?;
    if markdown {
        print!("{}", table.to_markdown());
    } else {
        print!("{}", table.to_terminal());
    }
    Ok(())
}
