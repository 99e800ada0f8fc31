use shoal_rl_core::Alone;

use super::*;

/// Networks with one hidden layer of `hidden` units, Adam at 1e-3.
/// Networks for input 3, action 2, one hidden layer of 8, Adam at 1e-3,
/// with `critics` critics and an actor of `actor`'s kind.
pub(super) fn small_config(critics: usize, actor: ActorKind) -> ActorCriticConfig {
    ActorCriticConfig {
        input_dim: 3,
        act_dim: 2,
        hidden: vec![8],
        actor_lr: 1e-3,
        critic_lr: 1e-3,
        max_grad_norm: None,
        value_bound: None,
        critics,
        actor,
        temperature: TemperatureConfig::default(),
    }
}

/// One transition for [`small_config`]'s networks, without draws.
pub(super) fn one_row_batch() -> NetBatch {
    NetBatch {
        inputs: vec![0.1, 0.2, 0.3],
        next_inputs: vec![0.2, 0.2, 0.2],
        actions: vec![0.5, -0.5],
        rewards: vec![-1.0],
        terminals: vec![false],
        next_action_noise: Vec::new(),
        action_noise: Vec::new(),
    }
}

fn tiny_networks() -> ActorCritic {
    ActorCritic::new(&small_config(1, ActorKind::Deterministic), 5)
}

/// A one-hidden-layer ReLU network in f64 from burn's flat layout
/// (weight `[in, out]` row-major, then bias, layer by layer).
fn mlp64(params: &[f64], sizes: [usize; 3], x: &[f64]) -> f64 {
    let [inputs, hidden, _] = sizes;
    let (w1, rest) = params.split_at(inputs * hidden);
    let (b1, rest) = rest.split_at(hidden);
    let (w2, b2) = rest.split_at(hidden);
    let h: Vec<f64> = (0..hidden)
        .map(|j| (b1[j] + (0..inputs).map(|i| x[i] * w1[i * hidden + j]).sum::<f64>()).max(0.0))
        .collect();
    b2[0] + (0..hidden).map(|j| h[j] * w2[j]).sum::<f64>()
}

/// Parameters of the oracle's actor (input 2, hidden [3], action 1).
const ACTOR64: usize = 2 * 3 + 3 + 3 + 1;
/// Parameters of each of the oracle's critics (input 2 + action 1, hidden [3]).
const CRITIC64: usize = 3 * 3 + 3 + 3 + 1;

/// DDPG's losses (Lillicrap et al.; baselines' HER) and TD3's
/// (Fujimoto et al. 2018, Algorithm 1) in f64, written from the
/// papers: ã' = clip(μ'(s') + clip(σε, −c, c), −1, 1),
/// y = clip(r + γ(1 − d)·min_j Q'_j(s', ã')), critic j's loss
/// mean (Q_j(s, a) − y)² (or the cross-entropy `s.critic_loss` names),
/// actor loss −mean Q_1(s, μ(s)) + λ·mean μ(s)².
/// `online` and `target` are actor ‖ critic 1 ‖ … for input 2, action 1,
/// hidden [3]; `critics` of them. With `bound` = H each critic is the
/// HAC authors' −H·sigmoid(z − ln(H/0.067 − 1)) (their `critic.py`).
/// Returns each critic's loss and the actor's.
fn losses64(
    online: &[f64],
    target: &[f64],
    batch: &NetBatch,
    s: &UpdateSettings,
    bound: Option<f64>,
    critics: usize,
) -> (Vec<f64>, f64) {
    let actor = |p: &[f64], x: &[f64]| mlp64(&p[..ACTOR64], [2, 3, 1], x).tanh();
    let critic = |p: &[f64], j: usize, x: &[f64], a: f64| {
        let params = &p[ACTOR64 + j * CRITIC64..ACTOR64 + (j + 1) * CRITIC64];
        let z = mlp64(params, [3, 3, 1], &[x[0], x[1], a]);
        match bound {
            Some(h) => -h / (1.0 + (-(z - (h / 0.067 - 1.0).ln())).exp()),
            None => z,
        }
    };
    let row = |v: &[f32], i: usize| [v[2 * i] as f64, v[2 * i + 1] as f64];
    let n = batch.rewards.len();
    let (mut critic_losses, mut actor_loss) = (vec![0.0; critics], 0.0);
    for i in 0..n {
        let (x, next) = (row(&batch.inputs, i), row(&batch.next_inputs, i));
        let mut next_action = actor(target, &next);
        if s.target_policy_noise > 0.0 {
            let (sigma, c) = (s.target_policy_noise as f64, s.target_noise_clip as f64);
            let epsilon = (sigma * batch.next_action_noise[i] as f64).clamp(-c, c);
            next_action = (next_action + epsilon).clamp(-1.0, 1.0);
        }
        let next_q = (0..critics)
            .map(|j| critic(target, j, &next, next_action))
            .fold(f64::INFINITY, f64::min);
        let bootstrap = if batch.terminals[i] {
            0.0
        } else {
            s.gamma as f64 * next_q
        };
        let mut y = batch.rewards[i] as f64 + bootstrap;
        if let Some((low, high)) = s.target_clip {
            y = y.clamp(low as f64, high as f64);
        }
        for (j, loss) in critic_losses.iter_mut().enumerate() {
            let q = critic(online, j, &x, batch.actions[i] as f64);
            *loss += match (s.critic_loss, bound) {
                // Binary cross-entropy of the head's probability Q/−H
                // against the target's.
                (CriticLoss::CrossEntropy, Some(h)) => {
                    let (p, t) = (q / -h, y.clamp(-h, 0.0) / -h);
                    -(t * p.ln() + (1.0 - t) * (1.0 - p).ln())
                }
                _ => (q - y).powi(2),
            } / n as f64;
        }
        let mu = actor(online, &x);
        actor_loss += (-critic(online, 0, &x, mu) + s.action_l2 as f64 * mu * mu) / n as f64;
    }
    (critic_losses, actor_loss)
}

