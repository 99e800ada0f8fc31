//! Every `shoal` command in the README and the reference pages works as
//! written: it parses with the binary's own command line, a `train`,
//! `config` or `sweep` of a preset resolves and passes the checks `shoal
//! train` makes before it writes anything (presets, keys, values, worker
//! counts), and every run directory a command reads was made by a command
//! before it on the same page. A `--out` never takes a name another command
//! trains into by default (`runs/<preset>`), which would be refused.
//!
//! Then every one of them runs, page by page and in the page's order, in a
//! scratch directory, with its budgets shrunk a thousandfold: the
//! directories a command reads must exist and hold what it needs (a
//! checkpoint number it names, a sweep `shoal scale` can read).
//!
//! The experiment reports under docs/experiments are records of what was
//! run at their commit and are not checked.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Parser;
use shoal_rl::cli::{Cli, Command, ConfigArgs, TrainArgs};
use shoal_rl::config::RunConfig;
use shoal_rl::train::presets::PRESETS;
use shoal_rl::train::{check, resolve};

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
                        && !another_program(command);
                    cargo_run.then(|| command.iter().position(|w| w == "--"))?
                })?;
            Some(command[at + 1..].to_vec())
        })
        .collect()
}

/// Whether a `cargo` line builds or runs a program other than `shoal`: an
/// example, or a binary of another crate (`--bin`, `--manifest-path`).
fn another_program(words: &[String]) -> bool {
    words
        .iter()
        .any(|w| w == "--example" || w == "--bin" || w == "--manifest-path")
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
            if train.source.as_ref().is_some_and(|s| !s.ends_with(".toml")) {
                let cfg = train.resolve().unwrap_or_else(|e| panic!("{place}: {e}"));
                check(&cfg).unwrap_or_else(|e| panic!("{place}: {e}"));
            }
        }
        Command::Config(ConfigArgs { source, settings }) if !source.ends_with(".toml") => {
            let cfg =
                resolve(source, &settings.overrides()).unwrap_or_else(|e| panic!("{place}: {e}"));
            check(&cfg).unwrap_or_else(|e| panic!("{place}: {e}"));
        }
        Command::Sweep(sweep) if !sweep.source.ends_with(".toml") => {
            shoal_rl::sweep::check(sweep).unwrap_or_else(|e| panic!("{place}: {e}"));
        }
        _ => {}
    }
    for dir in reads(&cli) {
        made.require(&dir, place);
    }
    made.dirs.extend(writes(&cli));
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
            if another_program(&words)
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

/// Budgets of the executed commands: a thousandth of the documented ones.
const SHRINK: u64 = 1000;

/// `--set` assignments that shrink `cfg`'s budget: episodes, evaluation and
/// checkpoint intervals by [`SHRINK`] (at least one parallel iteration of
/// `workers`), one evaluation episode, one update per DDPG/HAC cycle.
fn tiny_budget(cfg: &RunConfig, workers: usize) -> Vec<String> {
    let scaled = |n: u64| n.div_ceil(SHRINK).max(1);
    let per_iteration = if workers > 1 {
        (workers * cfg.parallel.episodes_per_iteration) as u64
    } else {
        1
    };
    let mut set = vec![
        format!(
            "train.episodes={}",
            scaled(cfg.train.episodes).max(2 * per_iteration)
        ),
        format!("train.eval_every={}", scaled(cfg.train.eval_every)),
        format!(
            "train.checkpoint_every={}",
            scaled(cfg.train.checkpoint_every)
        ),
        "train.eval_episodes=1".to_string(),
        "train.final_eval_episodes=1".to_string(),
    ];
    if matches!(cfg.algo.kind(), "ddpg" | "hac") {
        set.push("algo.n_batches=1".to_string());
    }
    set
}

/// `args` with the budget a run of `cfg` would have shrunk: the settings of
/// [`tiny_budget`] appended to a fresh run or sweep, a resume's own
/// `train.episodes` scaled like a fresh run's.
fn shrunk(args: &[String], cli: &Cli) -> Vec<String> {
    let with_sets = |sets: Vec<String>| {
        let mut out = shrunk_steps(args);
        for set in sets {
            out.extend(["--set".to_string(), set]);
        }
        out
    };
    match &cli.command {
        Command::Train(TrainArgs {
            source: Some(_), ..
        })
        | Command::Sweep(_)
            if !args.iter().any(|a| a.ends_with(".toml")) =>
        {
            let (cfg, workers) = match &cli.command {
                Command::Train(train) => {
                    let cfg = train.resolve().unwrap();
                    let workers = cfg.parallel.workers;
                    (cfg, workers)
                }
                Command::Sweep(sweep) => {
                    let cfg = resolve(&sweep.source, &sweep.overrides).unwrap();
                    // The most workers any cell of the grid trains with.
                    let workers = sweep
                        .grid
                        .iter()
                        .filter_map(|g| g.strip_prefix("parallel.workers="))
                        .flat_map(|values| values.split(','))
                        .map(|n| n.trim().parse::<usize>().unwrap())
                        .fold(cfg.parallel.workers, usize::max);
                    (cfg, workers)
                }
                _ => unreachable!(),
            };
            with_sets(tiny_budget(&cfg, workers))
        }
        Command::Train(TrainArgs {
            resume: Some(_), ..
        }) => args
            .iter()
            .map(|a| match a.strip_prefix("train.episodes=") {
                Some(n) => format!(
                    "train.episodes={}",
                    n.parse::<u64>().unwrap().div_ceil(SHRINK)
                ),
                None => a.clone(),
            })
            .collect(),
        Command::BenchEnv { .. } => [args, &["--steps".into(), "2000".into()][..]].concat(),
        Command::BenchParallel { .. } => [args, &["--episodes".into(), "1".into()][..]].concat(),
        _ => args.to_vec(),
    }
}

