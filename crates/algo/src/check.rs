//! Checks every learner's config shares: network widths, step sizes,
//! gradient-norm limits and counts, each with an upper bound so that no
//! setting can make a learner allocate without limit; and the check DDPG
//! and HAC share on the goal envs they are given (same task, bounded actions).

use shoal_rl_core::{Env, Error, GoalEnv, Result, Space};

/// Widest hidden layer accepted (a 8192² layer with Adam's moments is ~0.8 GB).
pub const MAX_WIDTH: usize = 8192;
/// Most hidden layers accepted.
pub const MAX_LAYERS: usize = 16;
/// Largest batch, per-update episode count, HER `k` and similar count a
/// learner allocates for at once.
pub const MAX_BATCH: usize = 1 << 16;
/// Most hindsight goals per real one (HER papers use 4 to 8).
pub const MAX_HER_K: usize = 64;
/// Longest HAC attempt (the paper uses 10 to 25).
pub const MAX_HORIZON: usize = 1000;
/// Most observation components a HAC subgoal may name.
pub const MAX_SUBGOAL_DIM: usize = 64;

/// An `Error::Config` of the form `"{algo} {key} {why}"`.
pub(crate) fn bad(algo: &str, key: &str, why: impl std::fmt::Display) -> Error {
    Error::Config(format!("{algo} {key} {why}"))
}

/// Hidden widths between 1 and [`MAX_WIDTH`], at most [`MAX_LAYERS`] of them.
pub(crate) fn hidden(algo: &str, widths: &[usize]) -> Result<()> {
    if widths.len() > MAX_LAYERS {
        return Err(bad(
            algo,
            "hidden",
            format!("has {} layers; at most {MAX_LAYERS}", widths.len()),
        ));
    }
    if let Some(w) = widths.iter().find(|w| !(1..=MAX_WIDTH).contains(*w)) {
        return Err(bad(
            algo,
            "hidden",
            format!("layer widths must be between 1 and {MAX_WIDTH}, got {w}"),
        ));
    }
    Ok(())
}

/// A finite, strictly positive value (learning rates, clip limits).
pub(crate) fn positive(algo: &str, key: &str, value: f64) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(bad(
            algo,
            key,
            format!("must be finite and positive, got {value}"),
        ))
    }
}

/// An optional gradient-norm limit: absent, or finite and positive (a
/// negative one would flip the gradient).
pub(crate) fn grad_norm(algo: &str, value: Option<f64>) -> Result<()> {
    value.map_or(Ok(()), |v| positive(algo, "max_grad_norm", v))
}

/// A count in `1..=max`.
pub(crate) fn count(algo: &str, key: &str, value: usize, max: usize) -> Result<()> {
    if (1..=max).contains(&value) {
        Ok(())
    } else {
        Err(bad(
            algo,
            key,
            format!("must be between 1 and {max}, got {value}"),
        ))
    }
}

/// The action space of `env` after checking that `eval_env` is the same task
/// and that actions are bounded (actors squash to the bounds); `algo` names
/// the algorithm in the error.
pub(crate) fn matching_bounded_envs<E: GoalEnv>(
    env: &E,
    eval_env: &E,
    algo: &str,
) -> Result<Space> {
    if eval_env.goal_dim() != env.goal_dim()
        || eval_env.observation_space().dim() != env.observation_space().dim()
        || eval_env.action_space() != env.action_space()
    {
        return Err(Error::Config(
            "the evaluation env differs from the training env".into(),
        ));
    }
    bounded_actions(env, algo)
}

/// The action space of `env`, which must be bounded: actors squash to the
/// bounds, Beta policies scale to them. `who` names the learner in the error.
pub(crate) fn bounded_actions<E: Env + ?Sized>(env: &E, who: &str) -> Result<Space> {
    let action_space = env.action_space().clone();
    if action_space
        .low
        .iter()
        .chain(&action_space.high)
        .any(|b| !b.is_finite())
    {
        return Err(Error::Config(format!("{who} needs a bounded action space")));
    }
    Ok(action_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_reject_what_they_name_and_accept_the_edges() {
        assert!(hidden("x", &[1, MAX_WIDTH]).is_ok());
        assert!(hidden("x", &[]).is_ok());
        let zero = hidden("ddpg", &[64, 0]).unwrap_err().to_string();
        assert!(
            zero.contains("ddpg hidden layer widths must be between 1 and 8192, got 0"),
            "{zero}"
        );
        let message = |r: Result<()>| r.unwrap_err().to_string();
        assert_eq!(
            message(hidden("x", &[MAX_WIDTH + 1])),
            "invalid configuration: x hidden layer widths must be between 1 and 8192, got 8193"
        );
        assert_eq!(
            message(hidden("x", &[4; MAX_LAYERS + 1])),
            "invalid configuration: x hidden has 17 layers; at most 16"
        );
        for bad_value in [0.0, -1e-3, f64::NAN, f64::INFINITY] {
            let message = positive("hac", "actor_lr", bad_value)
                .unwrap_err()
                .to_string();
            assert!(
                message.contains("hac actor_lr must be finite and positive"),
                "{message}"
            );
        }
        assert!(positive("x", "lr", 1e-12).is_ok());
        assert!(grad_norm("x", None).is_ok());
        assert_eq!(
            message(grad_norm("x", Some(-0.5))),
            "invalid configuration: x max_grad_norm must be finite and positive, got -0.5"
        );
        for too_few_or_many in [0, 5] {
            assert_eq!(
                message(count("x", "k", too_few_or_many, 4)),
                format!(
                    "invalid configuration: x k must be between 1 and 4, got {too_few_or_many}"
                )
            );
        }
        assert!(count("x", "k", 4, 4).is_ok());
    }
}
