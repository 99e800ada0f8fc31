//! Helpers shared by the end-to-end tests: running the `shoal` binary,
//! scratch directories, and the "one clear error line" check.
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `shoal` binary under test.
pub fn shoal_command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_shoal"))
}

/// Runs the command line `shoal <line>` in `cwd` to completion. The line is
/// split into words as a POSIX shell would (`'...'` keeps a TOML string's
/// quotes), so a test reads like the command a user types.
pub fn shoal(line: &str, cwd: &Path) -> Output {
    let words = shlex::split(line).unwrap_or_else(|| panic!("unbalanced quotes in `{line}`"));
    shoal_args(&words, cwd)
}

/// Runs `shoal args…` in `cwd` to completion, for arguments computed at run
/// time (paths, formatted values) that a command line would need quoting for.
pub fn shoal_args<S: AsRef<std::ffi::OsStr>>(args: &[S], cwd: &Path) -> Output {
    shoal_command()
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the shoal binary runs")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A scratch directory under the target dir, fresh for each test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cli")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Exits non-zero (not by a signal) with exactly one `error:` line and no
/// panic trace.
pub fn assert_clean_failure(out: &Output, needle: &str) {
    let err = stderr(out);
    assert!(
        !out.status.success(),
        "expected failure, got success; stderr: {err}"
    );
    assert!(
        out.status.code().is_some(),
        "ended by a signal ({:?}), not an error: {err}",
        out.status
    );
    assert!(!err.contains("panicked"), "panic trace in stderr: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    // Said once: no error wrapped in another that repeats its prefix.
    assert!(
        !lines[0]["error: ".len()..].contains("error:")
            && lines[0].matches("invalid configuration").count() <= 1,
        "the error repeats itself: {err}"
    );
    assert!(err.contains(needle), "expected `{needle}` in: {err}");
}

/// Every record of a run's `metrics.jsonl` without its wall-clock time, for
/// comparing two runs record by record.
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

/// An example program, which `cargo test` builds beside the test binaries.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    profile_dir.join("examples").join(name)
}

/// Runs example `name` with `args` in `dir` and asserts it succeeded; its stdout.
pub fn run_example(name: &str, dir: &Path, args: &[&str]) -> String {
    let out = Command::new(example(name))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the example runs");
    assert!(out.status.success(), "{name} {args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}
