//! Every `shoal` command in the README and the reference pages works as
//! written: it parses with the binary's own command line, a `train`,
//! `config` or `sweep` of a preset resolves and passes the checks `shoal
//! train` makes before it writes anything (presets, keys, values, worker
//! counts), and every run directory a command reads was made by a command
//! before it on the same page. A `--out` never takes a name another command
//! trains into by default (`runs/<preset>`), which would be refused.
//!
//! The experiment reports under docs/experiments are records of what was
//! run at their commit and are not checked.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Parser;
use shoal::cli::{Cli, Command, ConfigArgs};
use shoal::config::{PRESETS, RunConfig};
use shoal::train::check_config;

/// The pages a user reads.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for dir in ["docs", "docs/algorithms"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        found.sort();
        pages.extend(found);
    }
    pages
}

/// The shell commands of a page's `sh`/`bash`/`console` code blocks, one
/// per logical line (continuations joined), with their line numbers.
fn shell_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut in_shell = None::<bool>;
    let mut pending = String::new();
    let mut start = 0;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(fence) = trimmed.strip_prefix("```") {
            in_shell = match in_shell {
                None => Some(matches!(fence.trim(), "sh" | "bash" | "shell" | "console")),
                Some(_) => None,
            };
            continue;
        }
        if in_shell != Some(true) {
            continue;
        }
        if pending.is_empty() {
            start = number + 1;
        }
        let line = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
        match line.strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(line);
                lines.push((start, std::mem::take(&mut pending)));
            }
        }
    }
    lines
}

/// The arguments of every `shoal` invocation in a shell line (after
/// `shoal`, `target/release/shoal`, an `mpirun … shoal` prefix or `cargo
/// run … --`), split at `&&`, `;` and `|`.
fn invocations(line: &str) -> Vec<Vec<String>> {
    let Some(words) = shlex::split(line) else {
        panic!("unbalanced quotes in `{line}`");
    };
    words
        .split(|w| matches!(w.as_str(), "&&" | ";" | "|" | "||"))
        .filter_map(|command| {
            let at = command
                .iter()
                .position(|w| w == "shoal" || w.ends_with("/shoal"))
                .or_else(|| {
                    // `cargo run --release -- ARGS` runs `shoal ARGS`.
                    let cargo_run = command.first()? == "cargo"
                        && command.get(1)? == "run"
                        && !command.iter().any(|w| w == "--example");
                    cargo_run.then(|| command.iter().position(|w| w == "--"))?
                })?;
            Some(command[at + 1..].to_vec())
        })
        .collect()
}

/// What a page has trained so far, and the dirs later commands may read.
#[derive(Default)]
struct Made {
    dirs: BTreeSet<PathBuf>,
}

impl Made {
    fn require(&self, dir: &Path, place: &str) {
        let known = self
            .dirs
            .iter()
            .any(|made| dir.starts_with(made) || made.starts_with(dir));
        assert!(
            known,
            "{place}: reads `{}`, which no command before it on the page creates",
            dir.display()
        );
    }
}

