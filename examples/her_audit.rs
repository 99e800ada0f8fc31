//! What the hindsight goals of a finished `ball-ddpg-her` (or `push-ddpg-her`) run taught, window by window of training episodes.
//!
//! ```text
//! cargo run --release --example her_audit -- runs/ball [window]
//! ```
//!
//! Reads the learner and replay buffer of the run's latest checkpoint (one worker: every
//! episode of the run while the buffer has not wrapped, oldest first) and
//! relabels each episode's transitions with the run's own HER settings
//! (`shoal_rl_algo::sample_episode`, `samples` per transition). The `her/…`
//! metrics of a run are shares of batches drawn from the whole buffer, so
//! they lag behind what the newest episodes contain; here every window of
//! `window` episodes (default 250) is counted on its own.
//!
//! Beside the library's categories ([`shoal_rl::algo::GoalOrigin`]) it splits
//! the relabels of episodes in which the object moved by whether the
//! transition comes after the gripper's last push ("rolling": from then on
//! nothing the gripper did in that episode changed where the object went,
//! so a hindsight success there rewards whatever the action was) and counts
//! rewards of 0 (successes) in each part. A push during step `t` is an
//! object that moved horizontally during the step and either had the
//! gripper within reach (horizontal centre distance ≤ gripper radius +
//! object radius + 1 cm, vertical overlap) at `t` or `t + 1`, or sped up
//! horizontally (a damped object on a flat table only slows down by itself).
//! Prints one Markdown row per window.
//!
//! Then it asks the checkpoint's critic how much the action matters: for
//! the newest window's relabelled transitions of moved objects, the
//! standard deviation of `Q(o, g, a)` over random actions `a`, before and
//! after the last push.

use std::path::Path;

use rand::RngExt;
use shoal_rl::algo::{
    Ddpg, Episode, GoalOrigin, GoalReward, HerConfig, TransitionBatch, sample_episode,
};
use shoal_rl::config::EnvConfig;
use shoal_rl::core::{Error, GoalEnv, Learner, Result, rng_from_seed};
use shoal_rl::env::arm::GripperShape;
use shoal_rl::env::arm::index::{GRIPPER_POS, OBJECT_POS};
use shoal_rl::eval::{CheckpointSelector, RunDir, load_checkpoint};
use shoal_rl::train::Registries;

/// Relabelled transitions drawn per stored transition.
const SAMPLES: usize = 40;
/// Horizontal movement (m) below which the object counts as still.
const STILL: f32 = 1e-3;
/// Slack (m) added to the touching distance for a push between two observations.
const SLACK: f32 = 0.01;

/// How close gripper and object centres get when they touch.
#[derive(Clone, Copy, Debug)]
struct Reach {
    /// Horizontal: gripper radius + object radius (+ slack).
    horizontal: f32,
    /// Vertical: gripper half height + object half height (+ slack).
    vertical: f32,
}

fn horizontal(a: &[f32], b: &[f32]) -> f32 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
}

fn within(obs: &[f32], reach: Reach) -> bool {
    let (gripper, object) = (&obs[GRIPPER_POS], &obs[OBJECT_POS]);
    horizontal(gripper, object) <= reach.horizontal
        && (gripper[2] - object[2]).abs() <= reach.vertical
}

/// The last step `t` whose transition pushed the object (see the module
/// docs), or `None` if the gripper never pushed it.
fn last_push(episode: &Episode, reach: Reach) -> Option<usize> {
    let mut previous = 0.0;
    let mut last = None;
    for t in 0..episode.len() {
        let (now, next) = (episode.obs(t), episode.obs(t + 1));
        let moved = horizontal(&now[OBJECT_POS], &next[OBJECT_POS]);
        let pushed = moved > STILL
            && (within(now, reach) || within(next, reach) || moved > previous + STILL);
        if pushed {
            last = Some(t);
        }
        previous = moved;
    }
    last
}

/// Whether step `t` comes after the last push (or the object was never pushed).
fn after_push(last_push: Option<usize>, t: usize) -> bool {
    last_push.is_none_or(|p| t > p)
}

