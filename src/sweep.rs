//! `shoal sweep`: a grid of `--set` values × seeds, each cell a `shoal
//! train` run in its own directory, side by side up to `--jobs`; finished
//! cells are skipped and interrupted ones resumed, so the same command
//! continues a sweep; it ends with one row per setting, medians and ranges
//! over the seeds.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use shoal_rl_core::{Error, Result};
use shoal_rl_eval::{RunDir, Summary, compare_groups};

use crate::config::in_context;
use crate::train::Registries;

/// At most this many seeds, and this many cells in a sweep: a typo such
/// as `--seeds 0..1000000` is refused instead of queued.
pub const MAX_SEEDS: usize = 1_000;
/// See [`MAX_SEEDS`].
pub const MAX_CELLS: usize = 10_000;

/// Arguments of `shoal sweep`.
#[derive(clap::Args, Debug, Clone)]
pub struct SweepArgs {
    /// A preset name or a path to a config.toml, as `shoal train` takes it.
    pub source: String,
    /// A setting to vary, `KEY=V1,V2,...` (repeatable: the grid is every
    /// combination); commas inside `[...]` or quotes stay in the value.
    #[arg(long = "grid", value_name = "KEY=V1,V2,...")]
    pub grid: Vec<String>,
    /// A setting every cell shares, as `shoal train --set` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Seeds: `A..B` (B excluded), `A..=B`, or a list `0,3,7`.
    #[arg(long, default_value = "0..3")]
    pub seeds: String,
    /// Cells trained side by side.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// The sweep's directory: one folder per setting, a run per seed in it.
    #[arg(long)]
    pub out: PathBuf,
    /// Markdown table instead of aligned columns.
    #[arg(long)]
    pub markdown: bool,
}

/// One run of a sweep: a setting of the grid and a seed.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// The setting's name: its `key=value` pairs joined by `,` (`default`
    /// for an empty grid); also its folder.
    pub setting: String,
    /// The `--set` assignments of the setting.
    pub assignments: Vec<String>,
    /// The seed.
    pub seed: u64,
    /// The run directory: `<out>/<setting>/seed-<seed>`.
    pub dir: PathBuf,
}

/// Parses `--seeds`.
pub fn parse_seeds(text: &str) -> Result<Vec<u64>> {
    let bad = || {
        Error::Config(format!(
            "--seeds takes A..B, A..=B or a list like 0,1,2; got `{text}`"
        ))
    };
    let number = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
    let seeds: Vec<u64> = if let Some((a, b)) = text.split_once("..=") {
        let (a, b) = (number(a)?, number(b)?);
        if b.saturating_sub(a) >= MAX_SEEDS as u64 {
            return Err(too_many_seeds(text));
        }
        (a..=b).collect()
    } else if let Some((a, b)) = text.split_once("..") {
        let (a, b) = (number(a)?, number(b)?);
        if b.saturating_sub(a) > MAX_SEEDS as u64 {
            return Err(too_many_seeds(text));
        }
        (a..b).collect()
    } else {
        let list = text.split(',').map(number).collect::<Result<Vec<_>>>()?;
        if list.len() > MAX_SEEDS {
            return Err(too_many_seeds(text));
        }
        list
    };
    if seeds.is_empty() {
        return Err(Error::Config(format!("--seeds `{text}` names no seed")));
    }
    let mut unique = seeds.clone();
    unique.sort_unstable();
    unique.dedup();
    if unique.len() != seeds.len() {
        return Err(Error::Config(format!("--seeds `{text}` repeats a seed")));
    }
    Ok(seeds)
}

fn too_many_seeds(text: &str) -> Error {
    Error::Config(format!(
        "--seeds `{text}` names more than {MAX_SEEDS} seeds"
    ))
}

/// Parses one `--grid KEY=V1,V2,...` into the key and its values.
pub fn parse_grid_entry(entry: &str) -> Result<(String, Vec<String>)> {
    let (key, values) = entry
        .split_once('=')
        .filter(|(k, v)| !k.trim().is_empty() && !v.trim().is_empty())
        .ok_or_else(|| Error::Config(format!("--grid expects KEY=V1,V2,..., got `{entry}`")))?;
    let values = split_values(values);
    if values.iter().any(String::is_empty) {
        return Err(Error::Config(format!(
            "--grid `{entry}` has an empty value"
        )));
    }
    Ok((key.trim().to_string(), values))
}