fn check_invocation(args: &[String], made: &mut Made, place: &str) {
    let argv = std::iter::once("shoal".to_string()).chain(args.iter().cloned());
    let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{place}: {e}"));
    let default_dirs: BTreeSet<PathBuf> = PRESETS
        .iter()
        .map(|p| Path::new("runs").join(p.name))
        .collect();
    match &cli.command {
        Command::Train(train) => {
            if let Some(out) = &train.out {
                assert!(
                    !default_dirs.contains(out)
                        || train.source.as_deref() == out.file_name().and_then(|n| n.to_str()),
                    "{place}: --out {} is where another preset trains by default",
                    out.display()
                );
            }
            if let Some(dir) = &train.resume {
                made.require(dir, place);
            }
            match &train.source {
                Some(source) if !source.ends_with(".toml") => {
                    let cfg = train.resolve().unwrap_or_else(|e| panic!("{place}: {e}"));
                    check_config(&cfg).unwrap_or_else(|e| panic!("{place}: {e}"));
                    made.dirs.insert(
                        train
                            .out
                            .clone()
                            .unwrap_or_else(|| Path::new("runs").join(source)),
                    );
                }
                Some(file) => made.require(Path::new(file).parent().unwrap(), place),
                None => {}
            }
        }
        Command::Config(ConfigArgs { source, settings }) => {
            if source.ends_with(".toml") {
                made.require(Path::new(source).parent().unwrap(), place);
            } else {
                let cfg = RunConfig::resolve(source, &settings.overrides())
                    .unwrap_or_else(|e| panic!("{place}: {e}"));
                check_config(&cfg).unwrap_or_else(|e| panic!("{place}: {e}"));
            }
        }
        Command::Sweep(sweep) => {
            if !sweep.source.ends_with(".toml") {
                shoal::sweep::check(sweep).unwrap_or_else(|e| panic!("{place}: {e}"));
            }
            made.dirs.insert(sweep.out.clone());
        }
        Command::Eval { run_dir, .. } | Command::Render { run_dir, .. } => {
            made.require(run_dir, place)
        }
        Command::Plot { run_dirs, .. } | Command::Compare { run_dirs, .. } => {
            for dir in run_dirs {
                made.require(dir, place);
            }
        }
        Command::Scale(scale) => made.require(&scale.dir, place),
        Command::BenchEnv { .. } | Command::BenchParallel { .. } => {}
    }
}

#[test]
fn every_documented_command_parses_resolves_and_reads_what_was_made() {
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(&page);
        let mut made = Made::default();
        for (line_number, line) in shell_lines(&text) {
            // An example program's run directory (`cargo run --example X --
            // --out DIR`) is one later commands may read.
            let words = shlex::split(&line).unwrap_or_default();
            if words.iter().any(|w| w == "--example")
                && let Some(at) = words.iter().position(|w| w == "--out")
                && let Some(dir) = words.get(at + 1)
            {
                made.dirs.insert(PathBuf::from(dir));
            }
            for args in invocations(&line) {
                // `shoal` alone, or as a word in prose inside a block.
                if args.is_empty() || args[0].starts_with('-') && args[0] != "--help" {
                    continue;
                }
                let place = format!(
                    "{}:{line_number}: `shoal {}`",
                    name.display(),
                    args.join(" ")
                );
                check_invocation(&args, &mut made, &place);
                checked += 1;
            }
        }
    }
    // The README and getting-started alone show more than this many.
    assert!(checked >= 40, "only {checked} documented commands found");
}

#[test]
fn the_checks_catch_what_they_are_for() {
    let mut made = Made::default();
    let check = |line: &str, made: &mut Made| {
        let args = &invocations(line)[0];
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_invocation(args, made, "test")
        }))
        .is_ok()
    };
    assert!(!check("shoal train worm-reinforcee", &mut made));
    assert!(!check(
        "shoal train toy-reinforce --set algo.learnin_rate=1",
        &mut made
    ));
    assert!(!check("shoal train toy-reinforce --workers 2", &mut made));
    assert!(!check("shoal train --resume runs/nowhere", &mut made));
    assert!(!check(
        "shoal train worm-ppo --out runs/worm-reinforce",
        &mut made
    ));
    assert!(!check("shoal scale runs/scale-push", &mut made));
    assert!(!check(
        "shoal sweep toy-reinforce --grid algo.hiden=[8] --out runs/s",
        &mut made
    ));
    assert!(!check("shoal train toy-reinforce --frobnicate", &mut made));
    assert!(check("shoal train toy-reinforce --out runs/a", &mut made));
    assert!(check(
        "shoal train --resume runs/a --set train.episodes=900",
        &mut made
    ));
    assert!(check("shoal plot runs/a", &mut made));
    assert!(check(
        "mpirun --oversubscribe -n 2 target/release/shoal train toy-reinforce --backend mpi \
         --workers 2 --set parallel.strategy=gather --out runs/b",
        &mut made
    ));
}