/// Sampled transitions of one window, by category.
#[derive(Clone, Debug, Default)]
struct Tally {
    episodes: usize,
    successes: usize,
    moved: usize,
    /// Moved episodes whose object came to rest before the last step.
    settled: usize,
    total: usize,
    original: usize,
    original_success: usize,
    static_object: usize,
    post_settle: usize,
    informative: usize,
    missed: usize,
    /// Of `missed`, those after the last push.
    missed_rolling: usize,
    /// Relabels of moved episodes at or before the last push.
    pushing: usize,
    pushing_success: usize,
    /// Relabels of moved episodes after the last push.
    rolling: usize,
    rolling_success: usize,
}

impl Tally {
    fn add_episode<G: GoalReward + ?Sized>(
        &mut self,
        episode: &Episode,
        her: &HerConfig,
        reach: Reach,
        goals: &G,
        seed: u64,
    ) {
        self.episodes += 1;
        self.successes += usize::from(episode.terminated());
        let motion = episode.motion(her.static_epsilon);
        self.moved += usize::from(motion.moved);
        self.settled += usize::from(motion.moved && motion.settle < episode.len());
        let push = last_push(episode, reach);
        let mut batch = TransitionBatch::default();
        let mut rng = rng_from_seed(seed);
        sample_episode(
            episode,
            her,
            SAMPLES * episode.len(),
            goals,
            &mut rng,
            &mut batch,
        );
        for i in 0..batch.len() {
            let success = batch.rewards[i] == 0.0;
            self.total += 1;
            let missed = match batch.origins[i] {
                GoalOrigin::Original => {
                    self.original += 1;
                    self.original_success += usize::from(success);
                    continue;
                }
                GoalOrigin::Static => {
                    self.static_object += 1;
                    continue;
                }
                GoalOrigin::PostSettle { missed } => {
                    self.post_settle += 1;
                    missed
                }
                GoalOrigin::Informative { missed } => {
                    self.informative += 1;
                    missed
                }
            };
            self.missed += usize::from(missed);
            if after_push(push, batch.steps[i]) {
                self.rolling += 1;
                self.rolling_success += usize::from(success);
                self.missed_rolling += usize::from(missed);
            } else {
                self.pushing += 1;
                self.pushing_success += usize::from(success);
            }
        }
    }

    fn row(&self, first: usize) -> String {
        let share = |n: usize| n as f64 / self.total.max(1) as f64;
        let of = |n: usize, d: usize| n as f64 / d.max(1) as f64;
        format!(
            "| {}–{} | {:.2} | {:.2} | {:.2} | {:.3} | {:.3} | {:.4} | {:.3} | {:.3} ({:.3}) | {:.3} ({:.2}) | {:.3} ({:.2}) |",
            first,
            first + self.episodes - 1,
            of(self.successes, self.episodes),
            of(self.moved, self.episodes),
            of(self.settled, self.moved),
            share(self.original_success),
            share(self.static_object),
            share(self.post_settle),
            share(self.informative),
            share(self.missed),
            share(self.missed_rolling),
            share(self.pushing),
            of(self.pushing_success, self.pushing),
            share(self.rolling),
            of(self.rolling_success, self.rolling),
        )
    }
}

/// Columns: episodes are shares of the window's episodes ("settled": of
/// those that moved); the rest are shares of all sampled transitions, with
/// the part after the last push in brackets for `missed` and the share of
/// rewards of 0 in brackets for `pushing` and `rolling`.
const HEADER: &str = "| episodes | train success | ball moved | settled | original, reward 0 | static | post-settle | informative | missed (rolling) | pushing (reward 0) | rolling (reward 0) |\n|---|---|---|---|---|---|---|---|---|---|---|";