#[test]
fn losses_and_gradients_match_the_paper_in_f64_with_distinct_target_networks() {
    check_against_f64(None, true, 1, 0.0);
}

#[test]
fn without_target_networks_the_bounded_critic_bootstraps_from_itself_in_f64() {
    check_against_f64(Some(10.0), false, 1, 0.0);
}

#[test]
fn without_target_networks_a_linear_critic_bootstraps_from_itself_in_f64() {
    check_against_f64(None, false, 1, 0.0);
}

#[test]
fn a_bounded_critic_on_cross_entropy_takes_the_gradient_of_its_logistic_loss_in_f64() {
    check_loss_against_f64(Some(10.0), false, 1, 0.0, CriticLoss::CrossEntropy);
}

#[test]
fn td3_clipped_double_q_target_with_smoothing_noise_matches_the_paper_in_f64() {
    check_against_f64(None, true, 2, 0.6);
}

/// The networks, batch and settings the f64 oracle checks: `critics`
/// critics of input 2, action 1, hidden [3], whose online parameters
/// differ from their targets; `noise` is TD3's smoothing σ (0: none),
/// with a clip of 0.5 that the batch's draws exceed in both directions.
struct F64Case {
    networks: ActorCritic,
    online: Vec<f32>,
    target: Vec<f32>,
    batch: NetBatch,
    settings: UpdateSettings,
}

