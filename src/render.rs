//! `shoal render` and `shoal compare`: watching a trained agent, and reading
//! several runs side by side.

use std::path::{Path, PathBuf};

use shoal_rl_algo::HacFrame;
use shoal_rl_core::{Env, Error, Learner, Policy, Result};
use shoal_rl_env::arm::ArmObs;
use shoal_rl_eval::{
    ArmFrameInput, ChainTask, RenderOptions, WormFrameInput, compare_runs, render_arm,
    render_chain, render_worm,
};

use crate::algos::make_hac;
use crate::config::RunConfig;
use crate::train::{Registries, eval_seed, load_run_state};
use shoal_rl_registry::Scene;

/// Most episodes `shoal render` draws into one GIF.
pub const MAX_RENDER_EPISODES: usize = 100;

/// `shoal render`: rolls out the selected checkpoint's frozen policy for
/// `episodes` episodes (on the evaluation seeds) and writes an animated GIF
/// plus a PNG of the last frame. A HAC agent's subgoals are drawn too.
pub fn render(run_dir: &Path, episodes: usize, checkpoint: &str, out: Option<&Path>) -> Result<()> {
    // Every frame of every episode is held in memory until the GIF is encoded.
    crate::cli::check_episodes_flag(episodes, MAX_RENDER_EPISODES)?;
    let (cfg, state) = load_run_state(run_dir, &crate::cli::parse_checkpoint(checkpoint)?)?;
    let out = out.map_or_else(|| run_dir.join("render.gif"), Path::to_path_buf);
    let seed = eval_seed(&cfg);
    let envs = Registries::default().envs;
    let entry = envs.get(&cfg.env.kind)?;
    let Some(scene) = entry.scene else {
        let renderable: Vec<&str> = envs
            .entries()
            .iter()
            .filter(|e| e.scene.is_some())
            .map(|e| e.id)
            .collect();
        return Err(Error::Config(format!(
            "no renderer for env `{}` (renderable: {})",
            entry.id,
            renderable.join(", ")
        )));
    };
    let hac = cfg.algo.kind() == "hac";
    let (gif, png) = match (scene(&cfg.env.settings)?, hac) {
        (Scene::Arm(layout), true) => {
            let frames = hac_frames(&cfg, &state, episodes, seed, |f| {
                arm_frame(f.episode, &f.observation, &f.subgoals)
            })?;
            render_arm(&layout, &frames, &out)?
        }
        (Scene::Chain(task), true) => {
            let frames = hac_frames(&cfg, &state, episodes, seed, |f| {
                task.frame(f.episode, &f.observation, &f.subgoals)
            })?;
            render_chain(&frames, task.top_view(), &out, &chain_options(&task))?
        }
        (Scene::Chain(task), _) => {
            let frames = policy_frames(&cfg, &state, episodes, seed, |episode, obs| {
                task.frame(episode, obs, &[])
            })?;
            render_chain(&frames, task.top_view(), &out, &chain_options(&task))?
        }
        (Scene::Worm(worm), _) => {
            let policy = frozen_policy(&cfg, &state)?;
            let mut env = shoal_rl_env::Worm::new(worm)?;
            let frames = rollout(
                &mut env,
                policy.as_ref(),
                episodes,
                seed,
                |env, _, episode| Ok(WormFrameInput::new(env.outline()).episode(episode)),
            )?;
            render_worm(&frames, &out)?
        }
        (Scene::Arm(layout), _) => {
            let frames = policy_frames(&cfg, &state, episodes, seed, |episode, obs| {
                arm_frame(episode, obs, &[])
            })?;
            render_arm(&layout, &frames, &out)?
        }
    };
    println!("{}\n{}", gif.display(), png.display());
    Ok(())
}

/// The checkpointed HAC agent's frozen episodes on the evaluation seeds, a
/// frame per step drawn by `frame` (which sees every level's subgoal).
fn hac_frames<T>(
    cfg: &RunConfig,
    state: &[u8],
    episodes: usize,
    seed: u64,
    frame: impl Fn(&HacFrame) -> Result<T>,
) -> Result<Vec<T>> {
    let mut hac = make_hac(&Registries::default().learners(cfg).context(0, 1.0)?)?;
    hac.load_state(state)?;
    hac.watch(episodes, seed)?.iter().map(frame).collect()
}

/// The default render settings, titled for the jointed task.
fn chain_options(task: &ChainTask) -> RenderOptions {
    RenderOptions {
        title: Some(task.title().into()),
        ..RenderOptions::default()
    }
}

/// The checkpointed agent's policy, frozen.
fn frozen_policy(cfg: &RunConfig, state: &[u8]) -> Result<Box<dyn Policy>> {
    let mut learner = Registries::default().learners(cfg).learner(0, 1.0)?;
    learner.load_state(state)?;
    learner.policy().ok_or_else(|| {
        Error::Config(format!(
            "algo `{}` has no stateless frozen policy to render",
            cfg.algo.kind()
        ))
    })
}

/// Runs `episodes` frozen-policy episodes and returns the frames `frame`
/// draws from the env, its observation and the episode index before every
/// step and after the last one.
fn rollout<E: Env, T>(
    env: &mut E,
    policy: &dyn Policy,
    episodes: usize,
    seed: u64,
    mut frame: impl FnMut(&E, &[f32], usize) -> Result<T>,
) -> Result<Vec<T>> {
    let mut frames = Vec::new();
    for episode in 0..episodes {
        let mut obs = env.reset(Some(seed + episode as u64));
        loop {
            frames.push(frame(env, &obs, episode)?);
            let step = env.step(&policy.act(&obs))?;
            obs = step.obs;
            if step.terminated || step.truncated {
                frames.push(frame(env, &obs, episode)?);
                break;
            }
        }
    }
    Ok(frames)
}

/// The checkpointed agent's frozen-policy episodes on the goal env and the
/// evaluation seeds, a frame per observation drawn by `frame(episode, obs)`.
fn policy_frames<T>(
    cfg: &RunConfig,
    state: &[u8],
    episodes: usize,
    seed: u64,
    frame: impl Fn(usize, &[f32]) -> Result<T>,
) -> Result<Vec<T>> {
    let policy = frozen_policy(cfg, state)?;
    let mut env = Registries::default().envs.make_goal_env(&cfg.env)?;
    rollout(
        &mut env,
        policy.as_ref(),
        episodes,
        seed,
        |_, obs, episode| frame(episode, obs),
    )
}

/// An arm-task frame of `episode` from an observation and the subgoals of a hierarchy.
fn arm_frame(episode: usize, obs: &[f32], subgoals: &[Vec<f32>]) -> Result<ArmFrameInput> {
    let view = ArmObs::new(obs)
        .ok_or_else(|| Error::Shape(format!("arm observation of length {}", obs.len())))?;
    let subgoals = subgoals
        .iter()
        .map(|g| {
            <[f32; 3]>::try_from(g.as_slice())
                .map_err(|_| Error::Shape(format!("subgoal of {} values, expected 3", g.len())))
        })
        .collect::<Result<_>>()?;
    Ok(ArmFrameInput {
        episode,
        gripper: view.gripper_position(),
        object: view.object_position(),
        goal: view.desired_goal(),
        subgoals,
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
