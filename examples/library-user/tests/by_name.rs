//! An env, a learner and a strategy of this crate's own, registered beside
//! shoal's and trained by name, as `shoal train` trains its presets; a run
//! split in two and resumed equals the uninterrupted one, record for record.

mod common;

use serde::{Deserialize, Serialize};
use shoal_library_user::LocalSgd;
use shoal_rl_core::rand::RngExt;
use shoal_rl_core::{
    Env, Error, EvalReport, GradientLearner, Info, LearnReport, Learner, MeanReducer, Policy,
    Result, Space, Step, TimeLimit, derive_seed, evaluate_policy, rng_from_seed,
};
use shoal_rl_registry::{EnvEntry, EnvRegistry, FromSettings};
use shoal_rl_train::algos::{AlgoEntry, AlgoRegistry};
use shoal_rl_train::config::{AlgoConfig, EnvConfig};
use shoal_rl_train::strategies::{StrategyEntry, StrategyRegistry};
use shoal_rl_train::{Plan, Registries};

// ---- the env: a point on a line, to be moved onto a target ----

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct LineSettings {
    /// Steps per episode.
    max_episode_steps: usize,
    /// Distance one full action moves the point.
    speed: f32,
}

impl Default for LineSettings {
    fn default() -> Self {
        LineSettings {
            max_episode_steps: 20,
            speed: 0.1,
        }
    }
}

struct Line {
    settings: LineSettings,
    at: f32,
    target: f32,
    spaces: (Space, Space),
    limit: TimeLimit,
    rng: shoal_rl_core::rand::rngs::StdRng,
}

impl FromSettings for Line {
    type Settings = LineSettings;
    fn from_settings(settings: LineSettings) -> Result<Self> {
        Ok(Line {
            limit: TimeLimit::new(settings.max_episode_steps),
            settings,
            at: 0.0,
            target: 0.0,
            spaces: (Space::uniform(2, -3.0, 3.0), Space::uniform(1, -1.0, 1.0)),
            rng: rng_from_seed(0),
        })
    }
}

impl Env for Line {
    fn observation_space(&self) -> &Space {
        &self.spaces.0
    }
    fn action_space(&self) -> &Space {
        &self.spaces.1
    }
    fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
        shoal_rl_core::reseed(&mut self.rng, seed);
        self.at = 0.0;
        self.target = self.rng.random_range(-1.0..1.0);
        self.limit.start();
        vec![self.at, self.target]
    }
    fn step(&mut self, action: &[f32]) -> Result<Step> {
        self.limit.check()?;
        let action = self.spaces.1.validate(action, true)?;
        self.at += self.settings.speed * action[0];
        Ok(self.limit.finish(Step {
            obs: vec![self.at, self.target],
            reward: -(self.at - self.target).abs(),
            terminated: false,
            truncated: false,
            info: Info::new(),
        }))
    }
}

// ---- the learner: hill climbing on a linear policy ----

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct HillSettings {
    /// Largest change of a weight tried per episode.
    step: f32,
}

/// a = w·obs + b, clipped to the action space by the env.
struct Linear([f32; 3]);

impl Policy for Linear {
    fn act(&self, obs: &[f32]) -> Vec<f32> {
        vec![self.0[0] * obs[0] + self.0[1] * obs[1] + self.0[2]]
    }
}

/// Each episode tries a perturbed policy on a seeded start and keeps it if
/// its return beats the kept policy's on the same start (a replay that
/// does not count as training).
struct HillClimb<E> {
    settings: HillSettings,
    env: E,
    eval_env: E,
    seed: u64,
    state: HillState,
}

#[derive(Clone, Serialize, Deserialize)]
struct HillState {
    params: [f32; 3],
    episodes: u64,
}

impl<E: Env> HillClimb<E> {
    fn episode(&mut self, policy: &Linear, seed: u64) -> Result<(f64, u64)> {
        let mut obs = self.env.reset(Some(seed));
        let (mut total, mut steps) = (0.0, 0);
        loop {
            let step = self.env.step(&policy.act(&obs))?;
            total += f64::from(step.reward);
            steps += 1;
            if step.terminated || step.truncated {
                return Ok((total, steps));
            }
            obs = step.obs;
        }
    }
}

impl<E: Env> Learner for HillClimb<E> {
    fn learn(&mut self, episodes: usize) -> Result<LearnReport> {
        let mut report = LearnReport::default();
        for _ in 0..episodes {
            let seed = derive_seed(self.seed, self.state.episodes);
            let mut rng = rng_from_seed(seed);
            let mut tried = self.state.params;
            for w in &mut tried {
                *w += self.settings.step * rng.random_range(-1.0f32..1.0);
            }
            let (ret, steps) = self.episode(&Linear(tried), seed)?;
            let (kept, _) = self.episode(&Linear(self.state.params), seed)?;
            if ret > kept {
                self.state.params = tried;
            }
            self.state.episodes += 1;
            report.episode_returns.push(ret);
            report.episode_lengths.push(steps);
        }
        Ok(report)
    }
    fn evaluate(&mut self, episodes: usize, seed: u64) -> Result<EvalReport> {
        evaluate_policy(
            &mut self.eval_env,
            &Linear(self.state.params),
            episodes,
            seed,
            None,
        )
    }
    fn save_state(&self) -> Vec<u8> {
        serde_json::to_vec(&self.state).expect("the state is JSON")
    }
    fn load_state(&mut self, bytes: &[u8]) -> Result<()> {
        self.state = serde_json::from_slice(bytes)
            .map_err(|e| Error::Shape(format!("not a hill climber's state: {e}")))?;
        Ok(())
    }
    fn policy(&self) -> Option<Box<dyn Policy>> {
        Some(Box::new(Linear(self.state.params)))
    }
}