/// `args` with an env-step budget (`--steps N`) shrunk by [`SHRINK`]: the
/// shorthand is applied after every `--set`, so it would outlast the
/// shrunk `train.episodes`.
fn shrunk_steps(args: &[String]) -> Vec<String> {
    let scaled = |n: &str| {
        n.parse::<u64>()
            .unwrap()
            .div_ceil(SHRINK)
            .max(1)
            .to_string()
    };
    let mut out = Vec::with_capacity(args.len());
    let mut after_flag = false;
    for arg in args {
        if after_flag {
            out.push(scaled(arg));
        } else if let Some(n) = arg.strip_prefix("--steps=") {
            out.push(format!("--steps={}", scaled(n)));
        } else {
            out.push(arg.clone());
        }
        after_flag = arg == "--steps";
    }
    out
}

/// The run directories a command makes: a fresh run of a preset (its
/// `--out`, or `runs/<preset>`) and a sweep.
fn writes(cli: &Cli) -> Vec<PathBuf> {
    match &cli.command {
        Command::Train(TrainArgs {
            source: Some(source),
            out,
            ..
        }) if !source.ends_with(".toml") => {
            vec![
                out.clone()
                    .unwrap_or_else(|| Path::new("runs").join(source)),
            ]
        }
        Command::Sweep(sweep) => vec![sweep.out.clone()],
        _ => Vec::new(),
    }
}

/// The run directories a command reads.
/// Whether `path` names a file of the repository (an experiment's config),
/// which no documented command has to make first.
fn in_repository(path: &str) -> bool {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path).is_file()
}

fn reads(cli: &Cli) -> Vec<PathBuf> {
    match &cli.command {
        Command::Train(train) => {
            let config_file = train
                .source
                .as_deref()
                .filter(|s| s.ends_with(".toml") && !in_repository(s));
            let config_dir = config_file.map(|f| Path::new(f).parent().unwrap().to_path_buf());
            train.resume.iter().cloned().chain(config_dir).collect()
        }
        Command::Eval { run_dir, .. } | Command::Render { run_dir, .. } => vec![run_dir.clone()],
        Command::Plot { run_dirs, .. } | Command::Compare { run_dirs, .. } => run_dirs.clone(),
        Command::Scale(scale) => scale.dirs.clone(),
        Command::Config(config)
            if config.source.ends_with(".toml") && !in_repository(&config.source) =>
        {
            vec![Path::new(&config.source).parent().unwrap().to_path_buf()]
        }
        _ => Vec::new(),
    }
}

#[test]
fn every_documented_command_runs_with_a_tiny_budget() {
    let scratch = std::env::temp_dir().join(format!("shoal-docs-run-{}", std::process::id()));
    // Pages share nothing (each runs in a directory of its own), so they
    // run side by side, one per core, each in its page's order.
    let pages = std::sync::Mutex::new(pages());
    let ran = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while let Some(page) = pages.lock().unwrap().pop() {
                    let commands = run_page(&page, &scratch);
                    ran.fetch_add(commands, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    std::fs::remove_dir_all(&scratch).ok();
    let ran = ran.into_inner();
    assert!(ran >= 40, "only {ran} documented commands ran");
}

/// Runs every command of `page`, in order, in its own directory under
/// `scratch`; returns how many ran.
fn run_page(page: &Path, scratch: &Path) -> usize {
    let mut ran = 0;
    let text = std::fs::read_to_string(page).unwrap();
    let name = page
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(page)
        .display()
        .to_string();
    let dir = scratch.join(name.replace('/', "_"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut unavailable: Vec<PathBuf> = Vec::new();
    for (line_number, line) in shell_lines(&text) {
        let words = shlex::split(&line).unwrap_or_default();
        let elsewhere = words.first().is_some_and(|w| w == "mpirun" || w == "srun")
            || another_program(&words)
            || words.iter().any(|w| w == "mpi");
        if another_program(&words)
            && let Some(at) = words.iter().position(|w| w == "--out")
            && let Some(out) = words.get(at + 1)
        {
            unavailable.push(PathBuf::from(out));
        }
        for args in invocations(&line) {
            if args.is_empty() || args[0].starts_with('-') && args[0] != "--help" {
                continue;
            }
            let argv = std::iter::once("shoal".to_string()).chain(args.iter().cloned());
            let cli = Cli::try_parse_from(argv).unwrap();
            if elsewhere {
                unavailable.extend(writes(&cli));
                continue;
            }
            if reads(&cli)
                .iter()
                .any(|r| unavailable.iter().any(|u| r.starts_with(u)))
            {
                continue;
            }
            let mut args = shrunk(&args, &cli);
            // A config file of the repository (an experiment's, under
            // docs/experiments/configs/) is read where the repository has it.
            for arg in &mut args {
                if arg.ends_with(".toml") && !dir.join(&*arg).exists() && in_repository(arg) {
                    *arg = Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join(&*arg)
                        .display()
                        .to_string();
                }
            }
            if matches!(cli.command, Command::Train(_)) {
                args.push("--quiet".to_string());
            }
            let output = std::process::Command::new(env!("CARGO_BIN_EXE_shoal"))
                .args(&args)
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{name}:{line_number}: `shoal {}` failed:\n{}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr)
            );
            ran += 1;
        }
    }
    ran
}
