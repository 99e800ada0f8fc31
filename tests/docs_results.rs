//! The measured results of the presets are data (docs/results.toml), and
//! the pages quote them only through tables generated from it: the
//! README's results table, the full table of docs/presets.md and the wall
//! times of docs/benchmarks.md. Each table sits between
//! `<!-- generated: NAME -->` and `<!-- end generated -->`;
//! `SHOAL_BLESS=1 cargo test --test docs_results` rewrites the tables from
//! the data, and without it a table that differs from the data fails here.
//!
//! Each row names the report it was read from, and its median must be a
//! figure that report writes: a median typed into the data by hand, or a
//! report whose figure changed, fails here too. The `[[gymnasium]]` rows
//! hold no figures at all: theirs are computed from the CSV file of runs
//! each names (benches/python/suite.py writes them), for docs/python.md's
//! and docs/benchmarks.md's tables of the Gymnasium tasks.

use std::fmt::Write as _;
use std::path::Path;

use shoal_rl::train::presets::PRESETS;
use shoal_rl::train::resolve;

/// One row of docs/results.toml (its keys are described there).
#[derive(Clone, Debug)]
struct Row {
    preset: String,
    task: String,
    algorithm: String,
    metric: String,
    measured: Option<Measured>,
    also: Option<String>,
    wall: Option<String>,
    machine: Option<String>,
    wall_report: Option<String>,
    commit: Option<String>,
    report: Option<String>,
    advice: String,
    measuring: bool,
}

