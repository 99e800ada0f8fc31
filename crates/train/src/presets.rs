//! The built-in presets: every TOML file under `presets/`, found when the
//! crate is built (`build.rs`), so a new preset is its file alone. A preset
//! is data, as RL Baselines3 Zoo keeps its hyperparameters: `about` (one
//! line for `--help`) and the settings that differ from the defaults, with
//! comments saying why. Keys left out take the defaults of their settings
//! struct (the env's from its registry entry); reading one into a
//! [`RunConfig`](crate::config::RunConfig) is
//! [`Registries::preset`](crate::Registries::preset)'s.

use shoal_rl_core::{Error, Result};

/// A built-in preset: its name and its file.
pub struct Preset {
    /// The name `shoal train` takes: the file's name without `.toml`.
    pub name: &'static str,
    /// The preset's file, as embedded.
    pub toml: &'static str,
}

impl Preset {
    /// Its `about` line: what it trains, for `--help` and the
    /// unknown-preset error.
    pub fn about(&self) -> String {
        self.table()
            .get("about")
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
            .to_string()
    }

    /// The file as a TOML table. Every file is parsed by the tests, so a
    /// malformed one never ships.
    pub fn table(&self) -> toml::Table {
        toml::from_str(self.toml)
            .unwrap_or_else(|e| panic!("built-in preset {} is malformed: {e}", self.name))
    }
}

/// Every built-in preset, by name: `shoal train --help`, the
/// unknown-preset error and the tests all read this one table.
pub const PRESETS: &[Preset] = include!(concat!(env!("OUT_DIR"), "/presets.rs"));

/// The entry of the built-in preset `name`, or an error listing them.
pub fn find_preset(name: &str) -> Result<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        Error::Config(format!(
            "unknown preset `{name}` (presets: {})",
            names.join(", ")
        ))
    })
}
