use super::*;
use crate::config::*;
use crate::presets::PRESETS;
use crate::reference::{commented, key_docs, reference_page};
use crate::worker_rules::{averaging_budget, averaging_ddpg_work};
use shoal_rl_algo::HacConfig;
use shoal_rl_core::GradientLearner;

/// The config's learner of worker `rank`, as the run builds it.
fn make_learner(cfg: &RunConfig, rank: usize, lr_scale: f64) -> Result<Box<dyn GradientLearner>> {
    Registries::default().learners(cfg).learner(rank, lr_scale)
}

fn with_overrides(cfg: &RunConfig, overrides: &[String]) -> Result<RunConfig> {
    Registries::default().with_overrides(cfg, overrides)
}

/// A preset or, by its name, an experiment's config
/// (docs/experiments/configs/), whose env settings are completed as a
/// preset's are.
fn preset_or_config(name: &str) -> RunConfig {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/experiments/configs")
        .join(format!("{name}.toml"));
    if !file.is_file() {
        return preset(name).unwrap();
    }
    let mut cfg = resolve(file.to_str().unwrap(), &[]).unwrap();
    let envs = shoal_rl_registry::EnvRegistry::builtin();
    let mut full = (envs.get(&cfg.env.kind).unwrap().defaults)();
    crate::config::merge(&mut full, cfg.env.settings);
    cfg.env.settings = full;
    cfg
}
use shoal_rl_algo::ReinforceConfig;

