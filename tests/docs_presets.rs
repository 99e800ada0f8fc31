//! The presets table (docs/presets.md) says what each preset trains: its
//! episodes and whether it is one learner or a pool. Those columns must be
//! what `shoal config` resolves, so a changed preset fails here until the
//! table follows it. A row may name an experiment's config by its path
//! (docs/experiments/configs/), which must load as `shoal train PATH` does.

use shoal_rl::train::{preset, resolve};

/// One row of the table: the presets it names and its episodes column.
#[derive(Debug)]
struct Row {
    presets: Vec<String>,
    algorithm: String,
    episodes: Vec<u64>,
}

/// The rows of the table under `| preset | task | algorithm, strategy | episodes |`.
fn rows(readme: &str) -> Vec<Row> {
    let mut lines = readme
        .lines()
        .skip_while(|l| !l.starts_with("| preset | task | algorithm, strategy | episodes |"))
        .skip(2);
    let mut rows = Vec::new();
    while let Some(line) = lines.next().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        rows.push(Row {
            presets: preset_names(cells[1]),
            algorithm: cells[3].to_string(),
            episodes: cells[4]
                .split(',')
                .map(|n| n.replace(' ', "").parse().expect("an episode count"))
                .collect(),
        });
    }
    rows
}

/// `` `pendulum-hac1`, `-hac2` `` → `pendulum-hac1`, `pendulum-hac2`: a
/// name starting with `-` shares the first name's stem.
fn preset_names(cell: &str) -> Vec<String> {
    let names: Vec<&str> = cell
        .split(',')
        .map(|n| n.trim().trim_matches('`'))
        .collect();
    let stem = names[0].rsplit_once('-').map_or("", |(stem, _)| stem);
    names
        .iter()
        .map(|n| match n.strip_prefix('-') {
            Some(tail) => format!("{stem}-{tail}"),
            None => (*n).to_string(),
        })
        .collect()
}

/// Every disagreement between `readme`'s table and the presets.
fn disagreements(readme: &str) -> Vec<String> {
    let mut found = Vec::new();
    for row in rows(readme) {
        for (i, name) in row.presets.iter().enumerate() {
            let cfg = if name.ends_with(".toml") {
                resolve(&format!("{}/{name}", env!("CARGO_MANIFEST_DIR")), &[])
            } else {
                preset(name)
            };
            let cfg = match cfg {
                Ok(cfg) => cfg,
                Err(e) => {
                    found.push(format!("{name}: {e}"));
                    continue;
                }
            };
            let episodes = row.episodes.get(i).or(row.episodes.last()).copied();
            if episodes != Some(cfg.train.episodes) {
                found.push(format!(
                    "{name}: the table says {episodes:?} episodes, the preset {}",
                    cfg.train.episodes
                ));
            }
            let pool = cfg.parallel.strategy == "pool";
            if pool != row.algorithm.contains("pool") {
                found.push(format!(
                    "{name}: the table says `{}`, the preset's strategy is {}",
                    row.algorithm, cfg.parallel.strategy
                ));
            }
            if row.algorithm.contains("one learner") && cfg.parallel.workers != 1 {
                found.push(format!(
                    "{name}: the table says one learner, the preset {} workers",
                    cfg.parallel.workers
                ));
            }
        }
    }
    found
}

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/presets.md")).unwrap()
}

#[test]
fn the_presets_table_says_what_each_preset_trains() {
    let readme = readme();
    let named: usize = rows(&readme).iter().map(|r| r.presets.len()).sum();
    assert!(named >= 20, "the table names {named} presets");
    let found = disagreements(&readme);
    assert!(found.is_empty(), "docs/presets.md: {found:#?}");
}

#[test]
fn a_changed_preset_or_row_is_caught() {
    let readme = readme();
    let changed = readme.replacen(
        "| `worm-ppo` | `worm`, 3 links | PPO, one learner | 3 000 |",
        "| `worm-ppo` | `worm`, 3 links | PPO, one learner | 4 000 |",
        1,
    );
    assert_ne!(changed, readme, "the row to change is in the table");
    let found = disagreements(&changed);
    assert_eq!(
        found,
        ["worm-ppo: the table says Some(4000) episodes, the preset 3000"]
    );
    let pooled = readme.replacen(
        "REINFORCE, pool of 2 (`[1.0, 3.0]`)",
        "REINFORCE, one learner",
        1,
    );
    assert_eq!(disagreements(&pooled).len(), 2, "strategy and workers");
}
