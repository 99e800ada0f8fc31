//! The multi-process backend: rank 0 spawns workers of the current executable
//! and talks to them over loopback TCP in a star ([`ProcessComm`],
//! [`run_processes`], [`ProcessConfig`]).
//!
//! # Protocol
//!
//! Every collective is one round: each worker sends its contribution to rank
//! 0, rank 0 combines all contributions in rank order (the same code as the
//! threads backend) and sends each worker its share of the result. While rank
//! 0 waits, it polls its children with `try_wait`, so a worker that crashes or
//! is killed becomes an [`Error::Comm`] within a poll interval instead of a
//! hang. Workers watch their parent process and exit if rank 0 disappears.
//!
//! Every wait is bounded on the clock: rank 0 gives every worker
//! [`ProcessConfig::timeout`] to take part in a collective (a stopped or
//! deadlocked worker is then named in the error), and a worker gives rank 0
//! as long to answer. Rank 0 listens on loopback only and drops any
//! connection that does not present the run's token within a few seconds.
//!
//! The module is split by concern: `coordinator` (rank 0), `worker` (the
//! other ranks) and `wire` (frames, bounded reads and writes).

mod coordinator;
mod wire;
mod worker;

use std::cell::RefCell;
use std::ffi::OsString;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use shoal_rl_core::{Error, Result, derive_seed};

use self::coordinator::Coordinator;
use self::worker::{WorkerLink, watch_parent};
use crate::collective::{Contribution, Outcome};
use crate::comm::{Communicator, bytes_into_f32s, check_root, comm_error, unpack_payloads};

/// Environment variable holding a spawned worker's rank (`1..size`).
pub const RANK_VAR: &str = "SHOAL_RANK";
/// Environment variable holding the number of ranks, rank 0 included.
pub const WORLD_SIZE_VAR: &str = "SHOAL_WORLD_SIZE";
/// Environment variable holding rank 0's loopback address (`127.0.0.1:port`).
pub const COORDINATOR_VAR: &str = "SHOAL_COORDINATOR";
/// Environment variable holding the session token a worker must present.
pub const TOKEN_VAR: &str = "SHOAL_TOKEN";
/// Environment variable holding rank 0's process id, watched by workers.
pub const COORDINATOR_PID_VAR: &str = "SHOAL_COORDINATOR_PID";
/// Environment variable holding [`ProcessConfig::timeout`] in milliseconds,
/// so every worker waits for rank 0 as long as rank 0 waits for it.
pub const TIMEOUT_VAR: &str = "SHOAL_TIMEOUT_MS";

/// How rank 0 spawns and supervises worker processes.
///
/// ```
/// use std::time::Duration;
/// use shoal_rl_parallel::ProcessConfig;
/// let config = ProcessConfig::default()
///     .args(["--exact", "my_test", "--nocapture"])
///     .connect_timeout(Duration::from_secs(30));
/// assert_eq!(config.poll_interval, Duration::from_millis(100));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessConfig {
    /// Program run as each worker. Default: `None`, the current executable
    /// (`std::env::current_exe()`).
    pub program: Option<PathBuf>,
    /// Arguments of each worker. Default: `None`, this process's own
    /// arguments, so a worker re-runs the same command line.
    pub args: Option<Vec<OsString>>,
    /// Extra environment variables for the workers. Default: none.
    pub env: Vec<(OsString, OsString)>,
    /// How long rank 0 waits for every worker to connect. Default: 60 s.
    pub connect_timeout: Duration,
    /// How often a waiting rank checks that its peers are alive. Default: 100 ms.
    pub poll_interval: Duration,
    /// The longest any rank waits for another inside one collective call
    /// (and for the end of the run): a worker that is stopped, deadlocked
    /// or gone is an error naming it after this long, and a worker whose
    /// rank 0 went silent gives up after it. It must exceed the longest
    /// stretch of work between two collectives (an iteration's episodes and
    /// updates, a checkpoint on rank 0). Default: 600 s.
    pub timeout: Duration,
    /// How long rank 0 lets a finished worker take to exit before killing it.
    /// Default: 5 s.
    pub exit_grace: Duration,
    /// Whether workers keep their standard output (rank 0 is the one that
    /// prints, so by default it goes to the null device; standard error is
    /// always inherited). Default: `false`.
    pub inherit_stdout: bool,
}

