//! An environment defined outside shoal-rl-env, trained with shoal's DDPG + HER
//! through the runtime library (shoal-rl-run): it gets a locked run directory,
//! `metrics.jsonl`, checkpoints with the replay memory, `--resume`, a clean
//! stop on Ctrl-C and `summary.json`, like a preset of `shoal train`.
//!
//! The env is a two-link planar arm whose fingertip must reach a goal point:
//! the action moves both joints, the goal is a fingertip position.
//!
//! ```text
//! cargo run --release --bin custom_env -- --out runs/reacher
//! cargo run --release --bin custom_env -- --resume runs/reacher --episodes 2000
//! shoal plot runs/reacher
//! ```

use std::path::PathBuf;

use clap::Parser;
use serde::Serialize;
use shoal_rl_algo::{Ddpg, DdpgConfig};
use shoal_rl_core::{Env, GoalEnv, Info, Result, Space, Step, TimeLimit, reseed, rng_from_seed};
use shoal_rl_run::{RunOptions, RunSpec, TrainConfig};

// ---- the env: everything shoal needs is `Env` + `GoalEnv` ----

/// Two links of 0.5 m; joint angles move by at most 0.2 rad a step.
struct Reacher {
    angles: [f32; 2],
    goal: [f32; 2],
    rng: shoal_rl_core::rand::rngs::StdRng,
    space: (Space, Space),
    limit: TimeLimit,
}

impl Reacher {
    fn new() -> Self {
        Reacher {
            angles: [0.0; 2],
            goal: [0.0; 2],
            rng: rng_from_seed(0),
            // [sin, cos of both joints | fingertip | goal], and two joint moves.
            space: (Space::uniform(8, -2.0, 2.0), Space::uniform(2, -1.0, 1.0)),
            limit: TimeLimit::new(30),
        }
    }

    fn tip(&self) -> [f32; 2] {
        let (a, b) = (self.angles[0], self.angles[0] + self.angles[1]);
        [0.5 * (a.cos() + b.cos()), 0.5 * (a.sin() + b.sin())]
    }

    fn observe(&self) -> Vec<f32> {
        let [a, b] = self.angles;
        let tip = self.tip();
        vec![
            a.sin(),
            a.cos(),
            b.sin(),
            b.cos(),
            tip[0],
            tip[1],
            self.goal[0],
            self.goal[1],
        ]
    }
}

impl Env for Reacher {
    fn observation_space(&self) -> &Space {
        &self.space.0
    }
    fn action_space(&self) -> &Space {
        &self.space.1
    }
    fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
        use shoal_rl_core::rand::RngExt;
        reseed(&mut self.rng, seed);
        let pi = std::f32::consts::PI;
        self.angles = [
            self.rng.random_range(-pi..pi),
            self.rng.random_range(0.2..pi),
        ];
        // A goal the arm can reach: the fingertip at other random angles.
        let start = self.angles;
        self.angles = [
            self.rng.random_range(-pi..pi),
            self.rng.random_range(0.2..pi),
        ];
        self.goal = self.tip();
        self.angles = start;
        self.limit.start();
        self.observe()
    }
    fn step(&mut self, action: &[f32]) -> Result<Step> {
        self.limit.check()?;
        let action = self.space.1.validate(action, true)?;
        for (angle, delta) in self.angles.iter_mut().zip(action.iter()) {
            *angle += 0.2 * delta;
        }
        let success = self.is_success(&self.tip(), &self.goal);
        Ok(self.limit.finish(Step {
            obs: self.observe(),
            reward: self.compute_reward(&self.tip(), &self.goal),
            terminated: success,
            truncated: false,
            info: Info::new().with("is_success", f64::from(u8::from(success))),
        }))
    }
}

impl GoalEnv for Reacher {
    fn goal_dim(&self) -> usize {
        2
    }
    // compute_reward: the default sparse reward, 0 on success, else −1.
    fn is_success(&self, achieved: &[f32], desired: &[f32]) -> bool {
        (achieved[0] - desired[0]).hypot(achieved[1] - desired[1]) < 0.05
    }
}

// ---- the run: a config of our own, handed to the runtime ----

#[derive(Parser)]
#[command(about = "Train DDPG + HER on a reacher defined in this example")]
struct Cli {
    /// Directory of a fresh run.
    #[arg(long)]
    out: Option<PathBuf>,
    /// A run directory to continue from its latest checkpoint.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Training episodes in total.
    #[arg(long, default_value_t = 1_500)]
    episodes: u64,
    /// Evaluate (and checkpoint) every this many episodes.
    #[arg(long, default_value_t = 100)]
    eval_every: u64,
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// What `config.toml` records: a resume must present the same.
#[derive(Serialize)]
struct Config {
    seed: u64,
    train: TrainConfig,
    ddpg: DdpgConfig,
}

fn main() {
    let cli = Cli::parse();
    let train = TrainConfig {
        episodes: cli.episodes,
        eval_every: cli.eval_every,
        checkpoint_every: cli.eval_every,
        eval_episodes: 20,
        ..TrainConfig::default()
    };
    let ddpg = DdpgConfig {
        hidden: vec![64, 64],
        batch_size: 64,
        n_batches: 10,
        ..DdpgConfig::default()
    };
    let config = Config {
        seed: cli.seed,
        train: train.clone(),
        ddpg: ddpg.clone(),
    };
    let toml = toml::to_string(&config).expect("the config is TOML");
    let spec = RunSpec::new("reacher", toml)
        .seed(cli.seed)
        .goal_task(true)
        .train(train);
    let options = RunOptions {
        out: cli.out,
        resume: cli.resume,
        ..RunOptions::default()
    };
    let outcome = shoal_rl_run::train(&spec, &options, || {
        Ddpg::new(ddpg, Reacher::new(), Reacher::new(), cli.seed)
    });
    match outcome {
        Ok((run_dir, summary)) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&summary).expect("summary is JSON")
            );
            eprintln!("run directory: {}", run_dir.display());
        }
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(shoal_library_user::exit_code(&error));
        }
    }
}
