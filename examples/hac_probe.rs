//! Why a HAC run learned nothing: what its top level's actor and critic
//! say on the states it visits, played frozen.
//!
//! ```text
//! shoal train pendulum-hac2 --seed 2 --out runs/p2
//! cargo run --release --example hac_probe -- runs/p2 latest 5
//! ```
//!
//! Plays `EPISODES` frozen episodes on the run's evaluation seeds and, at
//! every step, asks the top level what subgoal it would set. It prints:
//! - the share of the top level's action components within 1 % of a bound
//!   and the median |pre-activation| `|u|` of its `tanh(u)` (recovered as
//!   `atanh(a)`; `inf` where the f32 `tanh` has rounded to ±1);
//! - the critic's Q at the chosen action, at the box centre, and the best Q
//!   over a grid of interior points (every component in `[-0.9, 0.9]`);
//! - the critic's slope `|dQ/da|` at the chosen action (central
//!   differences) and what reaches the pre-activation through `tanh`,
//!   `|dQ/da|·(1 − a²)`, beside the same at the box centre.
//!
//! A pinned top level shows a share near 1, a large `|u|`, and an interior
//! Q above the corner's whose push back inside `tanh` scales toward 0.

use shoal_rl::algo::share_at_bound;
use shoal_rl::core::{Error, Learner, Result};
use shoal_rl::eval::CheckpointSelector;
use shoal_rl::train::{Registries, eval_seed, load_run_state};

fn main() {
    if let Err(error) = run() {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

/// Interior grid points per action component: a finer grid for the
/// pendulum's 2-d subgoals than for the UR5's 6-d ones.
fn grid_points(act_dim: usize) -> usize {
    if act_dim <= 2 { 9 } else { 3 }
}
/// Central-difference step for the critic's slope.
const STEP: f32 = 1e-3;

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [run_dir, which, ..] = args.as_slice() else {
        return Err(Error::Config(
            "usage: hac_probe RUN_DIR latest|best|N [EPISODES]".into(),
        ));
    };
    let episodes: usize = match args.get(2) {
        Some(n) => n
            .parse()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| Error::Config(format!("EPISODES must be 1 to 100, got `{n}`")))?,
        None => 5,
    };
    let (cfg, state) = load_run_state(run_dir.as_ref(), &CheckpointSelector::parse(which))?;
    if cfg.algo.kind() != "hac" {
        return Err(Error::Config(format!(
            "{run_dir} is a `{}` run; hac_probe reads HAC runs",
            cfg.algo.kind()
        )));
    }
    let registries = Registries::default();
    let mut hac = shoal_rl::algos::make_hac(&registries.learners(&cfg).context(0, 1.0)?)?;
    hac.load_state(&state)?;
    let env = registries.envs.make_goal_env(&cfg.env)?;
    let frames = hac.watch(episodes, eval_seed(&cfg))?;
    let models = hac.models();
    let top = models.len() - 1;
    let networks = &models.level(top).networks;

    let mut inputs = Vec::new();
    for frame in &frames {
        let (obs, _, desired) = env.split_obs(&frame.observation);
        models.push_input(top, obs, desired, &mut inputs)?;
    }
    let rows = frames.len();
    let width = inputs.len() / rows.max(1);
    let actions: Vec<f32> = inputs.chunks(width).flat_map(|x| networks.act(x)).collect();
    let act_dim = actions.len() / rows.max(1);

    let mut pre: Vec<f32> = actions.iter().map(|a| a.atanh().abs()).collect();
    pre.sort_by(f32::total_cmp);
    let q_at = |acts: &[f32]| networks.q_values(&inputs, acts);
    let q_chosen = q_at(&actions);
    let centre = vec![0.0f32; actions.len()];
    let q_centre = q_at(&centre);
    let mut q_best_inside = vec![f32::NEG_INFINITY; rows];
    let grid = grid_points(act_dim);
    for point in 0..grid.pow(act_dim as u32) {
        let grid_action: Vec<f32> = (0..act_dim)
            .map(|j| {
                let k = point / grid.pow(j as u32) % grid;
                -0.9 + 1.8 * k as f32 / (grid - 1) as f32
            })
            .collect();
        let all: Vec<f32> = (0..rows).flat_map(|_| grid_action.clone()).collect();
        for (best, q) in q_best_inside.iter_mut().zip(q_at(&all)) {
            *best = best.max(q);
        }
    }
    // |dQ/da| per component by central differences, and through tanh.
    let slopes = |at: &[f32]| -> (Vec<f32>, Vec<f32>) {
        let (mut raw, mut through) = (Vec::new(), Vec::new());
        for j in 0..act_dim {
            let shifted = |delta: f32| -> Vec<f32> {
                at.iter()
                    .enumerate()
                    .map(|(k, a)| if k % act_dim == j { a + delta } else { *a })
                    .collect()
            };
            let (up, down) = (q_at(&shifted(STEP)), q_at(&shifted(-STEP)));
            for row in 0..rows {
                let slope = ((up[row] - down[row]) / (2.0 * STEP)).abs();
                let a = at[row * act_dim + j];
                raw.push(slope);
                through.push(slope * (1.0 - a * a));
            }
        }
        (raw, through)
    };
    let (slope_chosen, through_chosen) = slopes(&actions);
    let (slope_centre, through_centre) = slopes(&centre);

    println!("run {run_dir} ({which}), {episodes} episodes, {rows} states, top level {top}");
    println!("  actions at bound      {:.3}", share_at_bound(&actions));
    println!("  median |pre-act|      {:.2}", median_sorted(&pre));
    let (lo, hi) = column_ranges(&actions, act_dim);
    println!("  action range          {lo:?} to {hi:?} (in [-1, 1])");
    println!("  Q chosen              {:.3}", median(&q_chosen));
    println!("  Q centre              {:.3}", median(&q_centre));
    println!("  Q best inside         {:.3}", median(&q_best_inside));
    let better = q_best_inside
        .iter()
        .zip(&q_chosen)
        .filter(|(i, c)| i > c)
        .count();
    println!("  inside beats chosen   {better} of {rows} states");
    println!("  |dQ/da| chosen        {:.3e}", median(&slope_chosen));
    println!("  |dQ/da|(1-a²) chosen  {:.3e}", median(&through_chosen));
    println!("  |dQ/da| centre        {:.3e}", median(&slope_centre));
    println!("  |dQ/da|(1-a²) centre  {:.3e}", median(&through_centre));
    Ok(())
}

fn median(values: &[f32]) -> f32 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f32::total_cmp);
    median_sorted(&sorted)
}

fn median_sorted(sorted: &[f32]) -> f32 {
    sorted.get(sorted.len() / 2).copied().unwrap_or(f32::NAN)
}

/// Each action component's smallest and largest value over the rows.
fn column_ranges(actions: &[f32], act_dim: usize) -> (Vec<f32>, Vec<f32>) {
    let mut lo = vec![f32::INFINITY; act_dim];
    let mut hi = vec![f32::NEG_INFINITY; act_dim];
    for (k, a) in actions.iter().enumerate() {
        lo[k % act_dim] = lo[k % act_dim].min(*a);
        hi[k % act_dim] = hi[k % act_dim].max(*a);
    }
    (lo, hi)
}