impl Default for ProcessConfig {
    fn default() -> Self {
        ProcessConfig {
            program: None,
            args: None,
            env: Vec::new(),
            connect_timeout: Duration::from_secs(60),
            poll_interval: Duration::from_millis(100),
            timeout: Duration::from_secs(600),
            exit_grace: Duration::from_secs(5),
            inherit_stdout: false,
        }
    }
}

impl ProcessConfig {
    /// Sets the worker program (default: the current executable).
    #[must_use]
    pub fn program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = Some(program.into());
        self
    }

    /// Sets the worker arguments (default: this process's own arguments).
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args = Some(args.into_iter().map(Into::into).collect());
        self
    }

    /// Adds an environment variable for the workers.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sets how long rank 0 waits for the workers to connect.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets how often a waiting rank checks that its peers are alive.
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// Sets how long a rank waits for another inside one collective.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets how long a finished worker may take to exit before it is killed.
    #[must_use]
    pub fn exit_grace(mut self, grace: Duration) -> Self {
        self.exit_grace = grace;
        self
    }

    /// Sets whether workers keep their standard output.
    #[must_use]
    pub fn inherit_stdout(mut self, inherit: bool) -> Self {
        self.inherit_stdout = inherit;
        self
    }
}

/// Whether this process was spawned as a worker by a [`ProcessComm`] rank 0
/// (the [`RANK_VAR`] environment variable is set).
pub fn is_worker_process() -> bool {
    std::env::var_os(RANK_VAR).is_some()
}

/// Runs `body` on `workers` processes and returns every rank's result, in
/// rank order, on rank 0: `Ok(Some(results))` in the process that started the
/// run, `Ok(None)` in each spawned worker (which should then simply return).
///
/// The first call (no [`RANK_VAR`] in the environment) becomes rank 0: it
/// spawns `workers - 1` copies of `config.program` with `config.args`, runs
/// `body` as rank 0, then collects the workers' results (serialised with
/// postcard). In a spawned worker the same call connects to rank 0, runs
/// `body` with its own rank and sends the result back.
///
/// In a test binary, make the workers run only the current test:
/// `ProcessConfig::default().args(["--exact", "module::tests::name", "--nocapture"])`.
///
/// ```no_run
/// use shoal_rl_parallel::{Communicator, ProcessConfig, run_processes};
/// let results = run_processes(2, &ProcessConfig::default(), |comm: &dyn Communicator| {
///     let mut x = [comm.rank() as f32];
///     comm.all_reduce_sum(&mut x)?;
///     Ok(x[0])
/// })?;
/// match results {
///     Some(all) => println!("rank 0 sees {all:?}"), // [1.0, 1.0]
///     None => {}                                   // a worker: nothing more to do
/// }
/// # Ok::<(), shoal_rl_core::Error>(())
/// ```
pub fn run_processes<T, F>(
    workers: usize,
    config: &ProcessConfig,
    body: F,
) -> Result<Option<Vec<T>>>
where
    T: Serialize + DeserializeOwned,
    F: Fn(&dyn Communicator) -> Result<T>,
{
    let encode = |value: &T| {
        postcard::to_stdvec(value)
            .map_err(|e| comm_error(format!("cannot encode a worker's result: {e}")))
    };
    let Some((own, payloads)) = drive(workers, config, body, encode)? else {
        return Ok(None);
    };
    let mut results = vec![own];
    for (rank, bytes) in payloads.iter().enumerate().skip(1) {
        results.push(
            postcard::from_bytes(bytes).map_err(|e| {
                comm_error(format!("cannot decode the result of worker {rank}: {e}"))
            })?,
        );
    }
    Ok(Some(results))
}

/// Like [`run_processes`], but returns only rank 0's result (`Some` on rank 0,
/// `None` in workers), so `T` needs no serialisation. This is what
/// [`launch`](crate::launch) uses for [`Backend::Processes`](crate::Backend).
pub fn launch_processes<T, F>(workers: usize, config: &ProcessConfig, body: F) -> Result<Option<T>>
where
    F: Fn(&dyn Communicator) -> Result<T>,
{
    let encode = |_: &T| Ok(Vec::new());
    Ok(drive(workers, config, body, encode)?.map(|(own, _)| own))
}