#[test]
fn a_switched_algo_kind_takes_its_own_defaults_for_keys_the_source_leaves_out() {
    let algo = |source: &str, overrides: &[&str]| {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        let cfg = resolve(source, &overrides).unwrap();
        cfg.to_table()["algo"].as_table().unwrap().clone()
    };
    let value = |table: &toml::Table, key: &str| table[key].to_string();
    // The settings as the learner reads them: SAC fixes `actor` and
    // `random_eps`, which its table leaves out.
    let whole = |table: &toml::Table| {
        let algos = crate::algos::AlgoRegistry::builtin();
        let kind = table["kind"].as_str().unwrap().to_string();
        let mut settings = table.clone();
        settings.remove("kind");
        let read: shoal_rl_algo::DdpgConfig =
            AlgoConfig::settings_of(&algos.get(&kind).unwrap().whole(&settings)).unwrap();
        read
    };
    // toy-ddpg-her names hidden, batch_size and n_batches only.
    let sac = algo("toy-ddpg-her", &["algo.kind=\"sac\""]);
    assert!(!sac.contains_key("actor") && !sac.contains_key("random_eps"));
    assert_eq!(whole(&sac).actor, shoal_rl_algo::ActorKind::Gaussian);
    assert_eq!(whole(&sac).random_eps, 0.0);
    assert_eq!(value(&sac, "n_critics"), "2");
    assert_eq!(value(&sac, "hidden"), "[64, 64]", "named keys stay");
    let td3 = algo("toy-ddpg-her", &["algo.kind=\"td3\"", "algo.n_critics=1"]);
    assert_eq!(value(&td3, "policy_delay"), "2");
    assert_eq!(value(&td3, "target_policy_noise"), "0.2");
    assert_eq!(value(&td3, "n_critics"), "1", "later overrides still apply");
    // A config file: the keys it names stay, the others are the new kind's.
    let dir = std::env::temp_dir().join(format!("shoal-kind-switch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("config.toml");
    std::fs::write(
        &file,
        "preset = \"mine\"\nseed = 0\n[env]\nkind = \"point-goal\"\n[algo]\nkind = \"ddpg\"\nn_critics = 1\n",
    )
    .unwrap();
    let from_file = algo(file.to_str().unwrap(), &["algo.kind=\"sac\""]);
    assert_eq!(whole(&from_file).actor, shoal_rl_algo::ActorKind::Gaussian);
    assert_eq!(value(&from_file, "n_critics"), "1");
    let _ = std::fs::remove_dir_all(&dir);
    // Without a switch, nothing changes.
    let ddpg = algo("toy-ddpg-her", &[]);
    assert_eq!(whole(&ddpg).actor, shoal_rl_algo::ActorKind::Deterministic);
    assert_eq!(whole(&ddpg).random_eps, 0.3);
}

#[test]
fn every_key_of_every_preset_has_a_doc_and_shoal_config_prints_it() {
    for p in PRESETS {
        let cfg = preset(p.name).unwrap();
        let docs = key_docs(&Registries::default(), &cfg).unwrap();
        let text = commented(&cfg.to_toml(), &docs);
        // Comments change nothing a reader of the file sees.
        assert_eq!(
            toml::from_str::<toml::Table>(&text).unwrap(),
            cfg.to_table()
        );
        for (key, _) in crate::overrides::list_keys(&cfg.to_table()) {
            // The key's own doc, or the doc of the enum field above it.
            let documented = docs
                .iter()
                .any(|(k, d)| !d.is_empty() && (*k == key || key.starts_with(&format!("{k}."))));
            assert!(documented, "{}: `{key}` has no doc", p.name);
        }
        // Each key line has its doc above it; inside the table of an
        // enum's variant, the table's header has the field's doc.
        let lines: Vec<&str> = text.lines().collect();
        let mut variant = false;
        for (i, line) in lines.iter().enumerate() {
            let commented = i > 0 && lines[i - 1].starts_with("# ");
            if line.starts_with('[') {
                variant = commented;
            } else if line.contains(" = ") && !line.starts_with([' ', '#']) {
                assert!(commented || variant, "{}: {line}", p.name);
            }
        }
    }
}

#[test]
fn reference_page_is_the_generated_one() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let page = reference_page().unwrap();
    if std::env::var_os("SHOAL_BLESS").is_some() {
        std::fs::write(&path, &page).unwrap();
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == page,
        "docs/configuration.md is out of date: run `SHOAL_BLESS=1 cargo test --workspace \
         --lib reference_page` and commit it"
    );
}

#[test]
fn averaging_budget_gives_each_worker_at_least_a_third() {
    // By hand: 6 000 / 3 = 2 000 a worker once N x 2 000 passes 6 000.
    let cases = [
        (1, 6_000),
        (2, 6_000),
        (3, 6_000),
        (4, 8_000),
        (8, 16_000),
        (16, 32_000),
    ];
    for (workers, expected) in cases {
        assert_eq!(
            averaging_budget(6_000, workers),
            expected,
            "{workers} workers"
        );
    }
    // A budget that does not divide by 3 rounds each worker's part up.
    assert_eq!(averaging_budget(10, 4), 16);
    assert_eq!(averaging_budget(12_000, 8), 32_000);
}

#[test]
fn averaging_ddpg_work_shares_the_batch_up_to_4_then_cuts_the_updates() {
    // Worked by hand from the rule's words: up to 4 workers 256 / N each
    // and 40 updates; from 5 on 64 each and 40 x 4 / N updates, rounded.
    let cases = [
        (1, (256, 40)),
        (2, (128, 40)),
        (4, (64, 40)),
        // 160 / 6 = 26.7 -> 27.
        (6, (64, 27)),
        (8, (64, 20)),
        // 160 / 12 = 13.3 -> 13.
        (12, (64, 13)),
        (16, (64, 10)),
        (32, (64, 5)),
    ];
    for (workers, expected) in cases {
        assert_eq!(
            averaging_ddpg_work(256, 40, workers),
            expected,
            "{workers} workers"
        );
    }
    // Small presets never reach zero.
    assert_eq!(averaging_ddpg_work(2, 1, 64), (1, 1));
    assert_eq!(averaging_ddpg_work(256, 40, 0), (256, 40));
}

#[test]
fn every_preset_round_trips_through_toml() {
    for p in PRESETS {
        let cfg = preset(p.name).unwrap();
        assert_eq!(cfg.preset, p.name);
        let again = Registries::default()
            .from_toml(&cfg.to_toml(), "test")
            .unwrap();
        assert_eq!(cfg, again, "{}", p.name);
    }
}

#[test]
fn f32_settings_read_as_written_and_survive_the_tree() {
    let cfg = preset("worm-reinforce").unwrap();
    let worm: shoal_rl_env::WormConfig = cfg.env.settings().unwrap();
    assert_eq!(worm.control_dt, 0.04);
    let tree = cfg.to_table();
    assert_eq!(tree["env"]["control_dt"].to_string(), "0.04");
    let again: RunConfig = toml::Value::Table(tree).try_into().unwrap();
    assert_eq!(again, cfg);
}

#[test]
fn longer_worm_presets_differ_from_the_worm_presets_in_links_measured_rates_and_pool_budget_only() {
    for (name, base, links, pool_scales) in [
        ("worm5-reinforce", "worm-reinforce", 5, None),
        ("worm5-pool", "worm-pool", 5, Some(vec![1.0, 3.0])),
        ("worm7-reinforce", "worm-reinforce", 7, None),
        ("worm7-pool", "worm-pool", 7, Some(vec![1.0, 3.0])),
    ] {
        let mut longer = preset(name).unwrap();
        let worm: shoal_rl_env::WormConfig = longer.env.settings().unwrap();
        assert_eq!(worm.links, links, "{name}");
        longer.env = EnvConfig::new("worm", &worm.links(3)).unwrap();
        let mut reinforce: ReinforceConfig = longer.algo.settings().unwrap();
        assert_eq!(reinforce.learning_rate, 1e-3, "{name}");
        let base_cfg = preset_or_config(base);
        let base_reinforce: ReinforceConfig = base_cfg.algo.settings().unwrap();
        reinforce.learning_rate = base_reinforce.learning_rate;
        longer.algo = AlgoConfig::new("reinforce", &reinforce).unwrap();
        if let Some(scales) = pool_scales {
            assert_eq!(longer.parallel.worker_lr_scales, scales, "{name}");
            longer.parallel.worker_lr_scales = base_cfg.parallel.worker_lr_scales.clone();
            assert_eq!(longer.train.episodes, 20_000, "{name}");
            longer.train.episodes = base_cfg.train.episodes;
        }
        longer.preset = base.into();
        assert_eq!(longer, base_cfg, "{name}");
    }
}

#[test]
fn configs_written_before_per_worker_settings_still_read() {
    let mut old = preset("worm5-pool").unwrap().to_table();
    let parallel = old["parallel"].as_table_mut().unwrap();
    parallel.remove("worker_lr_scales");
    parallel.insert("worker0_lr_scale".into(), toml::Value::Float(0.25));
    let text = toml::to_string(&old).unwrap();
    assert!(text.contains("worker0_lr_scale = 0.25"), "{text}");
    let cfg = Registries::default().from_toml(&text, "old.toml").unwrap();
    assert_eq!(cfg.parallel.worker_lr_scales, vec![0.25]);
    assert_eq!(cfg.parallel.lr_scale_of(0), 0.25);
    assert_eq!(cfg.parallel.lr_scale_of(1), 1.0);
}

#[test]
fn evaluation_envs_take_eval_env_over_env_and_bad_keys_are_refused() {
    // The pendulum presets test on the paper's upright goal.
    let cfg = preset("pendulum-hac3").unwrap();
    let eval = cfg.eval_env_config().unwrap();
    assert_eq!(
        eval.settings["goal_angle_range"],
        toml::Value::try_from([0.0, 0.0]).unwrap()
    );
    assert_ne!(
        cfg.env.settings["goal_angle_range"],
        eval.settings["goal_angle_range"]
    );
    assert_eq!(eval.settings["max_torque"], cfg.env.settings["max_torque"]);
    // It goes through config.toml.
    assert_eq!(
        Registries::default()
            .from_toml(&cfg.to_toml(), "t")
            .unwrap(),
        cfg
    );

    // A preset without one takes `--set eval_env.KEY`; the evaluation
    // env of the learner it builds is that env: episodes of 3 steps
    // where training has 50 (an untrained agent reaches no goal).
    let toy = preset("toy-ddpg-her").unwrap();
    assert_eq!(toy.eval_env_config().unwrap(), toy.env);
    let eval_length = |cfg: &RunConfig| {
        let mut learner = make_learner(cfg, 0, 1.0).unwrap();
        let report = learner.evaluate(4, 3).unwrap();
        (
            report.length_mean,
            learner.learn(1).unwrap().episode_lengths,
        )
    };
    let short = with_overrides(&toy, &["eval_env.max_episode_steps=3".into()]).unwrap();
    assert_eq!(short.env, toy.env, "training keeps its env");
    assert_eq!(eval_length(&short), (3.0, vec![50]));
    assert_eq!(eval_length(&toy), (50.0, vec![50]));

    for (assignment, expected) in [
        ("eval_env.nosuch=1", "unknown key `eval_env.nosuch`"),
        ("eval_env.kind=\"worm\"", "cannot set `kind`"),
        ("eval_env.distance_threshold=true", "eval_env: "),
    ] {
        let message = with_overrides(&toy, &[assignment.into()])
            .unwrap_err()
            .to_string();
        assert!(message.contains(expected), "{assignment}: {message}");
    }
    // Values are checked where the env is built, as `[env]`'s are.
    let negative = with_overrides(&toy, &["eval_env.distance_threshold=-1".into()]).unwrap();
    let message = make_learner(&negative, 0, 1.0).err().unwrap().to_string();
    assert!(message.contains("distance_threshold"), "{message}");
}

#[test]
fn unknown_preset_lists_the_choices() {
    let err = preset("worm-reinfroce").unwrap_err().to_string();
    assert!(err.contains("unknown preset `worm-reinfroce`"), "{err}");
    for p in PRESETS {
        assert!(err.contains(p.name), "{err} misses {}", p.name);
    }
}

#[test]
fn malformed_override_value_is_an_error() {
    let err = resolve("toy-reinforce", &["algo.gamma=fast".into()])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`algo.gamma` expects a float, got `fast`"),
        "{err}"
    );
    let ok = resolve("toy-reinforce", &["algo.gamma=0.5".into()]).unwrap();
    let r: ReinforceConfig = ok.algo.settings().unwrap();
    assert_eq!(r.gamma, 0.5);
}