impl F64Case {
    fn new(
        bound: Option<f32>,
        target_networks: bool,
        critics: usize,
        noise: f32,
        critic_lr: f64,
    ) -> F64Case {
        let config = ActorCriticConfig {
            input_dim: 2,
            act_dim: 1,
            hidden: vec![3],
            actor_lr: 1e-3,
            critic_lr,
            max_grad_norm: None,
            value_bound: bound,
            critics,
            actor: ActorKind::Deterministic,
            temperature: TemperatureConfig::default(),
        };
        let mut networks = ActorCritic::new(&config, 11);
        let target: Vec<f32> = networks.parameters();
        assert_eq!(target.len(), ACTOR64 + critics * CRITIC64);
        // A zero step marks the networks trained (Adam moves nothing on a
        // zero gradient), so new parameters leave the targets where they are.
        let every = UpdateSettings::ddpg(0.9, 0.0, None);
        networks
            .apply(&mut vec![0.0; target.len()], &every)
            .unwrap();
        let online: Vec<f32> = target
            .iter()
            .enumerate()
            .map(|(i, p)| p + 0.3 * ((i as f32 * 1.7).sin()))
            .collect();
        networks.set_parameters(&online).unwrap();
        assert!(networks.target_parameters() == target);

        // Rewards of −1/0 as in the goal tasks; row 1 ends its episode and
        // row 2's target rises above the clip's 0.
        let batch = NetBatch {
            inputs: vec![0.4, -0.7, -0.2, 0.9, 1.1, 0.3],
            next_inputs: vec![0.5, -0.6, 2.0, 2.0, 1.0, 0.6],
            actions: vec![0.3, -0.8, 0.6],
            rewards: vec![-1.0, 0.0, 1.5],
            terminals: vec![false, true, false],
            next_action_noise: if noise > 0.0 {
                vec![1.3, -0.4, -2.5]
            } else {
                Vec::new()
            },
            action_noise: Vec::new(),
        };
        let settings = UpdateSettings {
            gamma: 0.9,
            action_l2: 0.7,
            target_clip: Some((-10.0, 0.0)),
            target_networks,
            target_policy_noise: noise,
            target_noise_clip: 0.5,
            update_actor: true,
            actor_after_critic: false,
            bound_gradient: BoundGradient::Tanh,
            preactivation_l2: 0.0,
            critic_loss: CriticLoss::Squared,
        };
        F64Case {
            networks,
            online,
            target,
            batch,
            settings,
        }
    }
}

/// [`F64Case`]'s losses and gradients against [`losses64`]; without
/// target networks the oracle bootstraps from the online parameters
/// (held fixed: no gradient flows into y).
fn check_against_f64(bound: Option<f32>, target_networks: bool, critics: usize, noise: f32) {
    check_loss_against_f64(bound, target_networks, critics, noise, CriticLoss::Squared);
}

/// [`check_against_f64`] with the critics minimising `critic_loss`; the
/// reported critic loss is their squared error whatever they minimise.
fn check_loss_against_f64(
    bound: Option<f32>,
    target_networks: bool,
    critics: usize,
    noise: f32,
    critic_loss: CriticLoss,
) {
    let case = F64Case::new(bound, target_networks, critics, noise, 1e-3);
    let (mut networks, batch) = (case.networks, case.batch);
    let settings = UpdateSettings {
        critic_loss,
        ..case.settings
    };
    let (online, target) = (case.online, case.target);
    let (grads, stats) = networks.gradients(&batch, &settings).unwrap();

    let online64: Vec<f64> = online.iter().map(|&p| p as f64).collect();
    let target64: Vec<f64> = match target_networks {
        true => target.iter().map(|&p| p as f64).collect(),
        false => online64.clone(),
    };
    let bound64 = bound.map(f64::from);
    let oracle = |online: &[f64]| losses64(online, &target64, &batch, &settings, bound64, critics);
    let squared = UpdateSettings {
        critic_loss: CriticLoss::Squared,
        ..settings
    };
    let (critic_losses, actor_loss) =
        losses64(&online64, &target64, &batch, &squared, bound64, critics);
    let critic_loss = critic_losses.iter().sum::<f64>() / critics as f64;
    assert!(
        (stats.critic_loss - critic_loss).abs() < 1e-5,
        "{} vs {critic_loss}",
        stats.critic_loss
    );
    let reported = stats.actor_loss.unwrap();
    assert!(
        (reported - actor_loss).abs() < 1e-5,
        "{reported} vs {actor_loss}"
    );

    // Each network's gradient is that of its own loss: central finite
    // differences of the f64 losses, the actor's through the first
    // critic (whose weights take no gradient from the actor loss).
    for (k, &g) in grads.iter().enumerate() {
        let h = 1e-6;
        let at = |delta: f64| {
            let mut p = online64.clone();
            p[k] += delta;
            let (critic_losses, actor) = oracle(&p);
            match k.checked_sub(ACTOR64) {
                None => actor,
                Some(c) => critic_losses[c / CRITIC64],
            }
        };
        let expected = (at(h) - at(-h)) / (2.0 * h);
        assert!(
            (g as f64 - expected).abs() < 1e-4 * (1.0 + expected.abs()),
            "parameter {k}: gradient {g} against {expected}"
        );
    }
}

/// A reducer that keeps what it is given to average, message by message.
#[derive(Default)]
struct Recorder(Vec<Vec<f32>>);

