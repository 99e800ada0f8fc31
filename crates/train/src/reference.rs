//! The configuration's reference, generated from the code: every key with
//! the doc comment of its field ([`key_docs`]), the reference page
//! (docs/configuration.md, [`reference_page`]) and a config's TOML with
//! each key's doc above it ([`commented`], what `shoal config` prints).

use shoal_rl_core::Result;

use crate::config::{RunConfig, config_docs};
use crate::overrides::list_keys;
use crate::registries::Registries;

/// Every key of `cfg` with the doc comment of its field: the top level,
/// `env.*` from the env's registry entry, `algo.*`, `train.*` and
/// `parallel.*`.
pub fn key_docs(registries: &Registries, cfg: &RunConfig) -> Result<Vec<(String, String)>> {
    use shoal_rl_core::docs::key_docs as keys_of;
    fn section(prefix: &str, keys: Vec<(String, String)>) -> Vec<(String, String)> {
        let dotted = |(key, doc)| (format!("{prefix}.{key}"), doc);
        keys.into_iter().map(dotted).collect()
    }
    let algo = registries.algos.get(cfg.algo.kind())?;
    // The top level's own keys; its tables are documented key by key below.
    let mut docs: Vec<(String, String)> = keys_of(&config_docs, "RunConfig")
        .into_iter()
        .filter(|(key, _)| {
            ![
                "env",
                "envs",
                "algos",
                "strategies",
                "algo",
                "train",
                "parallel",
            ]
            .contains(&key.as_str())
        })
        .collect();
    docs.push((
        "env.kind".into(),
        "The env, by its registry id (`shoal train --help` lists them).".into(),
    ));
    let env_docs = (registries.envs.get(&cfg.env.kind)?.key_docs)();
    docs.extend(section(
        "eval_env",
        env_docs
            .iter()
            .filter(|(key, _)| cfg.eval_env.contains_key(key))
            .cloned()
            .collect(),
    ));
    docs.extend(section("env", env_docs));
    docs.push((
        "algo.kind".into(),
        "The algorithm (`shoal train --help` lists them).".into(),
    ));
    docs.extend(section("algo", algo.documented_keys()));
    docs.extend(section(
        "train",
        keys_of(&shoal_rl_run::config_docs, "TrainConfig"),
    ));
    docs.extend(section("parallel", keys_of(&config_docs, "ParallelConfig")));
    Ok(docs)
}

/// The configuration reference (docs/configuration.md): every key of every
/// env, algorithm and the run, with its meaning and its value in a preset
/// that uses it, generated from the code. A test keeps the page equal to
/// this text.
pub fn reference_page() -> Result<String> {
    let mut page = String::from(
        "# Configuration reference\n\n\
         Every key `shoal train --set` and `config.toml` take, with its meaning (the doc \
         comment of its field in the code) and its value in one preset that uses it. \
         `shoal config PRESET` prints any preset's values with the same comments. \
         This page is generated from the code (`SHOAL_BLESS=1 cargo test --workspace \
         --lib reference_page` rewrites it) and a test fails when it is out of date.\n",
    );
    let registries = Registries::default();
    // One preset per section: the run's own keys, each env, each algorithm.
    let sections: [(&str, &str, &str); 16] = [
        ("The run", "", "worm-reinforce"),
        (
            "`train`: budget, evaluation, checkpoints",
            "train.",
            "worm-reinforce",
        ),
        (
            "`parallel`: workers, backend, strategy",
            "parallel.",
            "worm5-pool",
        ),
        ("`env` = `worm`", "env.", "worm-reinforce"),
        ("`env` = `arm-push`", "env.", "push-ddpg-her"),
        ("`env` = `ball-to-net`", "env.", "ball-ddpg-her"),
        ("`env` = `ur5-reacher`", "env.", "ur5-hac3"),
        ("`env` = `pendulum`", "env.", "pendulum-hac3"),
        ("`env` = `point-reach` (toy)", "env.", "toy-reinforce"),
        ("`env` = `point-goal` (toy)", "env.", "toy-ddpg-her"),
        ("`algo` = `reinforce`", "algo.", "worm-reinforce"),
        ("`algo` = `ppo`", "algo.", "worm-ppo"),
        ("`algo` = `ddpg`", "algo.", "push-ddpg-her"),
        ("`algo` = `td3`", "algo.", "worm-td3"),
        ("`algo` = `sac`", "algo.", "worm-sac"),
        ("`algo` = `hac`", "algo.", "push-hac"),
    ];
    for (title, prefix, name) in sections {
        let cfg = registries.preset(name)?;
        let docs = key_docs(&registries, &cfg)?;
        page.push_str(&format!(
            "\n## {title}\n\n| key | `{name}` | meaning |\n|---|---|---|\n"
        ));
        let values = list_keys(&cfg.to_table());
        for (key, doc) in &docs {
            let top_level = !key.contains('.');
            if (prefix.is_empty() && !top_level) || (!prefix.is_empty() && !key.starts_with(prefix))
            {
                continue;
            }
            // Its value; an enum's variant is a table of its own keys; an
            // optional setting is absent while unset.
            let inner = format!("{key}.");
            let value: Vec<String> = values
                .iter()
                .filter(|(k, _)| k == key || k.starts_with(&inner))
                .map(|(k, v)| match k.strip_prefix(&inner) {
                    Some(rest) => format!("{rest} = {v}"),
                    None => v.clone(),
                })
                .collect();
            let value = if value.is_empty() {
                "unset".to_string()
            } else {
                format!("`{}`", value.join("; "))
            };
            // Rustdoc's intra-doc links (`[`HerConfig`]`) read as plain names here.
            let doc = doc.replace("[`", "`").replace("`]", "`");
            page.push_str(&format!(
                "| `{key}` | {} | {} |\n",
                value.replace('|', "\\|"),
                doc.replace('|', "\\|")
            ));
        }
    }
    Ok(page)
}