#[test]
fn setting_any_key_of_any_preset_to_its_own_value_changes_nothing() {
    for p in PRESETS {
        let cfg = preset(p.name).unwrap();
        let keys = crate::overrides::list_keys(&cfg.to_table());
        assert!(keys.len() > 20, "{}: {} keys", p.name, keys.len());
        for (key, value) in &keys {
            let set = format!("{key}={value}");
            let same = with_overrides(&cfg, std::slice::from_ref(&set))
                .unwrap_or_else(|e| panic!("{}: --set {set}: {e}", p.name));
            assert_eq!(same, cfg, "{}: --set {set}", p.name);
            let text = same.to_toml();
            assert_eq!(
                Registries::default().from_toml(&text, "test").unwrap(),
                cfg,
                "{}: {text}",
                p.name
            );
        }
    }
}

#[test]
fn setting_a_key_to_another_value_changes_that_key_alone() {
    use toml::Value;
    for p in PRESETS {
        let cfg = preset(p.name).unwrap();
        let before = crate::overrides::list_keys(&cfg.to_table());
        let mut changed = 0;
        for (key, value) in &before {
            let other = match toml::from_str::<toml::Table>(&format!("v = {value}")).unwrap()["v"] {
                Value::Integer(i) => (i + 1).to_string(),
                Value::Float(f) => format!("{:?}", f * 2.0 + 0.25),
                Value::Boolean(b) => (!b).to_string(),
                _ => continue,
            };
            let set = format!("{key}={other}");
            let after = crate::overrides::list_keys(
                &with_overrides(&cfg, std::slice::from_ref(&set))
                    .unwrap_or_else(|e| panic!("{}: --set {set}: {e}", p.name))
                    .to_table(),
            );
            let differ: Vec<_> = before.iter().zip(&after).filter(|(a, b)| a != b).collect();
            assert_eq!(before.len(), after.len(), "{}: --set {set}", p.name);
            assert_eq!(differ.len(), 1, "{}: --set {set}: {differ:?}", p.name);
            assert_eq!(&differ[0].1.0, key, "{}: --set {set}", p.name);
            changed += 1;
        }
        assert!(
            changed * 2 > before.len(),
            "{}: {changed} of {}",
            p.name,
            before.len()
        );
    }
}