impl MeanReducer for Recorder {
    fn mean(&mut self, values: &mut [f32]) -> Result<()> {
        self.0.push(values.to_vec());
        Ok(())
    }
}

/// TD3's update in the order of Fujimoto et al.'s code and SB3: the
/// critics' gradient (message 1) is the f64 oracle's at the start; the
/// actor's (message 2) is the oracle's on the critics *after* their
/// step, and not the one-pass gradient on the critics before it (a
/// large critic step size makes the two differ).
#[test]
fn actor_after_critic_takes_the_actors_gradient_on_the_stepped_critics_in_f64() {
    let case = F64Case::new(None, true, 2, 0.6, 0.05);
    let (mut networks, batch) = (case.networks, case.batch);
    let settings = UpdateSettings {
        actor_after_critic: true,
        ..case.settings
    };
    let (one_pass, _) = networks.clone().gradients(&batch, &case.settings).unwrap();
    let mut messages = Recorder::default();
    let stats = networks.update(&batch, &settings, &mut messages).unwrap();
    let [critic_message, actor_message] = &messages.0[..] else {
        panic!("{} messages, not 2", messages.0.len());
    };
    assert_eq!(critic_message.len(), 2 * CRITIC64);
    assert_eq!(actor_message.len(), ACTOR64);
    assert!(
        critic_message[..] == one_pass[ACTOR64..],
        "critics first, as in one pass"
    );

    let after = networks.parameters();
    assert!(after[..ACTOR64] != case.online[..ACTOR64], "actor stepped");
    assert!(
        after[ACTOR64..] != case.online[ACTOR64..],
        "critics stepped"
    );
    let target64: Vec<f64> = case.target.iter().map(|&p| p as f64).collect();
    // The actor as it was, the critics as they are after their step.
    let mixed: Vec<f64> = case.online[..ACTOR64]
        .iter()
        .chain(&after[ACTOR64..])
        .map(|&p| p as f64)
        .collect();
    let actor_loss = |p: &[f64]| losses64(p, &target64, &batch, &settings, None, 2).1;
    assert!((stats.actor_loss.unwrap() - actor_loss(&mixed)).abs() < 1e-5);
    let mut apart = 0;
    for k in 0..ACTOR64 {
        let h = 1e-6;
        let at = |delta: f64| {
            let mut p = mixed.clone();
            p[k] += delta;
            actor_loss(&p)
        };
        let expected = (at(h) - at(-h)) / (2.0 * h);
        let tolerance = 1e-4 * (1.0 + expected.abs());
        let g = actor_message[k] as f64;
        assert!(
            (g - expected).abs() < tolerance,
            "parameter {k}: {g} against {expected}"
        );
        apart += usize::from((one_pass[k] as f64 - expected).abs() > 10.0 * tolerance);
    }
    assert!(apart > 0, "the one-pass gradient would pass too: no test");
}

#[test]
fn a_delayed_update_steps_the_critics_and_leaves_the_actor_and_targets() {
    let mut networks = ActorCritic::new(&small_config(2, ActorKind::Deterministic), 4);
    let batch = NetBatch {
        inputs: vec![0.1, 0.2, 0.3, -0.4, 0.5, 0.0],
        next_inputs: vec![0.2, 0.2, 0.2, 0.1, -0.1, 0.3],
        actions: vec![0.5, -0.5, 0.9, 0.1],
        rewards: vec![-1.0, 0.0],
        terminals: vec![false, false],
        next_action_noise: vec![0.3, -1.2, 2.0, 0.1],
        action_noise: Vec::new(),
    };
    let delayed = UpdateSettings {
        target_policy_noise: 0.2,
        target_noise_clip: 0.5,
        update_actor: false,
        ..UpdateSettings::ddpg(0.98, 1.0, None)
    };
    let actor_params = networks.sizes()[0];
    let (before, targets) = (networks.parameters(), networks.target_parameters());
    let (grads, stats) = networks.gradients(&batch, &delayed).unwrap();
    assert_eq!(grads.len(), before.len() - actor_params, "critics only");
    assert_eq!(stats.actor_loss, None);
    networks.update(&batch, &delayed, &mut Alone).unwrap();
    let after = networks.parameters();
    assert!(
        after[..actor_params] == before[..actor_params],
        "actor kept"
    );
    let moved = |range: std::ops::Range<usize>| after[range.clone()] != before[range];
    let critic = networks.sizes()[1];
    assert!(
        moved(actor_params..actor_params + critic),
        "critic 1 stepped"
    );
    assert!(
        moved(actor_params + critic..before.len()),
        "critic 2 stepped"
    );
    assert!(networks.target_parameters() == targets, "targets kept");

    // The actor's update steps it too, from the gradient of both parts.
    let stepping = UpdateSettings {
        update_actor: true,
        actor_after_critic: false,
        ..delayed
    };
    let stats = networks.update(&batch, &stepping, &mut Alone).unwrap();
    assert!(stats.actor_loss.is_some_and(f64::is_finite));
    assert!(networks.parameters()[..actor_params] != before[..actor_params]);
    // A critics-only gradient is refused where the actor's is expected.
    let mut short = vec![0.0; before.len() - actor_params];
    assert!(matches!(
        networks.apply(&mut short, &stepping),
        Err(Error::Shape(m)) if m.starts_with("gradient has ")
    ));
}

