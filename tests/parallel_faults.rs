//! Faults in parallel runs, through the real binary: a stopped worker, a
//! lying or garbage-speaking rank 0, absurd worker counts. Each must end in
//! one clear error line and a non-zero exit within a bounded time — never a
//! hang, an abort or an out-of-memory.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{assert_clean_failure, scratch, shoal, shoal_args, shoal_command};

/// Waits for `child` to exit, killing it and failing the test after `limit`.
fn wait_at_most(child: &mut Child, limit: Duration) -> std::process::Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("shoal did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    std::process::Output {
        status: child.wait().unwrap(),
        stdout: Vec::new(),
        stderr: stderr.into_bytes(),
    }
}

/// The process ids of `pid`'s children.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn signal(pid: u32, name: &str) {
    let _ = std::process::Command::new("sh")
        .args(["-c", &format!("kill -{name} {pid} 2>/dev/null")])
        .status();
}

fn has_iteration_record(run: &Path) -> bool {
    std::fs::read_to_string(run.join("metrics.jsonl")).is_ok_and(|m| m.contains("\"iteration\""))
}

/// A pool of two worker processes on the toy task.
const POOL_ON_PROCESSES: &[&str] = &[
    "train",
    "toy-reinforce",
    "--workers",
    "2",
    "--backend",
    "processes",
    "--set",
    "parallel.strategy=\"pool\"",
    "--quiet",
];

#[test]
fn a_stopped_process_worker_fails_the_run_within_the_timeout() {
    let dir = scratch("stopped-worker");
    let mut rank_zero = shoal_command()
        .args(POOL_ON_PROCESSES)
        .args([
            "--set",
            "parallel.timeout_s=3",
            "--set",
            "train.episodes=10000000",
            "--out",
            "run",
        ])
        .current_dir(&dir)
        // Its own process group: a stopped member of an orphaned group gets
        // SIGCONT from the kernel, which would quietly undo the fault.
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = rank_zero.id();
    let started = Instant::now();
    let worker = loop {
        let workers = children(pid);
        if let Some(worker) = workers.first()
            && has_iteration_record(&dir.join("run"))
        {
            break *worker;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = rank_zero.kill();
            panic!("the run did not start");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    signal(worker, "STOP");
    let stopped = Instant::now();
    let out = wait_at_most(&mut rank_zero, Duration::from_secs(60));
    let took = stopped.elapsed();
    signal(worker, "KILL"); // in case rank 0 could not
    assert_clean_failure(&out, "worker 1 did not take part in");
    assert_clean_failure(&out, "within 3s (parallel.timeout_s)");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

/// What a fake rank 0 answers a `shoal` worker process.
#[derive(Clone, Copy, Debug)]
enum Lie {
    /// A welcome that claims a 2⁶² byte payload.
    HugeWelcome,
    /// A proper welcome, then a reply claiming 2⁶² bytes.
    HugeReply,
    /// Text from some other program.
    Garbage,
}

fn header(kind: u8, len: u64) -> [u8; 21] {
    let mut bytes = [0u8; 21];
    bytes[0] = kind;
    bytes[13..21].copy_from_slice(&len.to_le_bytes());
    bytes
}

fn worker_facing(lie: Lie) -> std::process::Output {
    let dir = scratch(&format!("lying-rank-zero-{lie:?}"));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let mut worker = shoal_command()
        .args(POOL_ON_PROCESSES)
        .current_dir(&dir)
        .env("SHOAL_RANK", "1")
        .env("SHOAL_WORLD_SIZE", "2")
        .env("SHOAL_COORDINATOR", address.to_string())
        .env("SHOAL_TOKEN", "5")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut stream, _) = listener.accept().unwrap();
    let mut hello = [0u8; 21 + 16];
    stream.read_exact(&mut hello).unwrap();
    assert_eq!(hello[0], 10, "a hello");
    match lie {
        Lie::HugeWelcome => stream.write_all(&header(11, 1 << 62)).unwrap(),
        Lie::HugeReply => {
            stream.write_all(&header(11, 0)).unwrap();
            let mut call = [0u8; 21];
            stream.read_exact(&mut call).unwrap();
            let len = u64::from_le_bytes(call[13..21].try_into().unwrap());
            let mut payload = vec![0u8; len as usize];
            stream.read_exact(&mut payload).unwrap();
            stream.write_all(&header(8, 1 << 62)).unwrap();
        }
        Lie::Garbage => stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n")
            .unwrap(),
    }
    let out = wait_at_most(&mut worker, Duration::from_secs(60));
    assert!(
        std::fs::read_dir(&dir).unwrap().next().is_none(),
        "a worker writes nothing"
    );
    out
}

#[test]
fn a_worker_facing_a_lying_rank_zero_exits_with_one_error_line() {
    assert_clean_failure(
        &worker_facing(Lie::HugeWelcome),
        "answered the handshake with a malformed frame (kind 11, 4611686018427387904 payload",
    );
    assert_clean_failure(
        &worker_facing(Lie::HugeReply),
        "rank 0 sent a malformed reply to broadcast_bytes(root 0) (kind 8, 4611686018427387904",
    );
    assert_clean_failure(
        &worker_facing(Lie::Garbage),
        "answered the handshake with a malformed frame (kind 72",
    );
}

#[test]
fn worker_counts_beyond_the_limit_are_refused_before_anything_is_written() {
    let dir = scratch("too-many-workers");
    for (workers, backend) in [("5000", "threads"), ("5000", "processes"), ("0", "threads")] {
        let out = shoal_args(
            &[
                "train",
                "toy-reinforce",
                "--workers",
                workers,
                "--backend",
                backend,
                "--set",
                "parallel.strategy=\"pool\"",
                "--out",
                "run",
            ],
            &dir,
        );
        assert_clean_failure(
            &out,
            &format!("parallel.workers must be between 1 and 1024, got {workers}"),
        );
        assert!(!dir.join("run").exists(), "{workers} on {backend}");
    }
}

#[test]
fn an_unknown_strategy_or_backend_is_one_clear_line() {
    let dir = scratch("unknown-strategy");
    let out = shoal(
        r#"train toy-reinforce --set 'parallel.strategy="gradient"'"#,
        &dir,
    );
    assert_clean_failure(
        &out,
        "unknown parallel.strategy `gradient` (strategies: none, pool, gather, averaging",
    );
    let out = shoal("train toy-reinforce --backend gpu", &dir);
    assert_clean_failure(&out, "gpu");
    assert!(!dir.join("runs").exists());
}