/// The figures of a measured result.
#[derive(Clone, Debug)]
struct Measured {
    median: f64,
    min: f64,
    max: f64,
    seeds: u64,
    budget: u64,
    unit: String,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The rows of `text`, a docs/results.toml.
fn results(text: &str) -> Vec<Row> {
    let table: toml::Table = toml::from_str(text).expect("docs/results.toml is TOML");
    let rows = table["result"].as_array().expect("[[result]] rows");
    rows.iter()
        .map(|row| {
            let row = row.as_table().unwrap();
            let text = |key: &str| row.get(key).and_then(|v| v.as_str()).map(str::to_string);
            let number = |key: &str| {
                row.get(key)
                    .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
            };
            let name = text("preset").expect("a preset");
            let measured = number("median").map(|median| Measured {
                median,
                min: number("min").unwrap_or_else(|| panic!("{name}: min")),
                max: number("max").unwrap_or_else(|| panic!("{name}: max")),
                seeds: number("seeds").unwrap_or_else(|| panic!("{name}: seeds")) as u64,
                budget: number("budget").unwrap_or_else(|| panic!("{name}: budget")) as u64,
                unit: text("unit").unwrap_or_else(|| panic!("{name}: unit")),
            });
            Row {
                task: text("task").unwrap_or_else(|| panic!("{name}: task")),
                algorithm: text("algorithm").unwrap_or_else(|| panic!("{name}: algorithm")),
                metric: text("metric").unwrap_or_default(),
                measured,
                also: text("also"),
                wall: text("wall"),
                machine: text("machine"),
                wall_report: text("wall_report"),
                commit: text("commit"),
                report: text("report"),
                advice: text("use").unwrap_or_else(|| panic!("{name}: use")),
                measuring: text("status").as_deref() == Some("measuring"),
                preset: name,
            }
        })
        .collect()
}

/// One `[[gymnasium]]` row of docs/results.toml: a preset on a Gymnasium
/// task, beside a published figure; its results are the rows of its `data`
/// file (`benches/python/suite.py` runs what is missing).
#[derive(Clone, Debug)]
struct GymRow {
    preset: String,
    /// The id the run was given (`gymnasium_robotics:FetchReach-v4`).
    env: String,
    /// `KEY=VALUE` settings beside the preset's, as the runs recorded them.
    settings: String,
    /// "return" (the default) or "success", as `[[result]]`'s `metric`.
    metric: String,
    /// Seeds 0, 1, … the row asks for.
    seeds: u64,
    /// In env steps.
    budget: u64,
    data: String,
    anchor: f64,
    anchor_source: String,
    report: String,
}

/// What a row's data file holds for it.
#[derive(Clone, Debug)]
struct GymResult {
    measured: Option<Measured>,
    /// Median wall seconds of a run.
    wall_s: Option<f64>,
    /// The machines the runs named (one, if they were run alike).
    machines: Vec<String>,
}

/// The `[[gymnasium]]` rows of `text`, a docs/results.toml.
fn gymnasium_rows(text: &str) -> Vec<GymRow> {
    let table: toml::Table = toml::from_str(text).expect("docs/results.toml is TOML");
    let Some(rows) = table.get("gymnasium").and_then(|v| v.as_array()) else {
        return Vec::new();
    };
    rows.iter()
        .map(|row| {
            let row = row.as_table().unwrap();
            let env = row["env"].as_str().expect("an env").to_string();
            let text = |key: &str| {
                row.get(key)
                    .and_then(|v| v.as_str())
                    .unwrap_or_else(|| panic!("{env}: {key}"))
                    .to_string()
            };
            let number = |key: &str| {
                row.get(key)
                    .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
                    .unwrap_or_else(|| panic!("{env}: {key}"))
            };
            let settings: Vec<&str> = row.get("settings").map_or(Vec::new(), |v| {
                v.as_array()
                    .expect("settings is a list")
                    .iter()
                    .map(|s| s.as_str().expect("a setting is a string"))
                    .collect()
            });
            GymRow {
                preset: text("preset"),
                settings: settings.join(" "),
                metric: row
                    .get("metric")
                    .map_or("return", |v| v.as_str().expect("metric is a string"))
                    .to_string(),
                seeds: number("seeds") as u64,
                budget: number("budget") as u64,
                data: text("data"),
                anchor: number("anchor"),
                anchor_source: text("anchor_source"),
                report: text("report"),
                env,
            }
        })
        .collect()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// `row`'s runs in the CSV `data` (read with its header; columns as
/// benches/python/mujoco_table.py writes them): one per seed asked for.
fn gymnasium_result(row: &GymRow, data: &str) -> GymResult {
    let mut reader = csv::Reader::from_reader(data.as_bytes());
    let header = reader.headers().expect("a header").clone();
    let column = |name: &str| header.iter().position(|h| h == name);
    let value_column = if row.metric == "success" {
        "final_success"
    } else {
        "final_return"
    };
    let (preset, env, seed, value) = (
        column("preset").expect("a preset column"),
        column("env").expect("an env column"),
        column("seed").expect("a seed column"),
        column(value_column).unwrap_or_else(|| panic!("{}: no {value_column}", row.data)),
    );
    let (settings, wall, machine) = (column("settings"), column("wall_s"), column("machine"));
    let field = |record: &csv::StringRecord, at: Option<usize>| {
        at.and_then(|i| record.get(i)).unwrap_or("").to_string()
    };
    let mut seen = std::collections::BTreeSet::new();
    let (mut values, mut walls, mut machines) = (Vec::new(), Vec::new(), Vec::new());
    for record in reader.records() {
        let record = record.unwrap_or_else(|e| panic!("{}: {e}", row.data));
        if record[preset] != row.preset
            || record[env] != row.env
            || field(&record, settings) != row.settings
        {
            continue;
        }
        let s: u64 = record[seed].parse().expect("a seed");
        if s >= row.seeds {
            continue;
        }
        assert!(
            seen.insert(s),
            "{}: seed {s} of {} twice",
            row.data,
            row.env
        );
        values.push(record[value].parse::<f64>().expect("a number"));
        if let Ok(w) = field(&record, wall).parse::<f64>() {
            walls.push(w);
        }
        let m = field(&record, machine);
        if !m.is_empty() && !machines.contains(&m) {
            machines.push(m);
        }
    }
    let measured = (!values.is_empty()).then(|| Measured {
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        median: median(&mut values),
        seeds: values.len() as u64,
        budget: row.budget,
        unit: "env steps".into(),
    });
    GymResult {
        measured,
        wall_s: (!walls.is_empty()).then(|| median(&mut walls)),
        machines,
    }
}

/// The Gymnasium id as a user reads it: without the module that registers it.
fn env_name(id: &str) -> &str {
    id.rsplit(':').next().unwrap()
}

/// `median [min, max] metric, N seeds` of a Gymnasium row, or how many
/// seeds are still owed.
fn gymnasium_cell(r: &GymRow, result: &GymResult) -> String {
    let metric = r.metric.as_str();
    match &result.measured {
        None => "not measured yet".into(),
        Some(m) => {
            let mut cell = format!(
                "{} [{}, {}] {metric}, {} seed{}",
                figure(m.median, metric),
                figure(m.min, metric),
                figure(m.max, metric),
                m.seeds,
                if m.seeds == 1 { "" } else { "s" }
            );
            if m.seeds < r.seeds {
                write!(cell, " of {}", r.seeds).unwrap();
            }
            cell
        }
    }
}

fn gymnasium_results(rows: &[GymRow]) -> Vec<GymResult> {
    rows.iter()
        .map(|r| gymnasium_result(r, &read(&r.data)))
        .collect()
}

/// The preset of a Gymnasium row, and the settings it runs with.
fn gymnasium_preset(r: &GymRow) -> String {
    if r.settings.is_empty() {
        shown(&r.preset)
    } else {
        format!("{} with `{}`", shown(&r.preset), r.settings)
    }
}

/// docs/python.md's table of presets on Gymnasium tasks.
fn gymnasium_table(rows: &[GymRow], results: &[GymResult]) -> String {
    let mut out = String::from(
        "| preset | Gymnasium env | final evaluation: median [min, max] | budget | published | report |\n\
         |---|---|---|---|---|---|\n",
    );
    for (r, result) in rows.iter().zip(results) {
        writeln!(
            out,
            "| {} | `{}` | {} | {} env steps | {} ({}) | {} |",
            gymnasium_preset(r),
            env_name(&r.env),
            gymnasium_cell(r, result),
            count(r.budget),
            figure(r.anchor, &r.metric),
            r.anchor_source,
            link(&r.report, "docs"),
        )
        .unwrap();
    }
    out
}

/// docs/benchmarks.md's table of the same runs, with their wall times.
fn gymnasium_wall_table(rows: &[GymRow], results: &[GymResult]) -> String {
    let mut out = String::from(
        "| preset | Gymnasium env | final evaluation | budget | wall time of a run, median | machine | data |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for (r, result) in rows.iter().zip(results) {
        let data = Path::new(&r.data).file_name().unwrap().to_string_lossy();
        writeln!(
            out,
            "| {} | `{}` | {} | {} env steps | {} | {} | [{data}]({}) |",
            gymnasium_preset(r),
            env_name(&r.env),
            gymnasium_cell(r, result),
            count(r.budget),
            result
                .wall_s
                .map_or("—".into(), |w| format!("{} s", count(w.round() as u64))),
            if result.machines.is_empty() {
                "not recorded".to_string()
            } else {
                result.machines.join("; ")
            },
            r.data.trim_start_matches("docs/"),
        )
        .unwrap();
    }
    out
}

/// `x` as the reports write it: a success rate with two decimals, a return
/// as a whole number with its thousands apart (`1 135`, `−1`).
fn figure(x: f64, metric: &str) -> String {
    if metric == "success" {
        return format!("{x:.2}");
    }
    let digits = format!("{}", x.abs().round() as u64);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    if x < 0.0 { format!("−{out}") } else { out }
}

/// `12000` → `12 000`.
fn count(n: u64) -> String {
    figure(n as f64, "return")
}

/// A link to a report, relative to the page at `from` (a directory).
fn link(report: &str, from: &str) -> String {
    let name = Path::new(report).file_stem().unwrap().to_string_lossy();
    let target = match from {
        "" => report.to_string(),
        "docs" => report.trim_start_matches("docs/").to_string(),
        _ => unreachable!("pages live in the root or in docs"),
    };
    format!("[{name}]({target})")
}

/// The preset as a user names it: its name, or its config file's path.
fn shown(preset: &str) -> String {
    format!("`{preset}`")
}

/// `median [min, max] metric, N seeds`, and the budget when it is not the
/// preset's own.
fn result_cell(r: &Row, episodes: Option<u64>) -> String {
    let Some(m) = &r.measured else {
        return "not measured".into();
    };
    let metric = if r.metric == "success" {
        "success"
    } else {
        "return"
    };
    let mut cell = format!(
        "{} [{}, {}] {metric}, {} seed{}",
        figure(m.median, &r.metric),
        figure(m.min, &r.metric),
        figure(m.max, &r.metric),
        m.seeds,
        if m.seeds == 1 { "" } else { "s" }
    );
    if m.unit != "episodes" || Some(m.budget) != episodes {
        write!(cell, ", at {} {}", count(m.budget), m.unit).unwrap();
        if m.unit == "episodes" && episodes.is_some() {
            cell.push_str(" (not the preset's budget)");
        }
    }
    if let Some(also) = &r.also {
        write!(cell, "; {also}").unwrap();
    }
    cell
}

/// The preset's `train.episodes`, by name or by config path.
fn episodes(preset: &str) -> Option<u64> {
    let source = if preset.ends_with(".toml") {
        root().join(preset).to_string_lossy().into_owned()
    } else {
        preset.to_string()
    };
    resolve(&source, &[]).ok().map(|cfg| cfg.train.episodes)
}

/// The README's table: the recommended presets and what they reach.
fn readme_table(results: &[Row]) -> String {
    let mut out = String::from(
        "| preset | task | result: median [min, max] | episodes | report |\n|---|---|---|---:|---|\n",
    );
    for r in results.iter().filter(|r| r.advice.starts_with("**yes**")) {
        let episodes = episodes(&r.preset);
        let report = r.report.as_deref().map_or("—".into(), |p| link(p, ""));
        writeln!(
            out,
            "| {} | {} | {} | {} | {report} |",
            shown(&r.preset),
            r.task,
            result_cell(r, episodes),
            episodes.map_or("—".into(), count),
        )
        .unwrap();
    }
    out
}

/// docs/presets.md's table: every row of the data.
fn presets_table(results: &[Row]) -> String {
    let mut out = String::from(
        "| preset | task | algorithm, strategy | episodes | result: median [min, max] | wall time | use it? | report |\n\
         |---|---|---|---:|---|---|---|---|\n",
    );
    for r in results {
        let episodes = episodes(&r.preset);
        let wall = r.wall.as_deref().unwrap_or("not measured");
        let advice = if r.measuring {
            format!("{} (measurement under way)", r.advice)
        } else {
            r.advice.clone()
        };
        let report = r.report.as_deref().map_or("—".into(), |p| link(p, "docs"));
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {wall} | {advice} | {report} |",
            shown(&r.preset),
            r.task,
            r.algorithm,
            episodes.map_or("—".into(), count),
            result_cell(r, episodes),
        )
        .unwrap();
    }
    out
}

/// docs/benchmarks.md's table: the wall times of whole runs.
fn wall_table(results: &[Row]) -> String {
    let mut out =
        String::from("| preset | wall time | machine | commit | report |\n|---|---|---|---|---|\n");
    for r in results.iter().filter(|r| r.wall.is_some()) {
        let report = r
            .wall_report
            .as_deref()
            .or(r.report.as_deref())
            .map_or("—".into(), |p| link(p, "docs"));
        let commit = if r.wall_report.is_some() {
            "—"
        } else {
            r.commit.as_deref().unwrap_or("—")
        };
        writeln!(
            out,
            "| {} | {} | {} | {commit} | {report} |",
            shown(&r.preset),
            r.wall.as_deref().unwrap(),
            r.machine.as_deref().unwrap_or("not recorded"),
        )
        .unwrap();
    }
    out
}

/// The generated blocks: page, block name, contents.
fn blocks(results: &[Row]) -> Vec<(&'static str, &'static str, String)> {
    let gymnasium = gymnasium_rows(&read("docs/results.toml"));
    let measured = gymnasium_results(&gymnasium);
    vec![
        ("README.md", "results", readme_table(results)),
        ("docs/presets.md", "presets", presets_table(results)),
        ("docs/benchmarks.md", "wall-times", wall_table(results)),
        (
            "docs/python.md",
            "gymnasium",
            gymnasium_table(&gymnasium, &measured),
        ),
        (
            "docs/benchmarks.md",
            "gymnasium",
            gymnasium_wall_table(&gymnasium, &measured),
        ),
    ]
}

/// `page` with block `name` holding `contents`; `None` if the page has no
/// such block.
fn with_block(page: &str, name: &str, contents: &str) -> Option<String> {
    let open = format!("<!-- generated: {name} -->\n");
    let close = "<!-- end generated -->";
    let start = page.find(&open)? + open.len();
    let end = start + page[start..].find(close)?;
    Some(format!("{}{contents}{}", &page[..start], &page[end..]))
}

/// Every page whose generated block differs from `results`, with the first
/// line that differs.
fn stale_pages(results: &[Row], read: impl Fn(&str) -> String) -> Vec<String> {
    let mut stale = Vec::new();
    for (page, name, contents) in blocks(results) {
        let text = read(page);
        match with_block(&text, name, &contents) {
            None => stale.push(format!("{page}: no `<!-- generated: {name} -->` block")),
            Some(generated) if generated != text => {
                let line = text
                    .lines()
                    .zip(generated.lines())
                    .find(|(a, b)| a != b)
                    .map_or(String::new(), |(a, _)| a.to_string());
                stale.push(format!(
                    "{page}: `{name}` differs from docs/results.toml at `{line}`"
                ));
            }
            Some(_) => {}
        }
    }
    stale
}

/// Rows whose median is not a figure their report writes.
fn unsupported(results: &[Row], read: impl Fn(&str) -> String) -> Vec<String> {
    let mut found = Vec::new();
    for r in results {
        let (Some(m), Some(report)) = (&r.measured, &r.report) else {
            continue;
        };
        let median = figure(m.median, &r.metric);
        if !writes_figure(&read(report), &median) {
            found.push(format!("{}: median {median} is not in {report}", r.preset));
        }
    }
    found
}

/// Whether `text` writes `figure` as a whole number: not a part of a longer
/// one (`1 135` in `11 135` or `1 135 000`, `0.97` in `0.975`).
fn writes_figure(text: &str, figure: &str) -> bool {
    text.match_indices(figure).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = &text[at + figure.len()..];
        let mut next = after.chars();
        let continues = match next.next() {
            Some(c) if c.is_ascii_digit() => true,
            Some('.') => next.next().is_some_and(|c| c.is_ascii_digit()),
            Some(' ') => {
                let group: String = next.take(3).collect();
                group.len() == 3 && group.chars().all(|c| c.is_ascii_digit())
            }
            _ => false,
        };
        !continues && !before.is_some_and(|c| c.is_ascii_digit() || c == '.' || c == '−')
    })
}