#[test]
fn two_critics_save_and_load_exactly_and_one_critic_state_is_refused() {
    let two = |seed| ActorCritic::new(&small_config(2, ActorKind::Deterministic), seed);
    let mut trained = two(1);
    let batch = one_row_batch();
    let settings = UpdateSettings::ddpg(0.9, 1.0, None);
    trained.update(&batch, &settings, &mut Alone).unwrap();
    trained.update_targets(0.5).unwrap();
    let mut copy = two(2);
    copy.load_state(&trained.save_state()).unwrap();
    assert!(copy.parameters() == trained.parameters());
    assert!(copy.target_parameters() == trained.target_parameters());
    // The same next step: Adam's moments came along.
    trained.update(&batch, &settings, &mut Alone).unwrap();
    copy.update(&batch, &settings, &mut Alone).unwrap();
    assert!(copy.parameters() == trained.parameters());

    let mut one = tiny_networks();
    assert!(matches!(
        one.load_state(&trained.save_state()),
        Err(Error::Shape(m)) if m == "actor-critic state has 2 critics, these networks 1"
    ));
}

#[test]
fn critic_target_is_clipped_and_not_bootstrapped_at_terminals() {
    let mut networks = tiny_networks();
    // Terminal transitions with a reward outside [−2, 0]: y = clip(5) = 0.
    let batch = NetBatch {
        inputs: vec![0.1, 0.2, 0.3, -0.3, 0.0, 0.5],
        next_inputs: vec![9.0; 6],
        actions: vec![0.5, -0.5, 0.0, 1.0],
        rewards: vec![5.0, 5.0],
        terminals: vec![true, true],
        next_action_noise: Vec::new(),
        action_noise: Vec::new(),
    };
    let q = networks.q_values(&batch.inputs, &batch.actions);
    let mean_sq = |y: f32| q.iter().map(|v| ((v - y) as f64).powi(2)).sum::<f64>() / 2.0;
    let clipped = UpdateSettings::ddpg(0.5, 1.0, Some((-2.0, 0.0)));
    let (_, stats) = networks.gradients(&batch, &clipped).unwrap();
    assert!((stats.critic_loss - mean_sq(0.0)).abs() < 1e-5);
    let unclipped = UpdateSettings {
        target_clip: None,
        ..clipped
    };
    let (_, stats) = networks.gradients(&batch, &unclipped).unwrap();
    assert!((stats.critic_loss - mean_sq(5.0)).abs() < 1e-4);
}

#[test]
fn polyak_zero_copies_the_networks_and_one_keeps_the_targets() {
    let mut networks = tiny_networks();
    let batch = one_row_batch();
    let settings = UpdateSettings::ddpg(0.9, 1.0, None);
    networks.update(&batch, &settings, &mut Alone).unwrap();
    let targets = |n: &ActorCritic| n.target_parameters();
    let before = targets(&networks);
    assert!(
        before != networks.parameters(),
        "a step moves the networks away from the targets"
    );
    networks.update_targets(1.0).unwrap();
    assert!(targets(&networks) == before);
    networks.update_targets(0.0).unwrap();
    assert!(targets(&networks) == networks.parameters());
}