#[test]
fn values_the_preset_files_write_out_follow_their_sources() {
    // An arm HAC preset's subgoals span the object's region over its
    // table, up to 10 cm above it (the ball's net may lie 0.3 m beyond).
    for (name, margin) in [
        ("push-hac", 0.0),
        ("push-far-hac", 0.0),
        ("push-far-hac3", 0.0),
        ("ball-hac", 0.3),
    ] {
        let cfg = preset_or_config(name);
        let arm: shoal_rl_env::arm::ArmConfig = match cfg.env.kind.as_str() {
            "arm-push" => {
                cfg.env
                    .settings::<shoal_rl_env::ArmPushConfig>()
                    .unwrap()
                    .arm
            }
            _ => {
                cfg.env
                    .settings::<shoal_rl_env::BallToNetConfig>()
                    .unwrap()
                    .arm
            }
        };
        let (low, high) = arm.object_region(margin, 0.1);
        let hac: HacConfig = cfg.algo.settings().unwrap();
        assert_eq!(hac.subgoal_low.as_ref(), Some(&low), "{name}");
        assert_eq!(hac.subgoal_high.as_ref(), Some(&high), "{name}");
        // H steps of H subgoals cover the episode.
        let horizon = if arm.max_episode_steps > 100 { 15 } else { 10 };
        assert!(hac.horizon == horizon || hac.levels == 3, "{name}");
    }
    // The paper tasks' subgoal thresholds are their envs' own.
    let reacher = shoal_rl_env::Ur5ReacherConfig::default();
    let pendulum = shoal_rl_env::InvertedPendulumConfig::default();
    for levels in 1..=3 {
        let hac: HacConfig = preset_or_config(&format!("ur5-hac{levels}"))
            .algo
            .settings()
            .unwrap();
        let angle = f64::from(reacher.angle_threshold);
        assert_eq!(
            hac.subgoal_thresholds,
            Some(vec![angle, angle, angle, 2.0, 2.0, 2.0])
        );
        let tau = std::f32::consts::TAU;
        assert_eq!(hac.subgoal_high, Some(vec![tau, tau, tau, 4.0, 4.0, 4.0]));
        let top = [reacher.max_episode_steps, 25, 10][levels - 1];
        assert_eq!((hac.levels, hac.horizon), (levels, top));
        let hac: HacConfig = preset(&format!("pendulum-hac{levels}"))
            .unwrap()
            .algo
            .settings()
            .unwrap();
        let thresholds = [pendulum.angle_threshold, pendulum.velocity_threshold];
        assert_eq!(
            hac.subgoal_thresholds,
            Some(thresholds.map(f64::from).to_vec())
        );
        let top = [pendulum.max_episode_steps, 32, 10][levels - 1];
        assert_eq!((hac.levels, hac.horizon), (levels, top));
    }
}