fn reach_of(env: &EnvConfig) -> Result<Reach> {
    let (arm, object_radius, object_half_height) = match env.kind.as_str() {
        "ball-to-net" => {
            let ball: shoal_rl_env::BallToNetConfig = env.settings()?;
            (ball.arm, ball.ball_radius, ball.ball_radius)
        }
        "arm-push" => {
            let push: shoal_rl_env::ArmPushConfig = env.settings()?;
            // The box's half diagonal: touching at a corner.
            let h = push.box_half_size;
            (push.arm, h * std::f32::consts::SQRT_2, h)
        }
        other => {
            return Err(Error::Config(format!(
                "her_audit reads arm tasks, not `{other}`"
            )));
        }
    };
    let gripper_radius = match arm.gripper {
        GripperShape::Cylinder { radius, .. } => radius,
        GripperShape::Block { half_extents } => half_extents[0].hypot(half_extents[1]),
    };
    Ok(Reach {
        horizontal: gripper_radius + object_radius + SLACK,
        vertical: arm.gripper.half_height() + object_half_height + SLACK,
    })
}

/// Random actions per state for the critic's spread over actions.
const ACTIONS: usize = 16;

/// Mean over `states` (observation part, goal) of the standard deviation
/// of the critic's Q over `ACTIONS` uniformly random actions, and the mean Q.
fn action_spread(
    learner: &Ddpg<Box<dyn GoalEnv>>,
    states: &[(Vec<f32>, Vec<f32>)],
    act: usize,
    seed: u64,
) -> Result<(f64, f64)> {
    let mut rng = rng_from_seed(seed);
    let (mut spread, mut mean) = (0.0, 0.0);
    for chunk in states.chunks(256) {
        let (mut obs, mut goals, mut actions) = (Vec::new(), Vec::new(), Vec::new());
        for (o, g) in chunk {
            for _ in 0..ACTIONS {
                obs.extend(o);
                goals.extend(g);
                actions.extend((0..act).map(|_| rng.random_range(-1.0f32..=1.0)));
            }
        }
        for q in learner.q_values(&obs, &goals, &actions)?.chunks(ACTIONS) {
            let m = q.iter().map(|&x| x as f64).sum::<f64>() / ACTIONS as f64;
            let var = q.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / ACTIONS as f64;
            spread += var.sqrt();
            mean += m;
        }
    }
    let n = states.len().max(1) as f64;
    Ok((spread / n, mean / n))
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let run = args
        .next()
        .ok_or_else(|| Error::Config("usage: her_audit <run-dir> [window]".into()))?;
    let window: usize = match args.next() {
        Some(arg) => arg.parse().ok().filter(|w| *w > 0).ok_or_else(|| {
            Error::Config(format!("window must be a positive number, got {arg:?}"))
        })?,
        None => 250,
    };
    let dir = RunDir::new(Path::new(&run));
    let text = std::fs::read_to_string(dir.config())
        .map_err(|e| Error::io(format!("reading {}", dir.config().display()), e))?;
    let registries = Registries::default();
    let cfg = registries.from_toml(&text, &dir.config().display().to_string())?;
    let Some(ddpg) = cfg.algo.settings_if::<shoal_rl::algo::DdpgConfig>("ddpg") else {
        return Err(Error::Config("her_audit reads DDPG + HER runs".into()));
    };
    let her = ddpg.her.clone();
    let reach = reach_of(&cfg.env)?;
    let make = || registries.envs.make_goal_env(&cfg.env);
    let mut learner = Ddpg::new(ddpg.clone(), make()?, make()?, cfg.seed)?;
    let ckpt = load_checkpoint(dir.path(), &CheckpointSelector::Latest, None)?;
    learner.load_state(ckpt.blob("learner")?)?;
    learner.load_memory(ckpt.blob("memory")?)?;
    let (buffer, env) = (learner.buffer(), make()?);
    println!("{HEADER}");
    for start in (0..buffer.episodes()).step_by(window) {
        let mut tally = Tally::default();
        for index in start..(start + window).min(buffer.episodes()) {
            tally.add_episode(
                buffer.episode(index),
                &her,
                reach,
                env.as_ref(),
                index as u64,
            );
        }
        println!("{}", tally.row(start + 1));
    }

    // The critic of this checkpoint on the newest window's relabelled
    // transitions, one per stored transition.
    let first = buffer.episodes().saturating_sub(window);
    let (mut pushing, mut rolling) = (Vec::new(), Vec::new());
    let d = buffer.dims();
    for index in first..buffer.episodes() {
        let episode = buffer.episode(index);
        let push = last_push(episode, reach);
        let mut batch = TransitionBatch::default();
        let mut rng = rng_from_seed(index as u64);
        sample_episode(
            episode,
            &her,
            episode.len(),
            env.as_ref(),
            &mut rng,
            &mut batch,
        );
        for i in 0..batch.len() {
            if !matches!(
                batch.origins[i],
                GoalOrigin::Informative { .. } | GoalOrigin::PostSettle { .. }
            ) {
                continue;
            }
            let state = (
                batch.obs[i * d.obs..(i + 1) * d.obs].to_vec(),
                batch.goals[i * d.goal..(i + 1) * d.goal].to_vec(),
            );
            if after_push(push, batch.steps[i]) {
                rolling.push(state);
            } else {
                pushing.push(state);
            }
        }
    }
    println!(
        "\ncritic after {} episodes, relabelled transitions of episodes {}–{} (moved object): \
         std of Q over {ACTIONS} random actions (mean Q)",
        learner.episodes(),
        first + 1,
        buffer.episodes()
    );
    for (name, states) in [("pushing", &pushing), ("rolling", &rolling)] {
        let (spread, mean) = action_spread(&learner, states, d.act, 7)?;
        println!(
            "{name}: {} transitions, {spread:.3} ({mean:.2})",
            states.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_rl::algo::EpisodeDims;
    use shoal_rl::env::arm::FLAT_OBS_DIM;

    const REACH: Reach = Reach {
        horizontal: 0.055,
        vertical: 0.065,
    };

    /// An episode from gripper and ball positions `(gx, bx)` along x, both at height 0.025.
    fn episode(path: &[(f32, f32)]) -> Episode {
        let dims = EpisodeDims {
            obs: FLAT_OBS_DIM - 6,
            goal: 3,
            act: 4,
        };
        let obs = |(g, b): (f32, f32)| {
            let mut o = vec![0.0; dims.obs];
            o[GRIPPER_POS.start] = g;
            o[OBJECT_POS.start] = b;
            o[GRIPPER_POS.start + 2] = 0.025;
            o[OBJECT_POS.start + 2] = 0.025;
            o
        };
        let mut episode = Episode::start(dims, &obs(path[0]), &[path[0].1, 0.0, 0.025]);
        for &step in &path[1..] {
            episode.push(
                &[1.0, 0.0, 0.025],
                &[0.0; 4],
                &obs(step),
                &[step.1, 0.0, 0.025],
            );
        }
        episode
    }

    /// Success within 0.05 m along x, as the arm tasks judge it.
    struct Near;
    impl GoalReward for Near {
        fn reward(&self, a: &[f32], d: &[f32]) -> f32 {
            if self.success(a, d) { 0.0 } else { -1.0 }
        }
        fn success(&self, a: &[f32], d: &[f32]) -> bool {
            (a[0] - d[0]).abs() < 0.05
        }
    }

    #[test]
    fn a_tally_splits_relabels_at_the_last_push() {
        // Pushed in steps 0 and 1, rolling in steps 2 and 3 (speed 4, 6,
        // 3, 2 cm per step, the gripper left behind), still moving at the
        // end and 0.85 m short of the goal at x = 1: a missed ball, settle
        // step T = 4, so only goals from step 4 are its resting place.
        let e = episode(&[
            (-0.045, 0.0),
            (-0.005, 0.04),
            (0.02, 0.10),
            (0.02, 0.13),
            (0.02, 0.15),
        ]);
        assert_eq!(last_push(&e, REACH), Some(1));
        let her = HerConfig::default();
        let mut tally = Tally::default();
        tally.add_episode(&e, &her, REACH, &Near, 5);

        // The same draws, counted by hand from the batch.
        let mut batch = TransitionBatch::default();
        sample_episode(
            &e,
            &her,
            SAMPLES * 4,
            &Near,
            &mut rng_from_seed(5),
            &mut batch,
        );
        let relabelled = |keep: &dyn Fn(usize, usize) -> bool| {
            (0..batch.len())
                .filter(|&i| batch.goal_steps[i].is_some_and(|g| keep(batch.steps[i], g)))
                .count()
        };
        assert_eq!(tally.total, 160);
        assert_eq!(tally.original, 160 - relabelled(&|_, _| true));
        assert_eq!(tally.static_object, 0);
        assert_eq!(tally.pushing, relabelled(&|t, _| t <= 1));
        assert_eq!(tally.rolling, relabelled(&|t, _| t >= 2));
        assert_eq!(tally.missed, relabelled(&|_, g| g == 4));
        assert_eq!(tally.missed_rolling, relabelled(&|t, g| t >= 2 && g == 4));
        // Goals from a later point of a ball still rolling by itself: every
        // rolling relabel here is reached (0.05 m) only if it is within 5 cm.
        assert_eq!(
            tally.rolling_success,
            (0..batch.len())
                .filter(|&i| batch.steps[i] >= 2 && batch.goal_steps[i].is_some())
                .filter(|&i| (e.achieved(batch.steps[i] + 1)[0]
                    - e.achieved(batch.goal_steps[i].unwrap())[0])
                    .abs()
                    < 0.05)
                .count()
        );
        assert!(tally.pushing > 0 && tally.rolling > 0 && tally.missed_rolling > 0);
        assert_eq!((tally.episodes, tally.moved, tally.settled), (1, 1, 0));

        // A ball never touched: every relabel is static, none is split.
        let still = episode(&[(-0.2, 0.0), (-0.1, 0.0), (-0.1, 0.0)]);
        let mut tally = Tally::default();
        tally.add_episode(&still, &her, REACH, &Near, 5);
        assert_eq!(tally.static_object + tally.original, tally.total);
        assert!(tally.static_object > 0);
        assert_eq!((tally.pushing, tally.rolling, tally.moved), (0, 0, 0));
    }

    #[test]
    fn a_ball_never_touched_has_no_push() {
        // The gripper passes 2 cm from the ball, which never moves.
        let e = episode(&[(-0.2, 0.0), (-0.1, 0.0), (-0.02, 0.0), (-0.1, 0.0)]);
        assert_eq!(last_push(&e, REACH), None);
    }

    #[test]
    fn the_last_push_is_the_strike_not_the_roll() {
        // The gripper nudges the ball in step 1 (2 cm, from 5 cm away) and
        // strikes it in step 2 (6 cm); from step 3 on the ball rolls away
        // from the still gripper, slowing down (4, 3, 2 cm per step).
        let e = episode(&[
            (-0.10, 0.0),
            (-0.05, 0.0),
            (-0.03, 0.02),
            (-0.03, 0.08),
            (-0.03, 0.12),
            (-0.03, 0.15),
            (-0.03, 0.17),
        ]);
        assert_eq!(last_push(&e, REACH), Some(2));
    }

    #[test]
    fn a_steady_push_is_a_push_at_every_step() {
        // The gripper pushes the ball 2 cm per step for three steps, staying
        // 4.5 cm (touching) behind it, then backs off while the ball stops.
        let e = episode(&[
            (-0.045, 0.0),
            (-0.025, 0.02),
            (-0.005, 0.04),
            (0.015, 0.06),
            (-0.05, 0.06),
        ]);
        assert_eq!(last_push(&e, REACH), Some(2));
    }

    #[test]
    fn a_ball_that_speeds_up_far_from_the_gripper_was_struck() {
        // Gripper far away in both observations, yet the ball speeds up from
        // 1 to 3 cm per step in step 2: a strike between two observations.
        let e = episode(&[
            (-0.3, 0.0),
            (-0.3, 0.01),
            (-0.3, 0.02),
            (-0.3, 0.05),
            (-0.3, 0.07),
        ]);
        assert_eq!(last_push(&e, REACH), Some(2));
    }
}