#[test]
fn update_rejects_inconsistent_batches() {
    let mut networks = tiny_networks();
    let batch = NetBatch {
        inputs: vec![0.0; 3],
        rewards: vec![0.0],
        ..NetBatch::default()
    };
    let settings = UpdateSettings::ddpg(0.9, 1.0, None);
    assert!(matches!(
        networks.update(&batch, &settings, &mut Alone),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        networks.apply(&mut [0.0; 3], &settings),
        Err(Error::Shape(m)) if m.starts_with("gradient has 3 values, actor and critics have ")
    ));
}

/// One input, one action, one hidden layer of 2: the critic set by hand.
fn one_action_networks() -> ActorCritic {
    let config = ActorCriticConfig {
        input_dim: 1,
        act_dim: 1,
        hidden: vec![2],
        actor_lr: 1e-2,
        ..small_config(1, ActorKind::Deterministic)
    };
    ActorCritic::new(&config, 3)
}

/// The critic `Q(s, a) = a + 2`, rising toward the action's upper bound
/// (burn's layout: `w1` `[in = (s, a), hidden]` row-major, `b1`, `w2`, `b2`).
const CRITIC_RISING: [f32; 9] = [0.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 0.0];
/// The critic `Q(s, a) = −|a − 0.3|`, its maximum inside the box.
const CRITIC_PEAK_INSIDE: [f32; 9] = [0.0, 0.0, 1.0, -1.0, -0.3, 0.3, -1.0, -1.0, 0.0];

/// `updates` actor steps against the fixed critic `critic`; returns the
/// mean action over the batch's states afterwards.
fn train_actor_against(
    networks: &mut ActorCritic,
    critic: &[f32],
    settings: &UpdateSettings,
    updates: usize,
) -> f32 {
    let states: Vec<f32> = (0..8).map(|i| i as f32 / 4.0 - 1.0).collect();
    let batch = NetBatch {
        inputs: states.clone(),
        next_inputs: states.clone(),
        actions: vec![0.0; 8],
        rewards: vec![0.0; 8],
        terminals: vec![true; 8],
        ..NetBatch::default()
    };
    let hold_critic = |networks: &mut ActorCritic| {
        let mut params = networks.parameters();
        let actor = params.len() - critic.len();
        params[actor..].copy_from_slice(critic);
        networks.set_parameters(&params).unwrap();
    };
    for _ in 0..updates {
        hold_critic(networks);
        networks.update(&batch, settings, &mut Alone).unwrap();
    }
    hold_critic(networks);
    states.iter().map(|s| networks.act(&[*s])[0]).sum::<f32>() / states.len() as f32
}

/// An actor driven into its upper bound, then asked by its critic to
/// come back to 0.3: with `tanh`'s derivative it stays at the bound,
/// with inverting gradients it returns.
fn pinned_then_released(bound_gradient: BoundGradient) -> (f32, f32) {
    let settings = UpdateSettings {
        bound_gradient,
        ..UpdateSettings::ddpg(0.98, 0.0, None)
    };
    let mut networks = one_action_networks();
    let pinned = train_actor_against(&mut networks, &CRITIC_RISING, &settings, 1_500);
    let released = train_actor_against(&mut networks, &CRITIC_PEAK_INSIDE, &settings, 400);
    (pinned, released)
}

#[test]
fn a_tanh_actor_pinned_at_its_bound_stays_there_when_the_critic_moves_inside() {
    let (pinned, released) = pinned_then_released(BoundGradient::Tanh);
    assert!(pinned > 0.999, "driven to the bound: {pinned}");
    assert!(
        released > 0.99,
        "tanh's vanishing gradient holds it: {released}"
    );
}

#[test]
fn inverting_gradients_bring_a_pinned_actor_back_inside() {
    let (pinned, released) = pinned_then_released(BoundGradient::Inverting);
    assert!(pinned > 0.99, "driven to the bound: {pinned}");
    assert!((released - 0.3).abs() < 0.1, "back near 0.3: {released}");
}

#[test]
fn a_preactivation_penalty_keeps_the_actor_off_its_bound() {
    let settings = UpdateSettings {
        preactivation_l2: 0.1,
        ..UpdateSettings::ddpg(0.98, 0.0, None)
    };
    let mut networks = one_action_networks();
    let held = train_actor_against(&mut networks, &CRITIC_RISING, &settings, 1_500);
    assert!(held < AT_BOUND, "the penalty holds it inside: {held}");
}