/// The two sides of a process run. A worker runs `body`, sends its encoded
/// result and returns `None`; rank 0 spawns the workers, runs `body` and
/// returns its result with every rank's encoded result (its own slot empty).
fn drive<T, F, E>(
    workers: usize,
    config: &ProcessConfig,
    body: F,
    encode: E,
) -> Result<Option<(T, Vec<Vec<u8>>)>>
where
    F: Fn(&dyn Communicator) -> Result<T>,
    E: Fn(&T) -> Result<Vec<u8>>,
{
    if let Some(comm) = ProcessComm::from_env()? {
        check_worker_world(&comm, workers)?;
        match body(&comm).and_then(|value| encode(&value)) {
            Ok(bytes) => {
                comm.finish(bytes)?;
                Ok(None)
            }
            Err(error) => {
                comm.abort(&error);
                Err(error)
            }
        }
    } else {
        let comm = ProcessComm::spawn(workers, config)?;
        match body(&comm) {
            Ok(own) => {
                let payloads = comm.finish(Vec::new())?.expect("rank 0 collects results");
                Ok(Some((own, payloads)))
            }
            Err(error) => Err(comm.explain(error)),
        }
    }
}

fn check_worker_world(comm: &ProcessComm, workers: usize) -> Result<()> {
    if comm.size != workers {
        let message = format!(
            "this worker was started for {} ranks but its command line asks for {workers}",
            comm.size
        );
        let error = Error::Config(message);
        comm.abort(&error);
        return Err(error);
    }
    Ok(())
}

/// The [`Communicator`] of one process: rank 0 (which spawned the others and
/// supervises them) or a spawned worker.
///
/// Use [`run_processes`] or [`launch`](crate::launch) unless you need the
/// pieces: [`ProcessComm::spawn`] on rank 0, [`ProcessComm::from_env`] in a
/// worker, then [`ProcessComm::finish`] on both.
pub struct ProcessComm {
    rank: usize,
    size: usize,
    link: RefCell<Link>,
}

enum Link {
    Coordinator(Coordinator),
    Worker(WorkerLink),
}

impl std::fmt::Debug for ProcessComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessComm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish()
    }
}