#[test]
fn generated_tables_are_the_data() {
    let results = results(&read("docs/results.toml"));
    if std::env::var_os("SHOAL_BLESS").is_some() {
        for (page, name, contents) in blocks(&results) {
            let text = read(page);
            let new = with_block(&text, name, &contents)
                .unwrap_or_else(|| panic!("{page}: no `<!-- generated: {name} -->` block"));
            std::fs::write(root().join(page), new).unwrap();
        }
    }
    let stale = stale_pages(&results, read);
    assert!(
        stale.is_empty(),
        "run `SHOAL_BLESS=1 cargo test --test docs_results` and commit: {stale:#?}"
    );
}

#[test]
fn every_median_is_a_figure_of_its_report() {
    let results = results(&read("docs/results.toml"));
    let mut found = unsupported(&results, read);
    let gymnasium = gymnasium_rows(&read("docs/results.toml"));
    for (r, result) in gymnasium.iter().zip(gymnasium_results(&gymnasium)) {
        let Some(m) = result.measured else { continue };
        let median = figure(m.median, &r.metric);
        if !writes_figure(&read(&r.report), &median) {
            found.push(format!(
                "{} on {}: median {median} is not in {}",
                r.preset, r.env, r.report
            ));
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn every_row_is_a_preset_or_an_experiment_config_and_every_preset_has_a_row() {
    let results = results(&read("docs/results.toml"));
    for r in &results {
        assert!(
            episodes(&r.preset).is_some(),
            "{}: neither a preset nor a config file that loads",
            r.preset
        );
        for page in [&r.report, &r.wall_report].into_iter().flatten() {
            assert!(
                root().join(page).is_file(),
                "{}: {page} is missing",
                r.preset
            );
        }
    }
    let named: Vec<&str> = results.iter().map(|r| r.preset.as_str()).collect();
    let missing: Vec<&str> = PRESETS
        .iter()
        .map(|p| p.name)
        .filter(|name| !name.starts_with("toy-") && !named.contains(name))
        .collect();
    assert!(missing.is_empty(), "presets without a row: {missing:?}");
}

#[test]
fn a_changed_figure_in_the_data_or_on_a_page_is_caught() {
    let data = read("docs/results.toml");
    let results_now = results(&data);
    let pages = |page: &str| read(page);

    // One result edited in the data: the pages and the report disagree.
    let edited = data.replacen("median = 1135", "median = 1235", 1);
    assert_ne!(edited, data, "worm-ppo's median is in the data");
    let edited = results(&edited);
    assert!(
        stale_pages(&edited, pages)
            .iter()
            .any(|s| s.starts_with("README.md: `results` differs")),
        "an edited result leaves the README's table stale"
    );
    assert_eq!(
        unsupported(&edited, pages),
        ["worm-ppo: median 1 235 is not in docs/experiments/ppo-worm.md"]
    );

    // One number of the README's table edited by hand.
    let readme = read("README.md");
    let by_hand = readme.replacen("| 1 135 [1 135, 1 138]", "| 1 140 [1 135, 1 138]", 1);
    assert_ne!(by_hand, readme, "worm-ppo's row is in the README");
    let found = stale_pages(&results_now, |page| {
        if page == "README.md" {
            by_hand.clone()
        } else {
            read(page)
        }
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("1 140 [1 135, 1 138]"), "{found:?}");
}

#[test]
fn figures_are_written_as_the_reports_write_them() {
    assert_eq!(figure(1135.0, "return"), "1 135");
    assert_eq!(figure(-1.0, "return"), "−1");
    assert_eq!(figure(903.0, "return"), "903");
    assert_eq!(figure(0.9, "success"), "0.90");
    assert_eq!(count(12_000), "12 000");
    assert!(writes_figure("ends at 1 135 (1.48)", "1 135"));
    assert!(!writes_figure("11 135 and 1 135 000", "1 135"));
    assert!(!writes_figure("0.975", "0.97") && !writes_figure("−903", "903"));
}

#[test]
fn a_gymnasium_row_takes_its_figures_from_its_own_runs_in_the_data() {
    let row = GymRow {
        preset: "worm-sac".into(),
        env: "HalfCheetah-v5".into(),
        settings: "algo.gamma=0.99".into(),
        metric: "return".into(),
        seeds: 3,
        budget: 100_000,
        data: "data.csv".into(),
        anchor: 0.0,
        anchor_source: String::new(),
        report: String::new(),
    };
    let data = "preset,env,settings,seed,final_return,wall_s,machine\n\
        worm-sac,HalfCheetah-v5,algo.gamma=0.99,0,4262.0,1315,\"Xeon, 2 cores\"\n\
        worm-sac,HalfCheetah-v5,,1,9999.0,1,other\n\
        worm-ppo,HalfCheetah-v5,algo.gamma=0.99,1,9999.0,1,other\n\
        worm-sac,Hopper-v5,algo.gamma=0.99,1,9999.0,1,other\n\
        worm-sac,HalfCheetah-v5,algo.gamma=0.99,3,9999.0,1,other\n\
        worm-sac,HalfCheetah-v5,algo.gamma=0.99,2,4889.9,1375,\"Xeon, 2 cores\"\n";
    let result = gymnasium_result(&row, data);
    let m = result.measured.as_ref().expect("two seeds measured");
    assert_eq!(
        (m.median, m.min, m.max, m.seeds),
        (4575.95, 4262.0, 4889.9, 2)
    );
    assert_eq!(result.wall_s, Some(1345.0));
    assert_eq!(result.machines, ["Xeon, 2 cores"]);
    assert_eq!(
        gymnasium_cell(&row, &result),
        "4 576 [4 262, 4 890] return, 2 seeds of 3"
    );

    let none = gymnasium_result(&row, "preset,env,seed,final_return\n");
    assert!(none.measured.is_none());
    assert_eq!(gymnasium_cell(&row, &none), "not measured yet");
}

#[test]
#[should_panic(expected = "seed 0 of HalfCheetah-v5 twice")]
fn a_seed_recorded_twice_is_refused() {
    let row = GymRow {
        preset: "worm-ppo".into(),
        env: "HalfCheetah-v5".into(),
        settings: String::new(),
        metric: "return".into(),
        seeds: 3,
        budget: 1_000_000,
        data: "data.csv".into(),
        anchor: 0.0,
        anchor_source: String::new(),
        report: String::new(),
    };
    gymnasium_result(
        &row,
        "preset,env,seed,final_return\nworm-ppo,HalfCheetah-v5,0,1\nworm-ppo,HalfCheetah-v5,0,2\n",
    );
}