impl<E: Env> GradientLearner for HillClimb<E> {
    fn parameters(&self) -> Vec<f32> {
        self.state.params.to_vec()
    }
    fn set_parameters(&mut self, params: &[f32]) -> Result<()> {
        self.state.params = params
            .try_into()
            .map_err(|_| Error::Shape(format!("3 parameters, got {}", params.len())))?;
        Ok(())
    }
    /// Climbs alone, then every worker takes the mean of the weights.
    fn learn_averaged(
        &mut self,
        episodes: usize,
        reducer: &mut dyn MeanReducer,
    ) -> Result<LearnReport> {
        let report = self.learn(episodes)?;
        let mut params = self.parameters();
        reducer.mean(&mut params)?;
        self.set_parameters(&params)?;
        Ok(report)
    }
}

// ---- registered by name, beside shoal's ----

fn registries(sync_every: u64) -> Registries {
    let envs = EnvRegistry::builtin().with(EnvEntry::plain::<Line>(
        "line",
        "move a point along a line onto a target",
    ));
    let algos = AlgoRegistry::builtin().with(AlgoEntry::new::<HillSettings>(
        "hill-climb",
        "hill climbing on a linear policy",
        |learner| {
            Ok(Box::new(HillClimb {
                settings: learner.settings()?,
                env: learner.env()?,
                eval_env: learner.eval_env()?,
                seed: learner.seed,
                state: HillState {
                    params: [0.0; 3],
                    episodes: 0,
                },
            }))
        },
    ));
    let strategies = StrategyRegistry::builtin().with(StrategyEntry::new(
        shoal_library_user::NAME,
        "local SGD",
        move |run| run.run_strategy(|setup| Ok(LocalSgd::new(setup.schedule(), sync_every))),
    ));
    Registries::default()
        .envs(envs)
        .algos(algos)
        .strategies(strategies)
}

#[test]
fn an_env_learner_and_strategy_of_ones_own_train_by_name_and_resume_exactly() {
    let dir = common::scratch("by-name");
    let registries = registries(3);
    // A config file that names all three: `shoal train`'s own file format.
    let mut cfg = shoal_rl_train::preset("toy-reinforce").unwrap();
    cfg.env = EnvConfig::new("line", &LineSettings::default()).unwrap();
    cfg.algo = AlgoConfig::new("hill-climb", &HillSettings { step: 0.2 }).unwrap();
    let file = dir.join("line.toml");
    std::fs::write(&file, cfg.to_toml()).unwrap();
    let resolve = |episodes: u64| {
        let overrides = [
            "parallel.workers=2".to_string(),
            "parallel.strategy=\"local-sgd\"".to_string(),
            format!("train.episodes={episodes}"),
            "train.eval_every=80".to_string(),
            "train.checkpoint_every=80".to_string(),
        ];
        registries
            .resolve(file.to_str().unwrap(), &overrides)
            .unwrap()
    };
    let run = |plan: &Plan| registries.run(plan);
    let (_, whole) = run(&Plan::new(resolve(400)).out(dir.join("whole")).quiet())
        .unwrap()
        .unwrap();
    run(&Plan::new(resolve(160)).out(dir.join("split")).quiet()).unwrap();
    let (_, resumed) = run(&Plan::new(resolve(400)).resume(dir.join("split")).quiet())
        .unwrap()
        .unwrap();
    assert_eq!(
        common::records(&dir.join("split")),
        common::records(&dir.join("whole"))
    );
    assert_eq!(resumed.eval_return_mean, whole.eval_return_mean);
    // The climb learned: its final policy pays less than half the distance
    // cost of the policy it started from (standing still), on the same
    // evaluation starts.
    let mut line = Line::from_settings(LineSettings::default()).unwrap();
    let eval = resolve(400);
    let episodes = eval.train.final_eval_episodes;
    let still = evaluate_policy(
        &mut line,
        &Linear([0.0; 3]),
        episodes,
        shoal_rl_train::eval_seed(&eval),
        None,
    )
    .unwrap()
    .return_mean;
    let learned = whole.eval_return_mean.unwrap();
    assert!(learned > 0.5 * still, "{learned} against {still}");
    let saved = std::fs::read_to_string(dir.join("whole/config.toml")).unwrap();
    for name in [
        "kind = \"line\"",
        "kind = \"hill-climb\"",
        "strategy = \"local-sgd\"",
    ] {
        assert!(saved.contains(name), "{saved}");
    }
}