impl ProcessComm {
    /// Becomes rank 0 of a world of `workers` processes: listens on a
    /// loopback port, spawns `workers - 1` workers as `config` says, and waits
    /// for all of them to connect.
    ///
    /// `workers` outside `1..=MAX_WORKERS` is an [`Error::Config`]; a worker that exits before it
    /// connects, or does not connect within `config.connect_timeout`, is an
    /// [`Error::Comm`].
    pub fn spawn(workers: usize, config: &ProcessConfig) -> Result<ProcessComm> {
        crate::comm::check_workers(workers)?;
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| Error::io("cannot listen on a loopback port for workers", e))?;
        let address = listener
            .local_addr()
            .map_err(|e| Error::io("cannot read the workers' loopback port", e))?;
        let token = session_token(address);
        let program = match &config.program {
            Some(program) => program.clone(),
            None => std::env::current_exe()
                .map_err(|e| Error::io("cannot find the current executable to spawn workers", e))?,
        };
        let args: Vec<OsString> = config
            .args
            .clone()
            .unwrap_or_else(|| std::env::args_os().skip(1).collect());
        let mut coordinator = Coordinator::new(config);
        for rank in 1..workers {
            let mut command = Command::new(&program);
            command
                .args(&args)
                .envs(config.env.iter().map(|(k, v)| (k, v)))
                .env(RANK_VAR, rank.to_string())
                .env(WORLD_SIZE_VAR, workers.to_string())
                .env(COORDINATOR_VAR, address.to_string())
                .env(TOKEN_VAR, token.to_string())
                .env(COORDINATOR_PID_VAR, std::process::id().to_string())
                .env(TIMEOUT_VAR, config.timeout.as_millis().to_string())
                .stdin(Stdio::null())
                .stdout(if config.inherit_stdout {
                    Stdio::inherit()
                } else {
                    Stdio::null()
                })
                .stderr(Stdio::inherit());
            let child = command.spawn().map_err(|e| {
                Error::io(
                    format!("cannot spawn worker {rank} ({})", program.display()),
                    e,
                )
            })?;
            coordinator.children.push(Some(child));
        }
        coordinator.accept_all(&listener, token, workers)?;
        Ok(ProcessComm {
            rank: 0,
            size: workers,
            link: RefCell::new(Link::Coordinator(coordinator)),
        })
    }

    /// In a process spawned by [`ProcessComm::spawn`], connects to rank 0 and
    /// returns this worker's communicator; in any other process returns
    /// `Ok(None)`.
    ///
    /// A worker also starts a watchdog that ends the process if rank 0 (its
    /// parent) disappears, so orphaned workers never linger.
    pub fn from_env() -> Result<Option<ProcessComm>> {
        let Some(rank) = std::env::var_os(RANK_VAR) else {
            return Ok(None);
        };
        let var = |name: &str| -> Result<String> {
            std::env::var(name).map_err(|_| {
                Error::Config(format!(
                    "{RANK_VAR} is set but {name} is missing or not UTF-8"
                ))
            })
        };
        let parse = |name: &str, text: &str| -> Result<u64> {
            text.trim().parse().map_err(|_| {
                Error::Config(format!(
                    "{name} must be a non-negative integer, got {text:?}"
                ))
            })
        };
        let rank = parse(RANK_VAR, &rank.to_string_lossy())? as usize;
        let size = parse(WORLD_SIZE_VAR, &var(WORLD_SIZE_VAR)?)? as usize;
        let token = parse(TOKEN_VAR, &var(TOKEN_VAR)?)?;
        if rank == 0 || rank >= size {
            return Err(Error::Config(format!(
                "{RANK_VAR}={rank} is not a worker rank of a world of size {size}"
            )));
        }
        let address_text = var(COORDINATOR_VAR)?;
        let address: SocketAddr = address_text.parse().map_err(|_| {
            Error::Config(format!(
                "{COORDINATOR_VAR} must be host:port, got {address_text:?}"
            ))
        })?;
        if let Ok(pid) = std::env::var(COORDINATOR_PID_VAR)
            && let Ok(pid) = pid.parse::<u32>()
        {
            watch_parent(pid, rank);
        }
        let config = ProcessConfig::default();
        let timeout = match std::env::var(TIMEOUT_VAR) {
            Ok(text) => Duration::from_millis(parse(TIMEOUT_VAR, &text)?),
            Err(_) => config.timeout,
        };
        let link = WorkerLink::connect(
            address,
            rank,
            token,
            config.connect_timeout,
            config.poll_interval,
            timeout,
        )?;
        Ok(Some(ProcessComm {
            rank,
            size,
            link: RefCell::new(Link::Worker(link)),
        }))
    }

    /// Ends the run cleanly. A worker sends `result` to rank 0, waits for the
    /// acknowledgement and returns `Ok(None)`. Rank 0 waits for every
    /// worker's result, lets the workers exit (killing any that linger past
    /// `exit_grace`), and returns `Ok(Some(results))` indexed by rank, its own
    /// `result` first.
    ///
    /// A worker that failed, crashed or is still inside a collective is an
    /// [`Error::Comm`] on rank 0.
    pub fn finish(self, result: Vec<u8>) -> Result<Option<Vec<Vec<u8>>>> {
        let rank = self.rank;
        match self.link.into_inner() {
            Link::Worker(mut worker) => {
                worker.finish(result, rank)?;
                Ok(None)
            }
            Link::Coordinator(mut coordinator) => {
                let mut results = vec![result];
                results.extend(coordinator.collect_results()?);
                coordinator.finished = true;
                Ok(Some(results))
            }
        }
    }

    /// Tells rank 0 that this worker failed with `error` (best effort), so
    /// rank 0 can report the cause rather than a lost connection. Rank 0
    /// itself does nothing here: dropping it shuts its workers down.
    pub fn abort(&self, error: &Error) {
        if let Link::Worker(worker) = &mut *self.link.borrow_mut() {
            // Marks a root cause, as opposed to the echo of another failure.
            worker.abort(&error.to_string(), !matches!(error, Error::Comm(_)));
        }
    }

    /// On rank 0, replaces a communication error by the failure that caused
    /// it, if a worker reports one within a moment (a worker whose learner
    /// failed mid-collective leaves rank 0 with only a mismatch otherwise).
    pub fn explain(&self, error: Error) -> Error {
        if !matches!(error, Error::Comm(_)) {
            return error;
        }
        match &mut *self.link.borrow_mut() {
            Link::Coordinator(coordinator) => {
                match coordinator.root_cause(Duration::from_secs(2)) {
                    Some(cause) => comm_error(cause),
                    None => error,
                }
            }
            Link::Worker(_) => error,
        }
    }

    /// Runs one collective round and returns what this rank receives.
    fn exchange(&self, contribution: Contribution) -> Result<Delivered> {
        match &mut *self.link.borrow_mut() {
            Link::Coordinator(coordinator) => {
                coordinator.exchange(contribution).map(Delivered::Outcome)
            }
            Link::Worker(worker) => worker.exchange(contribution, self.rank).map(Delivered::Raw),
        }
    }
}