/// `toml` with each key's doc above it as `#` lines of at most 80 columns,
/// and every documented key it leaves out (an optional setting left unset,
/// such as `train.target_success`) as a commented `# key = (unset)` at the
/// end of its table. Comments change nothing a TOML reader sees.
pub fn commented(toml: &str, docs: &[(String, String)]) -> String {
    fn header_of(line: &str) -> Option<&str> {
        line.strip_prefix('[').and_then(|l| l.strip_suffix(']'))
    }
    let comment = |doc: &str, out: &mut String| {
        let mut line = String::from("#");
        for word in doc.split_whitespace() {
            if line.len() + 1 + word.len() > 80 {
                out.push_str(&line);
                out.push('\n');
                line = String::from("#");
            }
            line.push(' ');
            line.push_str(word);
        }
        out.push_str(&line);
        out.push('\n');
    };
    // Every dotted key and table the text holds.
    let mut present = std::collections::HashSet::new();
    let mut table = String::new();
    for line in toml.lines() {
        if let Some(header) = header_of(line) {
            table = format!("{header}.");
            present.insert(header.to_string());
        } else if let Some((key, _)) = line.split_once(" = ") {
            present.insert(format!("{table}{key}"));
        }
    }
    // A documented key of `table` (a `section.` prefix) that the text
    // leaves out, and that holds no table or key the text has.
    let unset = |table: &str, out: &mut String| {
        for (key, doc) in docs {
            let Some(leaf) = key.strip_prefix(table) else {
                continue;
            };
            let inside = format!("{key}.");
            if leaf.contains('.')
                || present.contains(key)
                || present.iter().any(|p| p.starts_with(&inside))
            {
                continue;
            }
            comment(doc, out);
            out.push_str(&format!("# {leaf} = (unset)\n"));
        }
    };
    let mut out = String::new();
    let mut table = String::new();
    for line in toml.lines() {
        if let Some(header) = header_of(line) {
            // Before the blank line that separates the tables.
            let blank = out.ends_with("\n\n");
            if blank {
                out.pop();
            }
            unset(&table, &mut out);
            if blank {
                out.push('\n');
            }
            table = format!("{header}.");
            // A table that holds one of an enum's variants (`[env.arm.gripper.Block]`):
            // the doc of the field that holds the enum.
            if let Some((_, doc)) = docs
                .iter()
                .find(|(k, _)| header.starts_with(k.as_str()) && header[k.len()..].starts_with('.'))
            {
                comment(doc, &mut out);
            }
        } else if let Some((key, _)) = line.split_once(" = ")
            && !key.starts_with([' ', '#'])
        {
            let dotted = format!("{table}{key}");
            if let Some((_, doc)) = docs.iter().find(|(k, _)| *k == dotted) {
                comment(doc, &mut out);
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    unset(&table, &mut out);
    out
}