#[test]
fn inverting_gradients_scale_by_the_room_left_in_the_pushs_direction() {
    let inverting = BoundGradient::Inverting;
    // Descent pushes up when dL/da < 0: scaled by (1 − a)/2.
    assert_eq!(inverting.pre_activation(0.5, -1.0), -0.25);
    // Down: scaled by (1 + a)/2, so from the bound nearly the whole push.
    assert_eq!(inverting.pre_activation(0.5, 1.0), 0.75);
    assert!((inverting.pre_activation(0.999, 1.0) - 0.9995).abs() < 1e-6);
    assert!(BoundGradient::Tanh.pre_activation(0.999, 1.0) < 0.002);
    assert_eq!(BoundGradient::Tanh.pre_activation(0.5, -1.0), -0.75);
    assert_eq!(share_at_bound(&[0.98, -0.99, 0.5, -0.1]), 0.5);
}

#[test]
fn the_update_reports_the_share_of_actions_at_their_bound() {
    let settings = UpdateSettings::ddpg(0.98, 0.0, None);
    let mut networks = one_action_networks();
    let batch = NetBatch {
        inputs: vec![0.5],
        next_inputs: vec![0.5],
        actions: vec![0.0],
        rewards: vec![0.0],
        terminals: vec![true],
        ..NetBatch::default()
    };
    let fresh = networks.update(&batch, &settings, &mut Alone).unwrap();
    assert_eq!(fresh.actor_at_bound, Some(0.0));
    train_actor_against(&mut networks, &CRITIC_RISING, &settings, 1_500);
    let pinned = networks.update(&batch, &settings, &mut Alone).unwrap();
    assert_eq!(pinned.actor_at_bound, Some(1.0));
}

/// A bounded critic (H = 10) driven to its floor −H (its output bias at
/// 25, so sigmoid is 1 in f32), then trained toward the target −2 of a
/// terminal transition: Q after `updates` steps with `critic_loss`.
fn floored_critic_trained(critic_loss: CriticLoss, updates: usize) -> f32 {
    let config = ActorCriticConfig {
        value_bound: Some(10.0),
        critic_lr: 0.05,
        ..small_config(1, ActorKind::Deterministic)
    };
    let mut networks = ActorCritic::new(&config, 7);
    let mut params = networks.parameters();
    *params.last_mut().unwrap() = 25.0;
    networks.set_parameters(&params).unwrap();
    let batch = NetBatch {
        rewards: vec![-2.0],
        terminals: vec![true],
        ..one_row_batch()
    };
    let q = |networks: &ActorCritic| networks.q_values(&batch.inputs, &batch.actions)[0];
    assert_eq!(q(&networks), -10.0, "not at the floor");
    let settings = UpdateSettings {
        critic_loss,
        update_actor: false,
        ..UpdateSettings::ddpg(0.9, 0.0, Some((-10.0, 0.0)))
    };
    for _ in 0..updates {
        networks.update(&batch, &settings, &mut Alone).unwrap();
    }
    q(&networks)
}

#[test]
fn a_critic_saturated_at_its_floor_learns_again_on_cross_entropy_only() {
    // Squared error reaches the logit through sigmoid's slope, 0 here:
    // 300 steps leave Q at the floor, 8 from its target.
    assert_eq!(floored_critic_trained(CriticLoss::Squared, 300), -10.0);
    // Cross-entropy's gradient in the logit is p − t = 1 − 0.2.
    let q = floored_critic_trained(CriticLoss::CrossEntropy, 300);
    assert!((q - -2.0).abs() < 0.5, "Q {q} against the target −2");
}

#[test]
fn cross_entropy_on_a_linear_critic_is_refused_not_run_as_squared_error() {
    let mut networks = ActorCritic::new(&small_config(1, ActorKind::Deterministic), 7);
    let before = networks.parameters();
    let settings = UpdateSettings {
        critic_loss: CriticLoss::CrossEntropy,
        ..UpdateSettings::ddpg(0.9, 0.0, None)
    };
    let err = networks
        .update(&one_row_batch(), &settings, &mut Alone)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cross_entropy needs critics with a bounded head"),
        "{err}"
    );
    assert_eq!(
        networks.parameters(),
        before,
        "a refused update moved the networks"
    );
}
