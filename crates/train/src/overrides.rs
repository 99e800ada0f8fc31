//! `--set key=value` overrides on a TOML configuration tree.
//!
//! A key must already exist in the fully resolved configuration (so a typo is
//! an error, not a silently ignored setting); the value is parsed as a TOML
//! literal and falls back to a string, and must have the type of the value it
//! replaces (an integer may stand for a float).

use shoal_rl_core::{Error, Result};
use toml::{Table, Value};

/// Applies `key=value` (dotted key) to `tree`. A key the tree lacks — an
/// optional setting left out while unset (`algo.max_grad_norm`) — is added
/// when `accepts`, given the tree with the key added, does not answer with
/// a message containing "unknown field" (serde's word for a key the config
/// type does not have); any other answer is the new value's error.
pub fn apply_override_with(
    tree: &mut Table,
    assignment: &str,
    accepts: &dyn Fn(&Table) -> std::result::Result<(), String>,
) -> Result<()> {
    let (key, raw) = assignment
        .split_once('=')
        .ok_or_else(|| Error::Config(format!("--set expects key=value, got `{assignment}`")))?;
    let key = key.trim();
    let value = parse_literal(raw.trim());
    let mut parts: Vec<&str> = key.split('.').collect();
    let leaf = parts
        .pop()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::Config(format!("--set has an empty key in `{assignment}`")))?;
    let mut table = &mut *tree;
    for (depth, part) in parts.iter().enumerate() {
        table = match table.get_mut(*part) {
            Some(Value::Table(inner)) => inner,
            _ => return Err(unknown_key(&parts[..=depth].join("."))),
        };
    }
    match table.get_mut(leaf) {
        Some(slot) => {
            let value = coerce_like(slot, value);
            if value.type_str() != slot.type_str() {
                return Err(Error::Config(format!(
                    "`{key}` expects {} {}, got `{}`",
                    article(slot.type_str()),
                    slot.type_str(),
                    raw.trim()
                )));
            }
            *slot = value;
            Ok(())
        }
        None => {
            let known: Vec<String> = table.keys().cloned().collect();
            table.insert(leaf.to_string(), value);
            let verdict = accepts(tree);
            let table = table_at(tree, &parts);
            match verdict {
                Ok(()) => Ok(()),
                Err(reason) => {
                    table.remove(leaf);
                    if reason.contains("unknown field") {
                        // serde names every field the table may hold,
                        // optional ones left unset among them.
                        let keys = reason
                            .split_once("expected one of ")
                            .or_else(|| reason.split_once(", expected "))
                            .map(|(_, fields)| {
                                let fields = fields.split(" (at byte").next().unwrap_or(fields);
                                fields.replace('`', "")
                            })
                            .unwrap_or_else(|| known.join(", "));
                        Err(Error::Config(format!(
                            "unknown key `{key}` (keys here: {keys})"
                        )))
                    } else {
                        Err(Error::Config(format!("`{key}`: {reason}")))
                    }
                }
            }
        }
    }
}

/// The table at dotted path `parts` below `root`, which is known to exist.
fn table_at<'t>(root: &'t mut Table, parts: &[&str]) -> &'t mut Table {
    parts
        .iter()
        .fold(root, |table, part| match table.get_mut(*part) {
            Some(Value::Table(inner)) => inner,
            _ => unreachable!("the path was walked before"),
        })
}

fn article(type_name: &str) -> &'static str {
    if type_name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn unknown_key(key: &str) -> Error {
    Error::Config(format!("unknown key `{key}`"))
}

/// The assignments among `overrides` that set `key`, in order.
pub fn assignments_to<'a>(
    overrides: &'a [String],
    key: &'a str,
) -> impl DoubleEndedIterator<Item = &'a String> {
    overrides.iter().filter(move |assignment| {
        assignment
            .split_once('=')
            .is_some_and(|(k, _)| k.trim() == key)
    })
}

/// The value the last of `overrides` that sets `key` gives it, if any
/// (what [`apply_override_with`] would write, before its checks).
pub fn overridden_value(overrides: &[String], key: &str) -> Option<Value> {
    let (_, raw) = assignments_to(overrides, key)
        .next_back()?
        .split_once('=')?;
    Some(parse_literal(raw.trim()))
}

/// A TOML literal (`3`, `1e-3`, `true`, `[64, 64]`, `"x"`), or the raw text as a string.
fn parse_literal(raw: &str) -> Value {
    toml::from_str::<Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(raw.to_string()))
}

/// `--set lr=1` should still give a float when the setting is a float.
fn coerce_like(existing: &Value, value: Value) -> Value {
    match (existing, value) {
        (Value::Float(_), Value::Integer(i)) => Value::Float(i as f64),
        (_, v) => v,
    }
}

/// All dotted keys of `tree`, for `--help` listings.
pub fn list_keys(tree: &Table) -> Vec<(String, String)> {
    fn walk(prefix: &str, table: &Table, out: &mut Vec<(String, String)>) {
        for (k, v) in table {
            let key = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match v {
                Value::Table(inner) => walk(&key, inner, out),
                other => out.push((key, other.to_string())),
            }
        }
    }
    let mut out = Vec::new();
    walk("", tree, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Overrides of a tree that has no optional keys.
    fn apply_override(tree: &mut Table, assignment: &str) -> Result<()> {
        apply_override_with(tree, assignment, &|_| Err("unknown field".into()))
    }

    fn tree() -> Table {
        toml::from_str("seed = 1\n[algo]\nlearning_rate = 0.001\nhidden = [64, 64]\n").unwrap()
    }

    #[test]
    fn override_replaces_existing_values_with_parsed_literals() {
        let mut t = tree();
        apply_override(&mut t, "algo.learning_rate=1").unwrap();
        apply_override(&mut t, "algo.hidden=[32]").unwrap();
        apply_override(&mut t, "seed = 7").unwrap();
        assert_eq!(t["algo"]["learning_rate"], Value::Float(1.0));
        assert_eq!(t["algo"]["hidden"], Value::Array(vec![Value::Integer(32)]));
        assert_eq!(t["seed"], Value::Integer(7));
    }

    #[test]
    fn unknown_keys_and_missing_equals_are_errors() {
        let mut t = tree();
        let err = apply_override(&mut t, "algo.learnig_rate=1")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown key `algo.learnig_rate`"), "{err}");
        assert!(apply_override(&mut t, "nosuch.x=1").is_err());
        assert!(apply_override(&mut t, "seed").is_err());
    }
}
