//! Reading config trees: a file's text, a preset's table or a config with
//! `--set` overrides laid over it, read into a [`RunConfig`] whose env and
//! algorithm settings their registry entries have checked and completed.

use shoal_rl_core::{Error, Result};
use shoal_rl_registry::EnvRegistry;

use crate::algos::AlgoRegistry;
use crate::config::{RunConfig, in_context, one_line};
use crate::overrides::{apply_override_with, overridden_value};

/// Puts the `algo.kind` that `overrides` name (if any, and a string) into
/// a config's own table before it is read: the keys the table leaves out
/// then take the new algorithm's defaults, as if the file had named that
/// kind. (Switched after reading, they would keep the old kind's: TD3 or
/// SAC from a DDPG preset would run with one critic and DDPG's actor.)
pub(crate) fn switch_algo_kind(tree: &mut toml::Table, overrides: &[String]) {
    if let Some(kind @ toml::Value::String(_)) = overridden_value(overrides, "algo.kind")
        && let Some(toml::Value::Table(algo)) = tree.get_mut("algo")
    {
        algo.insert("kind".into(), kind);
    }
}

/// A config tree as a [`RunConfig`] whose env and algorithm `envs` and
/// `algos` hold, their settings checked by their entries.
pub(crate) fn read_tree(
    envs: &EnvRegistry,
    algos: &AlgoRegistry,
    tree: toml::Table,
) -> Result<RunConfig> {
    let mut cfg: RunConfig = toml::Value::Table(tree)
        .try_into()
        .map_err(|e: toml::de::Error| Error::Config(one_line(&e)))?;
    envs.check(&cfg.env)?;
    if !cfg.eval_env.is_empty() {
        envs.check(&cfg.eval_env_config()?)
            .map_err(|e| in_context("eval_env", e))?;
    }
    cfg.algo.settings = algos.get(cfg.algo.kind())?.complete(&cfg.algo.settings)?;
    Ok(cfg)
}

/// `cfg` with `--set` style `key=value` overrides applied in order, each
/// refused with one line when the result would not read.
pub(crate) fn with_overrides(
    envs: &EnvRegistry,
    algos: &AlgoRegistry,
    cfg: &RunConfig,
    overrides: &[String],
) -> Result<RunConfig> {
    if overrides.is_empty() {
        return Ok(cfg.clone());
    }
    let mut tree = cfg.to_table();
    // `[eval_env]` is absent while empty; its keys may be added.
    tree.entry("eval_env")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    // Optional settings are absent while unset; they may be added.
    let accepts = |tree: &toml::Table| {
        read_tree(envs, algos, tree.clone())
            .map(drop)
            .map_err(|e| match e {
                Error::Config(message) => message,
                other => other.to_string(),
            })
    };
    for assignment in overrides {
        apply_override_with(&mut tree, assignment, &accepts)?;
    }
    read_tree(envs, algos, tree).map_err(|e| in_context("after --set", e))
}
