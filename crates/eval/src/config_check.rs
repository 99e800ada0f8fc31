//! Resume guard: does the configuration saved in a checkpoint match today's?

use std::collections::BTreeSet;

use shoal_rl_core::{Error, Result};
use toml::{Table, Value};

/// Compares two TOML configurations key by key (recursively, in sorted key
/// order) and reports the first difference as an [`Error::Config`] such as
/// `resume config mismatch: algo.hidden is 64 in the checkpoint but 128 now`.
///
/// `ignore_keys` are dotted paths that may legitimately change on resume
/// (`"run.episodes"`, `"workers"`); ignoring a table ignores everything in
/// it. Integers and floats compare by value, so `1` equals `1.0`.
///
/// ```
/// use shoal_rl_eval::check_config_matches;
/// let saved = "seed = 1\n[algo]\nhidden = 64\nlr = 0.001\n";
/// let now = "seed = 1\n[algo]\nhidden = 128\nlr = 0.001\n";
/// let err = check_config_matches(saved, now, &[]).unwrap_err();
/// assert!(err.to_string().contains("algo.hidden is 64 in the checkpoint but 128 now"));
/// assert!(check_config_matches(saved, now, &["algo.hidden"]).is_ok());
/// ```
pub fn check_config_matches(
    saved_toml: &str,
    current_toml: &str,
    ignore_keys: &[&str],
) -> Result<()> {
    let saved: Table = saved_toml
        .parse()
        .map_err(|e| Error::Config(format!("the checkpoint's config is not valid TOML: {e}")))?;
    let current: Table = current_toml
        .parse()
        .map_err(|e| Error::Config(format!("the current config is not valid TOML: {e}")))?;
    match first_difference(&saved, &current, "", ignore_keys) {
        None => Ok(()),
        Some(difference) => Err(Error::Config(format!(
            "resume config mismatch: {difference}"
        ))),
    }
}

/// The first differing key below `prefix`, described as a sentence fragment.
fn first_difference(
    saved: &Table,
    current: &Table,
    prefix: &str,
    ignore: &[&str],
) -> Option<String> {
    let keys: BTreeSet<&String> = saved.keys().chain(current.keys()).collect();
    for key in keys {
        let path = join_key(prefix, key);
        if is_ignored(&path, ignore) {
            continue;
        }
        match (saved.get(key), current.get(key)) {
            (Some(Value::Table(old)), Some(Value::Table(new))) => {
                if let Some(difference) = first_difference(old, new, &path, ignore) {
                    return Some(difference);
                }
            }
            (Some(old), Some(new)) if !values_equal(old, new) => {
                return Some(format!("{path} is {old} in the checkpoint but {new} now"));
            }
            (Some(old), None) => {
                return Some(format!("{path} is {old} in the checkpoint but absent now"));
            }
            (None, Some(new)) => {
                return Some(format!("{path} is absent in the checkpoint but {new} now"));
            }
            _ => {}
        }
    }
    None
}

/// Equality that treats `1` and `1.0` as the same number, and a NaN setting
/// as equal to itself (else a run with one could never be resumed).
fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::Integer(x), Value::Float(y)) | (Value::Float(y), Value::Integer(x)) => {
            *x as f64 == *y
        }
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| values_equal(x, y))
        }
        (Value::Table(xs), Value::Table(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(k, x)| ys.get(k).is_some_and(|y| values_equal(x, y)))
        }
        _ => a == b,
    }
}

/// Whether `path` or one of the tables containing it is ignored.
fn is_ignored(path: &str, ignore: &[&str]) -> bool {
    ignore.iter().any(|ignored| {
        path == *ignored
            || path
                .strip_prefix(ignored)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// `prefix.key`, quoting keys that are not bare TOML keys.
fn join_key(prefix: &str, key: &str) -> String {
    let is_bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let key = if is_bare {
        key.to_string()
    } else {
        format!("{key:?}")
    };
    if prefix.is_empty() {
        key
    } else {
        format!("{prefix}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAVED: &str = r#"
preset = "push-ddpg-her"
seed = 3
[algo]
hidden = 64
lr = 1e-3
layers = [256, 256]
[run]
episodes = 1000
"#;

    fn mismatch(saved: &str, current: &str, ignore: &[&str]) -> String {
        check_config_matches(saved, current, ignore)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn identical_configs_match() {
        check_config_matches(SAVED, SAVED, &[]).unwrap();
    }

    #[test]
    fn changed_value_names_key_and_both_values() {
        let current = SAVED.replace("hidden = 64", "hidden = 128");
        let message = mismatch(SAVED, &current, &[]);
        assert!(
            message.contains(
                "resume config mismatch: algo.hidden is 64 in the checkpoint but 128 now"
            ),
            "{message}"
        );
    }

    #[test]
    fn string_values_are_quoted() {
        let current = SAVED.replace("push-ddpg-her", "push-hac");
        let message = mismatch(SAVED, &current, &[]);
        assert!(
            message.contains(r#"preset is "push-ddpg-her" in the checkpoint but "push-hac" now"#),
            "{message}"
        );
    }

    #[test]
    fn added_and_removed_keys_are_reported() {
        let removed = SAVED.replace("seed = 3\n", "");
        assert!(
            mismatch(SAVED, &removed, &[]).contains("seed is 3 in the checkpoint but absent now")
        );
        let added = format!("{SAVED}workers = 2\n");
        assert!(
            mismatch(SAVED, &added, &[])
                .contains("run.workers is absent in the checkpoint but 2 now")
        );
    }

    #[test]
    fn ignored_keys_and_tables_are_skipped() {
        let current = SAVED.replace("episodes = 1000", "episodes = 5000");
        assert!(mismatch(SAVED, &current, &[]).contains("run.episodes"));
        check_config_matches(SAVED, &current, &["run.episodes"]).unwrap();
        check_config_matches(SAVED, &current, &["run"]).unwrap();
        // A key that merely starts with an ignored name is still compared.
        assert!(check_config_matches(SAVED, &current, &["ru"]).is_err());
    }

    #[test]
    fn integer_and_float_compare_by_value() {
        let current = SAVED.replace("hidden = 64", "hidden = 64.0");
        check_config_matches(SAVED, &current, &[]).unwrap();
        let current = SAVED.replace("[256, 256]", "[256, 128]");
        assert!(mismatch(SAVED, &current, &[]).contains("algo.layers"));
    }

    #[test]
    fn nan_settings_equal_themselves_but_not_numbers() {
        let saved = "[algo]\nlr = nan\nlayers = [1.0, nan]\n";
        check_config_matches(saved, saved, &[]).unwrap();
        let message = mismatch(saved, "[algo]\nlr = 0.5\nlayers = [1.0, nan]\n", &[]);
        assert!(
            message.contains("algo.lr is nan in the checkpoint but 0.5 now"),
            "{message}"
        );
        assert!(
            mismatch(saved, "[algo]\nlr = nan\nlayers = [1.0, 2.0]\n", &[]).contains("algo.layers")
        );
    }

    #[test]
    fn malformed_toml_is_a_config_error() {
        let err = check_config_matches(SAVED, "algo = [", &[]).unwrap_err();
        assert!(matches!(err, Error::Config(_)));
        assert!(
            err.to_string().contains("current config is not valid TOML"),
            "{err}"
        );
    }
}