/// Splits on commas outside brackets and quotes: `[0.1, 1.0],[1.0]` is two
/// values.
fn split_values(text: &str) -> Vec<String> {
    let (mut values, mut current) = (Vec::new(), String::new());
    let (mut depth, mut quote) = (0i32, None);
    for c in text.chars() {
        match (c, quote) {
            ('"' | '\'', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            ('[' | '{', None) => depth += 1,
            (']' | '}', None) => depth -= 1,
            (',', None) if depth == 0 => {
                values.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    values.push(current.trim().to_string());
    values
}

/// Every cell of the grid, settings in the order given (the last key
/// varying fastest), seeds innermost.
pub fn cells(grid: &[(String, Vec<String>)], seeds: &[u64], out: &Path) -> Result<Vec<Cell>> {
    let settings = grid
        .iter()
        .try_fold(1usize, |n, (_, values)| n.checked_mul(values.len()))
        .filter(|n| n.saturating_mul(seeds.len()) <= MAX_CELLS)
        .ok_or_else(|| {
            Error::Config(format!(
                "the sweep has more than {MAX_CELLS} cells; split it"
            ))
        })?;
    let mut cells = Vec::with_capacity(settings * seeds.len());
    for index in 0..settings {
        let mut rest = index;
        let mut assignments = vec![String::new(); grid.len()];
        for (slot, (key, values)) in grid.iter().enumerate().rev() {
            assignments[slot] = format!("{key}={}", values[rest % values.len()]);
            rest /= values.len();
        }
        let setting = if assignments.is_empty() {
            "default".to_string()
        } else {
            assignments.join(",")
        };
        if setting.contains(['/', '\\']) || setting.starts_with('.') {
            return Err(Error::Config(format!(
                "the setting `{setting}` cannot name a folder; avoid / and \\ in grid values"
            )));
        }
        for &seed in seeds {
            cells.push(Cell {
                dir: out.join(&setting).join(format!("seed-{seed}")),
                setting: setting.clone(),
                assignments: assignments.clone(),
                seed,
            });
        }
    }
    Ok(cells)
}

/// What a cell needs: nothing (finished), a fresh run, or a resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellState {
    /// `summary.json` exists.
    Finished,
    /// No run directory yet (or one without a checkpoint, set aside).
    Fresh,
    /// Interrupted after a checkpoint.
    Resume,
}

/// Where `dir` stands. A run stopped by a signal wrote a summary marked
/// interrupted beside its checkpoint: it is resumed, not finished.
pub fn cell_state(dir: &Path) -> CellState {
    let run = RunDir::new(dir);
    let interrupted = || Summary::read(dir).is_ok_and(|s| s.is_interrupted());
    if run.summary().is_file() && !interrupted() {
        CellState::Finished
    } else if run.checkpoints().join("latest").exists() {
        CellState::Resume
    } else {
        CellState::Fresh
    }
}

/// Every cell of the sweep `args` asks for, each cell's config resolved and
/// checked as `shoal train` checks it: a bad key, value or combination
/// fails the sweep at once, with nothing written.
pub fn check(args: &SweepArgs) -> Result<Vec<Cell>> {
    if args.jobs == 0 || args.jobs > shoal_rl_parallel::MAX_WORKERS {
        return Err(Error::Config(format!(
            "--jobs must be between 1 and {}, got {}",
            shoal_rl_parallel::MAX_WORKERS,
            args.jobs
        )));
    }
    let grid = args
        .grid
        .iter()
        .map(|entry| parse_grid_entry(entry))
        .collect::<Result<Vec<_>>>()?;
    let seeds = parse_seeds(&args.seeds)?;
    let cells = cells(&grid, &seeds, &args.out)?;
    let registries = Registries::default();
    for cell in &cells {
        let mut overrides = args.overrides.clone();
        overrides.extend(cell.assignments.iter().cloned());
        overrides.push(format!("seed={}", cell.seed));
        registries
            .resolve(&args.source, &overrides)
            .and_then(|cfg| registries.check(&cfg))
            .map_err(|e| in_context(&format!("cell {}", cell.setting), e))?;
    }
    Ok(cells)
}

/// Runs `shoal sweep`.
pub fn sweep(args: &SweepArgs) -> Result<()> {
    let cells = check(args)?;
    let exe = std::env::current_exe().map_err(|e| Error::io("finding the shoal binary", e))?;
    let pending: Vec<&Cell> = cells
        .iter()
        .filter(|c| cell_state(&c.dir) != CellState::Finished)
        .collect();
    eprintln!(
        "sweep: {} cells, {} finished, {} to run, {} at a time",
        cells.len(),
        cells.len() - pending.len(),
        pending.len(),
        args.jobs
    );
    // Ctrl-C (or Slurm's SIGTERM) reaches the sweep alone, since every
    // cell runs in a process group of its own; the sweep passes one SIGINT
    // on to each running cell, which stops at a checkpoint, and starts no
    // more. A second signal ends the sweep at once.
    let stop = shoal_rl_run::stop_on_signals()?;
    let mut stop_passed_on = false;
    let mut failed = Vec::new();
    let mut stopped = Vec::new();
    let mut queue = pending.into_iter();
    let mut running: Vec<(Child, &Cell, Instant)> = Vec::new();
    loop {
        if stop.is_requested() && !stop_passed_on {
            for (child, _, _) in &running {
                interrupt(child);
            }
            stop_passed_on = true;
        }
        while running.len() < args.jobs && !stop.is_requested() {
            let Some(cell) = queue.next() else { break };
            let child = start_cell(&exe, args, cell)?;
            running.push((child, cell, Instant::now()));
        }
        if running.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        let mut still = Vec::with_capacity(running.len());
        for (mut child, cell, started) in running {
            match child
                .try_wait()
                .map_err(|e| Error::io("waiting for a sweep cell", e))?
            {
                None => still.push((child, cell, started)),
                Some(status) => {
                    let seconds = started.elapsed().as_secs_f64();
                    if stop_passed_on && status.code() == Some(shoal_rl_run::INTERRUPTED_EXIT) {
                        eprintln!(
                            "{} seed {}: stopped at a checkpoint after {seconds:.1} s",
                            cell.setting, cell.seed
                        );
                        stopped.push(cell);
                    } else if status.success() {
                        eprintln!(
                            "{} seed {}: done in {seconds:.1} s",
                            cell.setting, cell.seed
                        );
                    } else {
                        eprintln!(
                            "{} seed {}: failed ({status}); see {}",
                            cell.setting,
                            cell.seed,
                            log_path(cell).display()
                        );
                        failed.push(cell);
                    }
                }
            }
        }
        running = still;
    }

    if stop.is_requested() {
        let not_started = queue.count();
        return Err(Error::Interrupted(format!(
            "sweep stopped: {} cells at a checkpoint, {} failed, {not_started} not started; \
             run the same command to resume",
            stopped.len(),
            failed.len()
        )));
    }

    let mut groups: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for cell in &cells {
        match groups.last_mut() {
            Some((setting, dirs)) if *setting == cell.setting => dirs.push(cell.dir.clone()),
            _ => groups.push((cell.setting.clone(), vec![cell.dir.clone()])),
        }
    }
    let table = compare_groups(&groups)?;
    if args.markdown {
        print!("{}", table.to_markdown());
    } else {
        print!("{}", table.to_terminal());
    }
    match failed.first() {
        None => Ok(()),
        Some(first) => Err(Error::Config(format!(
            "{} of {} cells failed (first: {} seed {}, log {}); run the same command to retry them",
            failed.len(),
            cells.len(),
            first.setting,
            first.seed,
            log_path(first).display()
        ))),
    }
}

/// Where a cell's output goes: beside its run directory, which the run
/// itself creates.
fn log_path(cell: &Cell) -> PathBuf {
    cell.dir.with_extension("log")
}

/// Starts `shoal train` for a cell: fresh, or resuming its checkpoint. A
/// run directory an interrupted run left without any checkpoint holds no
/// progress worth resuming; it is set aside (`seed-N.incomplete-K`), not
/// deleted.
fn start_cell(exe: &Path, args: &SweepArgs, cell: &Cell) -> Result<Child> {
    let parent = cell
        .dir
        .parent()
        .expect("a cell's run directory has a parent");
    std::fs::create_dir_all(parent)
        .map_err(|e| Error::io(format!("creating {}", parent.display()), e))?;
    let mut command = Command::new(exe);
    command.arg("train");
    match cell_state(&cell.dir) {
        CellState::Resume => {
            command.arg("--resume").arg(&cell.dir);
        }
        CellState::Fresh | CellState::Finished => {
            if cell.dir.exists() {
                set_aside(&cell.dir)?;
            }
            command.arg(&args.source);
            for assignment in args.overrides.iter().chain(&cell.assignments) {
                command.arg("--set").arg(assignment);
            }
            command
                .arg("--seed")
                .arg(cell.seed.to_string())
                .arg("--out")
                .arg(&cell.dir);
        }
    }
    let log_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path(cell))
        .map_err(|e| Error::io(format!("opening {}", log_path(cell).display()), e))?;
    let err_file = log_file
        .try_clone()
        .map_err(|e| Error::io("sharing the cell log", e))?;
    command
        .arg("--quiet")
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(err_file)
        .spawn()
        .map_err(|e| Error::io(format!("starting {}", exe.display()), e))
}

/// Asks a running cell to stop at its next clean point, as Ctrl-C would.
fn interrupt(child: &Child) {
    let Ok(pid) = i32::try_from(child.id()) else {
        return;
    };
    // SAFETY: kill(2) with a child's pid and a valid signal number touches
    // no memory; a child that has just exited makes it fail harmlessly.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
}

fn set_aside(dir: &Path) -> Result<()> {
    for k in 1..=MAX_CELLS {
        let aside = dir.with_extension(format!("incomplete-{k}"));
        if !aside.exists() {
            return std::fs::rename(dir, &aside)
                .map_err(|e| Error::io(format!("setting aside {}", dir.display()), e));
        }
    }
    Err(Error::Config(format!(
        "{} was set aside too often; clean it up",
        dir.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_ranges_or_lists() {
        assert_eq!(parse_seeds("0..5").unwrap(), vec![0, 1, 2, 3, 4]);
        assert_eq!(parse_seeds("2..=4").unwrap(), vec![2, 3, 4]);
        assert_eq!(parse_seeds("7, 3,9").unwrap(), vec![7, 3, 9]);
        for (bad, message) in [
            ("3..3", "--seeds `3..3` names no seed"),
            ("1,1", "--seeds `1,1` repeats a seed"),
            (
                "0..100000",
                "--seeds `0..100000` names more than 1000 seeds",
            ),
            (
                "a..b",
                "--seeds takes A..B, A..=B or a list like 0,1,2; got `a..b`",
            ),
        ] {
            assert_eq!(
                parse_seeds(bad).unwrap_err().to_string(),
                format!("invalid configuration: {message}")
            );
        }
    }

    #[test]
    fn grid_values_split_outside_brackets_and_quotes() {
        assert_eq!(
            parse_grid_entry("algo.learning_rate=1e-4, 3e-4,1e-3").unwrap(),
            (
                "algo.learning_rate".to_string(),
                vec!["1e-4".to_string(), "3e-4".into(), "1e-3".into()]
            )
        );
        assert_eq!(
            parse_grid_entry(r#"parallel.worker_lr_scales=[0.1, 1.0],[1.0, 3.0]"#)
                .unwrap()
                .1,
            vec!["[0.1, 1.0]".to_string(), "[1.0, 3.0]".into()]
        );
        assert_eq!(
            parse_grid_entry(r#"x="a,b",c"#).unwrap().1,
            vec![r#""a,b""#.to_string(), "c".into()]
        );
        assert!(parse_grid_entry("algo.gamma").is_err());
        assert!(parse_grid_entry("algo.gamma=0.9,,0.99").is_err());
    }

    #[test]
    fn cells_cover_the_grid_times_the_seeds() {
        let grid = vec![
            ("a".to_string(), vec!["1".to_string(), "2".into()]),
            (
                "b".to_string(),
                vec!["x".to_string(), "y".into(), "z".into()],
            ),
        ];
        let cells = cells(&grid, &[5, 6], Path::new("/s")).unwrap();
        assert_eq!(cells.len(), 12);
        assert_eq!(cells[0].setting, "a=1,b=x");
        assert_eq!(cells[1].setting, "a=1,b=x");
        assert_eq!(cells[1].seed, 6);
        assert_eq!(cells[2].setting, "a=1,b=y");
        assert_eq!(cells[11].setting, "a=2,b=z");
        assert_eq!(cells[11].dir, Path::new("/s/a=2,b=z/seed-6"));
        assert_eq!(cells[11].assignments, vec!["a=2", "b=z"]);
        let none = super::cells(&[], &[0], Path::new("/s")).unwrap();
        assert_eq!(none[0].dir, Path::new("/s/default/seed-0"));
        let wide = vec![("k".to_string(), vec!["v".to_string(); 101])];
        assert!(super::cells(&wide, &(0..100).collect::<Vec<_>>(), Path::new("/s")).is_err());
    }
}
