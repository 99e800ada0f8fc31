//! What both tests need: the programs, a scratch directory, a run's records.
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::Output;

/// Runs this crate's program `bin` with `args` in `dir`; stdout on success.
pub fn run(bin: &str, dir: &Path, args: &[&str]) -> String {
    let out = program(bin, dir, args);
    assert!(
        out.status.success(),
        "{bin} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `bin` with `args` in `dir` to completion, whatever its exit.
pub fn program(bin: &str, dir: &Path, args: &[&str]) -> Output {
    let path = match bin {
        "custom_env" => env!("CARGO_BIN_EXE_custom_env"),
        "custom_strategy" => env!("CARGO_BIN_EXE_custom_strategy"),
        other => panic!("no program {other}"),
    };
    std::process::Command::new(path)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the program runs")
}

/// A fresh scratch directory under the target dir.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("library-user")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every record of a run's `metrics.jsonl` but its wall-clock time.
pub fn records(run: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
            record.as_object_mut().unwrap().remove("wall_s");
            record
        })
        .collect()
}

/// The one `error:` line of a failed run, which must contain `needle`.
pub fn assert_one_error_line(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && out.status.code().is_some(),
        "{err}"
    );
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains(needle),
        "{err}"
    );
}