/// What a collective hands back: the combined outcome on rank 0, the raw
/// reply payload on a worker.
enum Delivered {
    Outcome(Outcome),
    Raw(Vec<u8>),
}

impl Communicator for ProcessComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn barrier(&self) -> Result<()> {
        self.exchange(Contribution::Barrier).map(|_| ())
    }

    fn broadcast(&self, values: &mut [f32], root: usize) -> Result<()> {
        check_root(root, self.size, "broadcast")?;
        let sent = if self.rank == root {
            values.to_vec()
        } else {
            Vec::new()
        };
        match self.exchange(Contribution::Broadcast {
            root,
            len: values.len(),
            values: sent,
        })? {
            Delivered::Outcome(Outcome::Values(result)) => values.copy_from_slice(&result),
            Delivered::Raw(bytes) => bytes_into_f32s(&bytes, values)?,
            _ => {}
        }
        Ok(())
    }

    fn all_reduce_sum(&self, values: &mut [f32]) -> Result<()> {
        // The hot path of gradient averaging: no per-call allocations.
        match &mut *self.link.borrow_mut() {
            Link::Coordinator(coordinator) => coordinator.all_reduce(values),
            Link::Worker(worker) => worker.all_reduce(values, self.rank),
        }
    }

    fn gather_bytes(&self, payload: &[u8], root: usize) -> Result<Option<Vec<Vec<u8>>>> {
        check_root(root, self.size, "gather_bytes")?;
        let delivered = self.exchange(Contribution::Gather {
            root,
            payload: payload.to_vec(),
        })?;
        if self.rank != root {
            return Ok(None);
        }
        match delivered {
            Delivered::Outcome(Outcome::Payloads { payloads, .. }) => Ok(Some(payloads)),
            Delivered::Raw(bytes) => unpack_payloads(&bytes).map(Some),
            _ => Err(comm_error("gather_bytes: rank 0 sent no payloads")),
        }
    }

    fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize) -> Result<()> {
        check_root(root, self.size, "broadcast_bytes")?;
        let sent = if self.rank == root {
            bytes.clone()
        } else {
            Vec::new()
        };
        match self.exchange(Contribution::BroadcastBytes { root, bytes: sent })? {
            Delivered::Outcome(Outcome::Bytes(result)) | Delivered::Raw(result) => *bytes = result,
            _ => {}
        }
        Ok(())
    }
}

fn session_token(address: SocketAddr) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    derive_seed(
        nanos ^ u64::from(address.port()),
        u64::from(std::process::id()),
    )
}