#[test]
fn every_preset_file_says_what_and_why_and_merges_over_the_env_defaults() {
    for p in PRESETS {
        assert!(!p.about().is_empty(), "{}", p.name);
        assert!(p.toml.starts_with("# "), "{}: a preset says why", p.name);
    }
    // A key a file sets overrides the env's default; nested tables merge.
    let far = preset("push-far-hac").unwrap();
    let arm = &far.env.settings["arm"];
    assert_eq!(arm["max_episode_steps"].as_integer(), Some(200));
    assert!(
        arm.get("substeps").is_some(),
        "defaults beside the file's keys"
    );
}

#[test]
fn unset_optional_keys_are_shown_and_named_by_the_unknown_key_error() {
    let cfg = preset("toy-reinforce").unwrap();
    assert!(cfg.train.target_success.is_none() && cfg.train.env_steps.is_none());
    let text = commented(
        &cfg.to_toml(),
        &key_docs(&Registries::default(), &cfg).unwrap(),
    );
    // At the end of `[train]`, each with its doc above it.
    let train = &text[text.find("[train]").unwrap()..text.find("[parallel]").unwrap()];
    for key in ["target_success", "target_return", "env_steps"] {
        let line = format!("# {key} = (unset)");
        let at = train
            .find(&line)
            .unwrap_or_else(|| panic!("{key}: {train}"));
        assert!(train[..at].ends_with("\n"), "{train}");
    }
    assert!(
        train.ends_with("(unset)\n\n"),
        "the blank line stays last: {train}"
    );
    // The text still reads as the same config.
    assert_eq!(
        Registries::default().from_toml(&text, "commented").unwrap(),
        cfg
    );
    let typo = resolve("toy-reinforce", &["train.target_sucess=0.5".into()])
        .unwrap_err()
        .to_string();
    assert!(typo.contains("unknown key `train.target_sucess`"), "{typo}");
    assert!(
        typo.contains("target_success") && typo.contains("env_steps"),
        "{typo}"
    );
}