/// "exit code 1", "signal 9 (SIGKILL)".
fn describe_exit(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let name = match signal {
                2 => " (SIGINT)",
                6 => " (SIGABRT)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                15 => " (SIGTERM)",
                _ => "",
            };
            return format!("signal {signal}{name}");
        }
    }
    match status.code() {
        Some(code) => format!("exit code {code}"),
        None => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::check_communicator;
    use crate::testutil::{on_processes, test_path, within, worker_config};

    const LIMIT: Duration = Duration::from_secs(120);

    #[test]
    fn processes_pass_the_communicator_suite() {
        let results = within(LIMIT, || {
            on_processes(
                test_path!(processes_pass_the_communicator_suite),
                3,
                |comm| {
                    check_communicator(comm)?;
                    Ok(comm.rank())
                },
            )
        });
        if let Some(ranks) = results.unwrap() {
            assert_eq!(ranks, vec![0, 1, 2]);
        }
    }

    #[test]
    fn one_process_needs_no_workers() {
        if is_worker_process() {
            return; // only rank 0 of another test's run could get here
        }
        let results = run_processes(1, &ProcessConfig::default(), |comm| {
            check_communicator(comm)?;
            Ok(comm.size())
        });
        assert_eq!(results.unwrap(), Some(vec![1]));
    }

    #[test]
    fn zero_workers_is_a_config_error() {
        let err = ProcessComm::spawn(0, &ProcessConfig::default()).unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{err}");
    }

    #[test]
    fn killed_worker_is_reported_not_hung() {
        let result = within(LIMIT, || {
            on_processes(test_path!(killed_worker_is_reported_not_hung), 2, |comm| {
                if comm.rank() == 1 {
                    let me = std::process::id().to_string();
                    let _ = Command::new("sh")
                        .args(["-c", &format!("kill -9 {me}")])
                        .status();
                    std::thread::sleep(Duration::from_secs(60));
                }
                comm.barrier()?;
                Ok(())
            })
        });
        let err = result.unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, Error::Comm(_)), "{message}");
        assert!(
            message.contains("worker 1 exited with signal 9"),
            "{message}"
        );
    }

    #[test]
    fn failing_worker_reports_its_error_to_rank_zero() {
        let result = within(LIMIT, || {
            on_processes(
                test_path!(failing_worker_reports_its_error_to_rank_zero),
                2,
                |comm| {
                    if comm.rank() == 1 {
                        return Err(Error::Config("deliberate failure".into()));
                    }
                    comm.all_reduce_sum(&mut [1.0; 8])?;
                    Ok(())
                },
            )
        });
        match result {
            // In the worker the error is its own.
            Err(Error::Config(message)) if is_worker_process() => {
                assert_eq!(message, "deliberate failure")
            }
            Err(err) => {
                let message = err.to_string();
                assert!(
                    message.contains("worker 1 failed: invalid configuration: deliberate failure"),
                    "{message}"
                );
            }
            Ok(results) => panic!("expected an error, got {}", results.is_some()),
        }
    }

    #[test]
    fn mismatched_collectives_fail_on_every_rank() {
        let result = within(LIMIT, || {
            on_processes(
                test_path!(mismatched_collectives_fail_on_every_rank),
                2,
                |comm| {
                    if comm.rank() == 0 {
                        comm.barrier()
                    } else {
                        comm.broadcast(&mut [0.0], 0)
                    }
                },
            )
        });
        let message = result.unwrap_err().to_string();
        assert!(message.contains("ranks disagree"), "{message}");
    }

    #[test]
    fn worker_that_stops_early_is_reported() {
        let result = within(LIMIT, || {
            on_processes(test_path!(worker_that_stops_early_is_reported), 2, |comm| {
                if comm.rank() == 0 {
                    comm.barrier()?;
                }
                Ok(())
            })
        });
        if is_worker_process() {
            return; // the worker's own view depends on when rank 0 stops it
        }
        let message = result.unwrap_err().to_string();
        assert!(
            message.contains("worker 1 finished its work while rank 0 was in barrier()"),
            "{message}"
        );
    }

    /// Role of the process that plays rank 0 in `workers_exit_when_rank_zero_dies`.
    const ROLE_VAR: &str = "SHOAL_TEST_ROLE";
    const PID_FILE_VAR: &str = "SHOAL_TEST_PID_FILE";

    #[test]
    fn workers_exit_when_rank_zero_dies() {
        let test = test_path!(workers_exit_when_rank_zero_dies);
        if std::env::var_os(ROLE_VAR).is_some() {
            // Rank 0 (killed by the test below) or its worker.
            let _ = run_processes(2, &worker_config(test), |comm| {
                if comm.rank() == 1 {
                    let path = std::env::var(PID_FILE_VAR).expect("pid file");
                    std::fs::write(path, std::process::id().to_string()).expect("write pid");
                    comm.barrier()?; // rank 0 never gets here: it waits to be killed
                } else {
                    std::thread::sleep(Duration::from_secs(120));
                }
                Ok(())
            });
            return;
        }
        let pid_file =
            std::env::temp_dir().join(format!("shoal-worker-pid-{}", std::process::id()));
        let _ = std::fs::remove_file(&pid_file);
        let mut rank_zero = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                crate::testutil::exact_name(test),
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(ROLE_VAR, "rank0")
            .env(PID_FILE_VAR, &pid_file)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let worker_pid = within(LIMIT, move || {
            loop {
                if let Ok(text) = std::fs::read_to_string(&pid_file)
                    && let Ok(pid) = text.trim().parse::<u32>()
                {
                    let _ = std::fs::remove_file(&pid_file);
                    return pid;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        rank_zero.kill().unwrap();
        rank_zero.wait().unwrap();
        let gone = within(LIMIT, move || {
            loop {
                // Gone, or a zombie waiting for a reaper that may never come.
                match std::fs::read_to_string(format!("/proc/{worker_pid}/stat")) {
                    Err(_) => return true,
                    Ok(stat)
                        if stat
                            .rsplit(')')
                            .next()
                            .is_some_and(|s| s.trim_start().starts_with('Z')) =>
                    {
                        return true;
                    }
                    Ok(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        });
        assert!(gone);
    }

    /// A worker that never reaches the collective (deadlocked, or stopped:
    /// `tests/parallel_faults.rs` sends a real SIGSTOP through the binary)
    /// is named on rank 0 within the timeout.
    #[test]
    fn a_deadlocked_worker_is_named_within_the_timeout() {
        let test = test_path!(a_deadlocked_worker_is_named_within_the_timeout);
        let config = worker_config(test).timeout(Duration::from_secs(2));
        let started = std::time::Instant::now();
        let result = within(LIMIT, move || {
            run_processes(2, &config, |comm| {
                if comm.rank() == 1 {
                    std::thread::sleep(Duration::from_secs(300));
                }
                comm.barrier()
            })
        });
        if is_worker_process() {
            return; // never reached: rank 0 kills the sleeping worker
        }
        let message = result.unwrap_err().to_string();
        assert!(
            message.contains("worker 1 did not take part in barrier() within 2s"),
            "{message}"
        );
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    /// Rank 0 stays silent until the worker has given up on it (the worker
    /// leaves a marker file after its barrier fails), so a slow machine can
    /// delay the test but not let rank 0 answer in time by accident.
    #[test]
    fn a_worker_gives_up_when_rank_zero_goes_silent() {
        let test = test_path!(a_worker_gives_up_when_rank_zero_goes_silent);
        let config = worker_config(test).timeout(Duration::from_secs(1));
        // Rank 0 is the worker's parent: both name the marker by its pid.
        let marker =
            |rank_zero: u32| std::env::temp_dir().join(format!("shoal-silent-{rank_zero}"));
        let result = within(LIMIT, move || {
            run_processes(2, &config, |comm| {
                if comm.rank() == 0 {
                    let marker = marker(std::process::id());
                    let waiting = std::time::Instant::now();
                    while !marker.exists() && waiting.elapsed() < Duration::from_secs(60) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    let _ = std::fs::remove_file(&marker);
                    return comm.barrier();
                }
                let outcome = comm.barrier();
                if outcome.is_err() {
                    std::fs::write(marker(std::os::unix::process::parent_id()), b"gave up")
                        .expect("writing the marker");
                }
                outcome
            })
        });
        if is_worker_process() {
            return;
        }
        let message = result.unwrap_err().to_string();
        assert!(
            message.contains("worker 1: rank 0 did not answer barrier() within 1s"),
            "{message}"
        );
    }

    /// Rank 0's listener meets strangers before its worker: a frame claiming
    /// 2⁶² bytes with the wrong token, a hello with the right token but the
    /// same absurd length, plain text, and a connection that sends nothing.
    /// Each is dropped; the run goes on.
    #[test]
    fn strangers_at_the_listener_are_dropped_and_the_run_goes_on() {
        use std::io::Write;
        let test = test_path!(strangers_at_the_listener_are_dropped_and_the_run_goes_on);
        const SABOTEUR_VAR: &str = "SHOAL_TEST_SABOTEUR";
        let mut silent = None;
        if std::env::var_os(SABOTEUR_VAR).is_some() {
            // The worker plays the strangers first, then joins as itself.
            let address = std::env::var(COORDINATOR_VAR).unwrap();
            let token: u64 = std::env::var(TOKEN_VAR).unwrap().parse().unwrap();
            let header = |kind: u8, count: u64, len: u64| {
                let mut bytes = vec![kind, 1, 0, 0, 0];
                bytes.extend_from_slice(&count.to_le_bytes());
                bytes.extend_from_slice(&len.to_le_bytes());
                bytes
            };
            for bytes in [
                header(wire::KIND_GATHER, 0, 1 << 62),
                header(wire::KIND_HELLO, token, 1 << 62),
                b"GET / HTTP/1.0\r\n\r\n".to_vec(),
            ] {
                let mut stranger = std::net::TcpStream::connect(&address).unwrap();
                stranger.write_all(&bytes).unwrap();
            }
            silent = Some(std::net::TcpStream::connect(&address).unwrap());
        }
        let config = worker_config(test).env(SABOTEUR_VAR, "1");
        let result = within(LIMIT, move || {
            run_processes(2, &config, |comm| {
                comm.barrier()?;
                Ok(comm.rank())
            })
        });
        drop(silent);
        if is_worker_process() {
            return;
        }
        assert_eq!(result.unwrap(), Some(vec![0, 1]));
    }

    /// A worker whose "rank 0" answers its first collective with a reply
    /// claiming 2⁶² bytes fails with a clear error instead of trying to
    /// allocate it; a welcome that carries a payload is refused the same way.
    #[test]
    fn a_lying_rank_zero_is_an_error_in_the_worker_not_an_abort() {
        use std::io::{Read, Write};
        let test = test_path!(a_lying_rank_zero_is_an_error_in_the_worker_not_an_abort);
        const LIAR_VAR: &str = "SHOAL_TEST_LIAR";
        if let Some(lie) = std::env::var_os(LIAR_VAR) {
            let result = ProcessComm::from_env().and_then(|comm| comm.unwrap().barrier());
            let expected = if lie == "reply" {
                "rank 0 sent a malformed reply to barrier() (kind 8, 4611686018427387904"
            } else {
                "answered the handshake with a malformed frame (kind 11, 4611686018427387904"
            };
            let code = match result {
                Err(e) if e.to_string().contains(expected) => 42,
                Err(e) => {
                    eprintln!("unexpected error: {e}");
                    1
                }
                Ok(()) => 2,
            };
            std::process::exit(code);
        }
        if is_worker_process() {
            return;
        }
        let header = |kind: u8, len: u64| {
            let mut bytes = [0u8; wire::HEADER_LEN];
            bytes[0] = kind;
            bytes[13..21].copy_from_slice(&len.to_le_bytes());
            bytes
        };
        for lie in ["reply", "welcome"] {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let address = listener.local_addr().unwrap();
            let mut worker = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", crate::testutil::exact_name(test), "--nocapture"])
                .env(LIAR_VAR, lie)
                .env(RANK_VAR, "1")
                .env(WORLD_SIZE_VAR, "2")
                .env(COORDINATOR_VAR, address.to_string())
                .env(TOKEN_VAR, "5")
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            let status = within(LIMIT, move || {
                let (mut stream, _) = listener.accept().unwrap();
                let mut frame = [0u8; wire::HEADER_LEN + wire::PROTOCOL.len()];
                stream.read_exact(&mut frame).unwrap();
                if lie == "reply" {
                    stream.write_all(&header(wire::KIND_WELCOME, 0)).unwrap();
                    let mut barrier = [0u8; wire::HEADER_LEN];
                    stream.read_exact(&mut barrier).unwrap();
                    stream
                        .write_all(&header(wire::KIND_REPLY_OK, 1 << 62))
                        .unwrap();
                } else {
                    stream
                        .write_all(&header(wire::KIND_WELCOME, 1 << 62))
                        .unwrap();
                }
                worker.wait().unwrap()
            });
            assert_eq!(status.code(), Some(42), "{lie}: {status:?}");
        }
    }

    #[test]
    fn exit_statuses_are_described_plainly() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(describe_exit(ExitStatus::from_raw(9)), "signal 9 (SIGKILL)");
        assert_eq!(describe_exit(ExitStatus::from_raw(3 << 8)), "exit code 3");
    }
}
