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
//! A frame is `[kind u8][root u32][count u64][payload length u64][payload]`,
//! all little endian.

use std::cell::RefCell;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;
use shoal_core::{Error, Result, derive_seed};

use crate::collective::{Contribution, Outcome, combine};
use crate::comm::{
    Communicator, bytes_into_f32s, check_root, comm_error, f32s_to_bytes, pack_payloads,
    unpack_payloads,
};

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

const KIND_BARRIER: u8 = 1;
const KIND_BROADCAST: u8 = 2;
const KIND_ALL_REDUCE: u8 = 3;
const KIND_GATHER: u8 = 4;
const KIND_BROADCAST_BYTES: u8 = 5;
const KIND_DONE: u8 = 6;
const KIND_ABORT: u8 = 7;
const KIND_REPLY_OK: u8 = 8;
const KIND_REPLY_ERR: u8 = 9;
const KIND_HELLO: u8 = 10;
const KIND_WELCOME: u8 = 11;
const HEADER_LEN: usize = 21;
/// Identifies the protocol in the handshake.
const PROTOCOL: &[u8] = b"shoal-parallel/1";

/// How rank 0 spawns and supervises worker processes.
///
/// ```
/// use std::time::Duration;
/// use shoal_parallel::ProcessConfig;
/// let config = ProcessConfig::default()
///     .args(["--exact", "my_test", "--nocapture"])
///     .connect_timeout(Duration::from_secs(30));
/// assert_eq!(config.poll_interval, Duration::from_millis(100));
/// ```
#[derive(Clone, Debug)]
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
/// use shoal_parallel::{Communicator, ProcessConfig, run_processes};
/// let results = run_processes(2, &ProcessConfig::default(), |comm: &dyn Communicator| {
///     let mut x = [comm.rank() as f32];
///     comm.all_reduce_sum(&mut x)?;
///     Ok(x[0])
/// })?;
/// match results {
///     Some(all) => println!("rank 0 sees {all:?}"), // [1.0, 1.0]
///     None => {}                                   // a worker: nothing more to do
/// }
/// # Ok::<(), shoal_core::Error>(())
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
    /// `workers == 0` is an [`Error::Config`]; a worker that exits before it
    /// connects, or does not connect within `config.connect_timeout`, is an
    /// [`Error::Comm`].
    pub fn spawn(workers: usize, config: &ProcessConfig) -> Result<ProcessComm> {
        if workers == 0 {
            return Err(Error::Config(
                "the number of workers must be at least 1, got 0".into(),
            ));
        }
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
        let mut coordinator = Coordinator {
            streams: Vec::new(),
            children: Vec::new(),
            config: config.clone(),
            broken: None,
            finished: false,
            scratch: Vec::new(),
            reply: Vec::new(),
        };
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
        let deadline = Instant::now() + config.connect_timeout;
        let mut stream = loop {
            match TcpStream::connect_timeout(
                &address,
                config.poll_interval.max(Duration::from_secs(1)),
            ) {
                Ok(stream) => break stream,
                Err(e) if Instant::now() >= deadline => {
                    return Err(Error::io(
                        format!("worker {rank} cannot reach rank 0 at {address}"),
                        e,
                    ));
                }
                Err(_) => std::thread::sleep(config.poll_interval),
            }
        };
        stream
            .set_nodelay(true)
            .map_err(|e| Error::io("cannot configure the socket", e))?;
        let hello = Frame {
            kind: KIND_HELLO,
            root: rank as u32,
            count: token,
            payload: PROTOCOL.to_vec(),
        };
        write_frame(&mut stream, &hello, &mut || Ok(()))
            .map_err(|e| comm_error(format!("worker {rank}: handshake with rank 0 failed: {e}")))?;
        match read_frame(&mut stream, &mut || Ok(())) {
            Ok(frame) if frame.kind == KIND_WELCOME => {}
            Ok(frame) if frame.kind == KIND_REPLY_ERR => {
                return Err(comm_error(
                    String::from_utf8_lossy(&frame.payload).into_owned(),
                ));
            }
            Ok(_) => {
                return Err(comm_error(format!(
                    "worker {rank}: rank 0 sent an unexpected handshake"
                )));
            }
            Err(e) => {
                return Err(comm_error(format!(
                    "worker {rank}: handshake with rank 0 failed: {e}"
                )));
            }
        }
        Ok(Some(ProcessComm {
            rank,
            size,
            link: RefCell::new(Link::Worker(WorkerLink {
                stream,
                broken: None,
                out: Vec::new(),
                reply: Vec::new(),
            })),
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
                if let Some(message) = &worker.broken {
                    return Err(comm_error(message.clone()));
                }
                let done = Frame {
                    kind: KIND_DONE,
                    root: 0,
                    count: 0,
                    payload: result,
                };
                let no_idle = &mut || Ok(());
                write_frame(&mut worker.stream, &done, no_idle)
                    .and_then(|()| read_frame(&mut worker.stream, no_idle))
                    .map_err(|e| {
                        comm_error(format!(
                            "worker {rank}: connection to rank 0 lost while finishing: {e}"
                        ))
                    })?;
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
            let message = error.to_string();
            worker.broken = Some(format!("this worker aborted: {message}"));
            let frame = Frame {
                kind: KIND_ABORT,
                root: 0,
                // Marks a root cause, as opposed to the echo of another failure.
                count: u64::from(!matches!(error, Error::Comm(_))),
                payload: message.into_bytes(),
            };
            let _ = write_frame(&mut worker.stream, &frame, &mut || Ok(()));
            let _ = worker.stream.shutdown(Shutdown::Both);
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

/// Rank 0's side: one stream and (usually) one child process per worker.
struct Coordinator {
    /// Index `rank - 1`.
    streams: Vec<TcpStream>,
    /// Index `rank - 1`; `None` once reaped.
    children: Vec<Option<Child>>,
    config: ProcessConfig,
    /// Set after the first failure; every later call repeats it.
    broken: Option<String>,
    /// Whether every worker reported a result (then exiting is expected).
    finished: bool,
    /// Reused buffers of the all-reduce fast path.
    scratch: Vec<u8>,
    reply: Vec<u8>,
}

impl Coordinator {
    fn accept_all(&mut self, listener: &TcpListener, token: u64, size: usize) -> Result<()> {
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("cannot configure the workers' listener", e))?;
        let deadline = Instant::now() + self.config.connect_timeout;
        let mut slots: Vec<Option<TcpStream>> = (1..size).map(|_| None).collect();
        while slots.iter().any(Option::is_none) {
            match listener.accept() {
                Ok((stream, _)) => {
                    if let Some((rank, stream)) = self.handshake(stream, token, size)? {
                        if slots[rank - 1].is_some() {
                            return Err(comm_error(format!("two workers claimed rank {rank}")));
                        }
                        slots[rank - 1] = Some(stream);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    for (index, slot) in slots.iter().enumerate() {
                        if slot.is_none()
                            && let Some(status) = self.exit_status(index + 1)
                        {
                            return Err(comm_error(format!(
                                "worker {} exited with {} before connecting to rank 0",
                                index + 1,
                                describe_exit(status)
                            )));
                        }
                    }
                    if Instant::now() >= deadline {
                        let missing: Vec<String> = slots
                            .iter()
                            .enumerate()
                            .filter(|(_, s)| s.is_none())
                            .map(|(i, _)| (i + 1).to_string())
                            .collect();
                        return Err(comm_error(format!(
                            "worker(s) {} did not connect within {:?}",
                            missing.join(", "),
                            self.config.connect_timeout
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io("cannot accept a worker connection", e)),
            }
        }
        self.streams = slots
            .into_iter()
            .map(|s| s.expect("all connected"))
            .collect();
        Ok(())
    }

    /// Validates a new connection; `None` for a stranger (ignored).
    fn handshake(
        &mut self,
        stream: TcpStream,
        token: u64,
        size: usize,
    ) -> Result<Option<(usize, TcpStream)>> {
        let configure = |s: &TcpStream| -> io::Result<()> {
            s.set_nonblocking(false)?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(self.config.poll_interval))?;
            s.set_write_timeout(Some(self.config.poll_interval))
        };
        let mut stream = stream;
        configure(&stream).map_err(|e| Error::io("cannot configure a worker connection", e))?;
        let give_up = Instant::now() + Duration::from_secs(10);
        let hello = read_frame(&mut stream, &mut || {
            if Instant::now() > give_up {
                Err(comm_error("handshake timed out"))
            } else {
                Ok(())
            }
        });
        let Ok(hello) = hello else { return Ok(None) };
        let rank = hello.root as usize;
        if hello.kind != KIND_HELLO || hello.count != token || hello.payload != PROTOCOL {
            return Ok(None);
        }
        if rank == 0 || rank >= size {
            return Err(comm_error(format!(
                "a worker claimed rank {rank} in a world of size {size}"
            )));
        }
        let welcome = Frame {
            kind: KIND_WELCOME,
            root: 0,
            count: 0,
            payload: Vec::new(),
        };
        write_frame(&mut stream, &welcome, &mut || Ok(()))
            .map_err(|e| comm_error(format!("handshake with worker {rank} failed: {e}")))?;
        Ok(Some((rank, stream)))
    }

    fn exchange(&mut self, own: Contribution) -> Result<Outcome> {
        if let Some(message) = &self.broken {
            return Err(comm_error(message.clone()));
        }
        let call = own.describe();
        let mut contributions = vec![own];
        for rank in 1..=self.streams.len() {
            let frame = self.receive(rank, &call)?;
            match decode_contribution(frame) {
                Ok(contribution) => contributions.push(contribution),
                Err(frame) => return Err(self.reject(rank, frame, &call)),
            }
        }
        let outcome = match combine(contributions) {
            Ok(outcome) => outcome,
            Err(message) => {
                self.tell_workers(&message);
                return Err(self.fail(message));
            }
        };
        let shared = match &outcome {
            Outcome::Values(values) => f32s_to_bytes(values),
            Outcome::Bytes(bytes) => bytes.clone(),
            Outcome::Done | Outcome::Payloads { .. } => Vec::new(),
        };
        let packed = match &outcome {
            Outcome::Payloads { root, payloads } if *root != 0 => pack_payloads(payloads),
            _ => Vec::new(),
        };
        let shared = Frame {
            kind: KIND_REPLY_OK,
            root: 0,
            count: 0,
            payload: shared,
        };
        let packed = Frame {
            kind: KIND_REPLY_OK,
            root: 0,
            count: 0,
            payload: packed,
        };
        for rank in 1..=self.streams.len() {
            let reply = match &outcome {
                Outcome::Payloads { root, .. } if *root == rank => &packed,
                _ => &shared,
            };
            self.send(rank, reply, &call)?;
        }
        Ok(outcome)
    }

    /// All-reduce without the generic round: each worker's payload is added
    /// into `values` straight from a reused buffer, in rank order (the same
    /// order, hence the same bits, as [`combine`]), and one encoded reply is
    /// sent to every worker.
    fn all_reduce(&mut self, values: &mut [f32]) -> Result<()> {
        if let Some(message) = &self.broken {
            return Err(comm_error(message.clone()));
        }
        let call = format!("all_reduce_sum({} values)", values.len());
        let mut scratch = std::mem::take(&mut self.scratch);
        for rank in 1..=self.streams.len() {
            let header = self.receive_header(rank, &call)?;
            let matches = header.kind == KIND_ALL_REDUCE
                && header.count == values.len() as u64
                && header.len == 4 * values.len() as u64;
            self.receive_payload(rank, header.len, &mut scratch, &call)?;
            if !matches {
                let frame = Frame {
                    kind: header.kind,
                    root: header.root,
                    count: header.count,
                    payload: scratch,
                };
                return Err(self.reject(rank, frame, &call));
            }
            for (value, chunk) in values.iter_mut().zip(scratch.chunks_exact(4)) {
                *value += f32::from_le_bytes(chunk.try_into().expect("chunks of 4"));
            }
        }
        self.scratch = scratch;
        let mut reply = std::mem::take(&mut self.reply);
        let payload = frame_into(&mut reply, KIND_REPLY_OK, 0, 0, 4 * values.len());
        for (chunk, value) in payload.chunks_exact_mut(4).zip(values.iter()) {
            chunk.copy_from_slice(&value.to_le_bytes());
        }
        for rank in 1..=self.streams.len() {
            self.send_bytes(rank, &reply, &call)?;
        }
        self.reply = reply;
        Ok(())
    }

    /// The error for a frame from worker `rank` that is not the expected
    /// contribution to `call`; workers are told, so every rank reports it.
    fn reject(&mut self, rank: usize, frame: Frame, call: &str) -> Error {
        let message = match frame.kind {
            KIND_DONE => format!("worker {rank} finished its work while rank 0 was in {call}"),
            KIND_ABORT => {
                format!(
                    "worker {rank} failed: {}",
                    String::from_utf8_lossy(&frame.payload)
                )
            }
            kind => match decode_contribution(frame) {
                Ok(theirs) => format!(
                    "ranks disagree on the collective: rank 0 called {call}, rank {rank} called {}",
                    theirs.describe()
                ),
                Err(_) => {
                    format!("worker {rank} sent an unexpected message (kind {kind}) during {call}")
                }
            },
        };
        self.tell_workers(&message);
        self.fail(message)
    }

    /// Best effort: sends every worker an error reply.
    fn tell_workers(&mut self, message: &str) {
        let reply = Frame {
            kind: KIND_REPLY_ERR,
            root: 0,
            count: 0,
            payload: message.as_bytes().to_vec(),
        };
        for stream in &mut self.streams {
            let _ = write_frame(stream, &reply, &mut || Ok(()));
        }
    }

    fn receive_header(&mut self, rank: usize, call: &str) -> Result<Header> {
        let mut stream = self.stream(rank)?;
        let result = read_header(&mut stream, &mut || self.check_children(call));
        result.map_err(|e| self.lost(rank, call, e))
    }

    fn receive_payload(
        &mut self,
        rank: usize,
        len: u64,
        buffer: &mut Vec<u8>,
        call: &str,
    ) -> Result<()> {
        let mut stream = self.stream(rank)?;
        let result = read_payload(&mut stream, len, buffer, &mut || self.check_children(call));
        result.map_err(|e| self.lost(rank, call, e))
    }

    fn send_bytes(&mut self, rank: usize, bytes: &[u8], call: &str) -> Result<()> {
        let mut stream = self.stream(rank)?;
        let result = write_all(&mut stream, bytes, &mut || self.check_children(call));
        result.map_err(|e| self.lost(rank, call, e))
    }

    /// A handle on worker `rank`'s socket that does not borrow `self`, so the
    /// idle check can look at the other workers while we wait on this one.
    fn stream(&self, rank: usize) -> Result<TcpStream> {
        self.streams[rank - 1]
            .try_clone()
            .map_err(|e| Error::io("cannot clone a socket", e))
    }

    /// Reads worker `rank`'s next frame, checking all workers' health while waiting.
    fn receive(&mut self, rank: usize, call: &str) -> Result<Frame> {
        let mut stream = self.streams[rank - 1]
            .try_clone()
            .map_err(|e| Error::io("cannot clone a socket", e))?;
        let result = read_frame(&mut stream, &mut || self.check_children(call));
        result.map_err(|e| self.lost(rank, call, e))
    }

    fn send(&mut self, rank: usize, frame: &Frame, call: &str) -> Result<()> {
        let mut stream = self.streams[rank - 1]
            .try_clone()
            .map_err(|e| Error::io("cannot clone a socket", e))?;
        let result = write_frame(&mut stream, frame, &mut || self.check_children(call));
        result.map_err(|e| self.lost(rank, call, e))
    }

    /// Fails if any worker has died abnormally (a clean exit is diagnosed
    /// from its stream, which still holds its last message).
    fn check_children(&mut self, call: &str) -> Result<()> {
        for rank in 1..=self.children.len() {
            if let Some(status) = self.exit_status(rank)
                && !status.success()
            {
                let cause = self.abort_message(rank).unwrap_or_else(|| {
                    format!("worker {rank} exited with {}", describe_exit(status))
                });
                return Err(self.fail(format!("{cause} during {call}")));
            }
        }
        Ok(())
    }

    /// Turns a failed read or write on worker `rank` into the clearest error available.
    fn lost(&mut self, rank: usize, call: &str, error: LinkError) -> Error {
        if let LinkError::Fatal(error) = error {
            return error;
        }
        // Give a dying worker a moment to be reaped, to report how it ended.
        let deadline = Instant::now() + self.config.exit_grace.min(Duration::from_secs(3));
        let status = loop {
            match self.exit_status(rank) {
                Some(status) => break Some(status),
                None if Instant::now() >= deadline || self.children.get(rank - 1).is_none() => {
                    break None;
                }
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        let message = match status {
            Some(status) => format!(
                "worker {rank} exited with {} during {call}",
                describe_exit(status)
            ),
            None => format!("connection to worker {rank} lost during {call}: {error}"),
        };
        self.fail(message)
    }

    /// Waits up to `wait` for workers' abort messages and returns the most
    /// telling: the first root cause, else the first abort of any kind.
    fn root_cause(&mut self, wait: Duration) -> Option<String> {
        let deadline = Instant::now() + wait;
        let mut pending: Vec<usize> = (1..=self.streams.len()).collect();
        let mut fallback = None;
        while !pending.is_empty() && Instant::now() < deadline {
            let mut still_pending = Vec::new();
            for rank in pending {
                let Ok(mut stream) = self.streams[rank - 1].try_clone() else {
                    continue;
                };
                // One poll interval per worker and round: `idle` gives up at once.
                match read_frame(&mut stream, &mut || Err(comm_error("nothing yet"))) {
                    Ok(frame) if frame.kind == KIND_ABORT => {
                        let message = format!(
                            "worker {rank} failed: {}",
                            String::from_utf8_lossy(&frame.payload)
                        );
                        if frame.count == 1 {
                            return Some(message);
                        }
                        fallback.get_or_insert(message);
                    }
                    Err(LinkError::Fatal(_)) => still_pending.push(rank),
                    Ok(_) | Err(_) => {}
                }
            }
            pending = still_pending;
        }
        fallback
    }

    /// Reads a pending abort message from a worker that has exited, if it left one.
    fn abort_message(&mut self, rank: usize) -> Option<String> {
        let mut stream = self.streams.get(rank - 1)?.try_clone().ok()?;
        let frame = read_frame(&mut stream, &mut || Err(comm_error("nothing pending"))).ok()?;
        (frame.kind == KIND_ABORT).then(|| {
            format!(
                "worker {rank} failed: {}",
                String::from_utf8_lossy(&frame.payload)
            )
        })
    }

    fn exit_status(&mut self, rank: usize) -> Option<ExitStatus> {
        let child = self.children.get_mut(rank - 1)?.as_mut()?;
        child.try_wait().ok().flatten()
    }

    fn fail(&mut self, message: String) -> Error {
        self.broken = Some(message.clone());
        comm_error(message)
    }

    /// Waits for every worker's final result (acknowledging each), then reaps them.
    fn collect_results(&mut self) -> Result<Vec<Vec<u8>>> {
        if let Some(message) = &self.broken {
            return Err(comm_error(message.clone()));
        }
        let call = "the end of the run";
        let mut results = Vec::with_capacity(self.streams.len());
        for rank in 1..=self.streams.len() {
            let frame = self.receive(rank, call)?;
            match frame.kind {
                KIND_DONE => results.push(frame.payload),
                KIND_ABORT => {
                    let message = format!(
                        "worker {rank} failed: {}",
                        String::from_utf8_lossy(&frame.payload)
                    );
                    return Err(self.fail(message));
                }
                _ => {
                    let what = decode_contribution(frame)
                        .map(|c| c.describe())
                        .unwrap_or_else(|f| format!("kind {}", f.kind));
                    return Err(self.fail(format!(
                        "worker {rank} is still calling {what} after rank 0 finished"
                    )));
                }
            }
        }
        let ack = Frame {
            kind: KIND_REPLY_OK,
            root: 0,
            count: 0,
            payload: Vec::new(),
        };
        for rank in 1..=self.streams.len() {
            self.send(rank, &ack, call)?;
        }
        Ok(results)
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        for stream in &self.streams {
            let _ = stream.shutdown(Shutdown::Both);
        }
        // After a clean finish the workers exit on their own; otherwise stop them now.
        let deadline = Instant::now()
            + if self.finished {
                self.config.exit_grace
            } else {
                Duration::ZERO
            };
        for child in self.children.iter_mut().flatten() {
            loop {
                match child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Ok(None) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
        }
    }
}

/// A worker's side: one stream to rank 0.
struct WorkerLink {
    stream: TcpStream,
    broken: Option<String>,
    /// Reused buffers: the outgoing frame and the reply payload.
    out: Vec<u8>,
    reply: Vec<u8>,
}

impl WorkerLink {
    fn exchange(&mut self, contribution: Contribution, rank: usize) -> Result<Vec<u8>> {
        let call = contribution.describe();
        let frame = encode_contribution(contribution);
        let payload = &frame.payload;
        self.round_trip(
            &frame,
            payload.len(),
            |out| out.copy_from_slice(payload),
            &call,
            rank,
        )?;
        Ok(std::mem::take(&mut self.reply))
    }

    fn all_reduce(&mut self, values: &mut [f32], rank: usize) -> Result<()> {
        let call = format!("all_reduce_sum({} values)", values.len());
        let header = Frame {
            kind: KIND_ALL_REDUCE,
            root: 0,
            count: values.len() as u64,
            payload: Vec::new(),
        };
        self.round_trip(
            &header,
            4 * values.len(),
            |out| {
                for (chunk, value) in out.chunks_exact_mut(4).zip(values.iter()) {
                    chunk.copy_from_slice(&value.to_le_bytes());
                }
            },
            &call,
            rank,
        )?;
        bytes_into_f32s(&self.reply, values)
    }

    /// Sends a frame with `header`'s kind, root and count and a payload of
    /// `len` bytes written by `fill`, then reads the reply into `self.reply`.
    fn round_trip(
        &mut self,
        header: &Frame,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
        call: &str,
        rank: usize,
    ) -> Result<()> {
        if let Some(message) = &self.broken {
            return Err(comm_error(message.clone()));
        }
        fill(frame_into(
            &mut self.out,
            header.kind,
            header.root,
            header.count,
            len,
        ));
        let no_idle = &mut || Ok(());
        let reply = write_all(&mut self.stream, &self.out, no_idle)
            .and_then(|()| read_header(&mut self.stream, no_idle))
            .and_then(|header| {
                read_payload(&mut self.stream, header.len, &mut self.reply, no_idle)?;
                Ok(header.kind)
            });
        let message = match reply {
            Ok(KIND_REPLY_OK) => return Ok(()),
            Ok(KIND_REPLY_ERR) => String::from_utf8_lossy(&self.reply).into_owned(),
            Ok(kind) => format!("worker {rank}: unexpected reply (kind {kind}) to {call}"),
            Err(e) => format!(
                "worker {rank}: connection to rank 0 lost during {call} ({e}); \
                 rank 0 exited or failed"
            ),
        };
        self.broken = Some(message.clone());
        Err(comm_error(message))
    }
}

/// Ends this process if the process `parent` (rank 0) goes away.
fn watch_parent(parent: u32, rank: usize) {
    #[cfg(unix)]
    {
        if std::os::unix::process::parent_id() != parent {
            return; // not spawned directly by rank 0: rely on the socket alone
        }
        let _ = std::thread::Builder::new()
            .name("shoal-parent-watch".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_millis(250));
                    if std::os::unix::process::parent_id() != parent {
                        eprintln!(
                            "shoal worker {rank}: rank 0 (process {parent}) has gone; exiting"
                        );
                        std::process::exit(1);
                    }
                }
            });
    }
    #[cfg(not(unix))]
    let _ = (parent, rank);
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

struct Frame {
    kind: u8,
    root: u32,
    count: u64,
    payload: Vec<u8>,
}

fn encode_contribution(contribution: Contribution) -> Frame {
    let (kind, root, count, payload) = match contribution {
        Contribution::Barrier => (KIND_BARRIER, 0, 0, Vec::new()),
        Contribution::Broadcast { root, len, values } => {
            (KIND_BROADCAST, root, len as u64, f32s_to_bytes(&values))
        }
        Contribution::AllReduce { values } => (
            KIND_ALL_REDUCE,
            0,
            values.len() as u64,
            f32s_to_bytes(&values),
        ),
        Contribution::Gather { root, payload } => (KIND_GATHER, root, 0, payload),
        Contribution::BroadcastBytes { root, bytes } => (KIND_BROADCAST_BYTES, root, 0, bytes),
    };
    Frame {
        kind,
        root: root as u32,
        count,
        payload,
    }
}

/// The contribution a frame carries, or the frame back if it is something else.
fn decode_contribution(frame: Frame) -> std::result::Result<Contribution, Frame> {
    let root = frame.root as usize;
    let floats = |bytes: &[u8]| -> Vec<f32> {
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("chunks of 4")))
            .collect()
    };
    Ok(match frame.kind {
        KIND_BARRIER => Contribution::Barrier,
        KIND_BROADCAST => Contribution::Broadcast {
            root,
            len: frame.count as usize,
            values: floats(&frame.payload),
        },
        KIND_ALL_REDUCE => Contribution::AllReduce {
            values: floats(&frame.payload),
        },
        KIND_GATHER => Contribution::Gather {
            root,
            payload: frame.payload,
        },
        KIND_BROADCAST_BYTES => Contribution::BroadcastBytes {
            root,
            bytes: frame.payload,
        },
        _ => return Err(frame),
    })
}

/// Why a frame could not be moved.
#[derive(Debug)]
enum LinkError {
    /// The peer closed the connection.
    Closed,
    /// The socket failed.
    Io(io::Error),
    /// The idle check found a problem elsewhere (already a finished error).
    Fatal(Error),
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkError::Closed => write!(f, "connection closed"),
            LinkError::Io(e) => write!(f, "{e}"),
            LinkError::Fatal(e) => write!(f, "{e}"),
        }
    }
}

/// Writes a frame; `idle` runs whenever the socket's timeout elapses without progress.
fn write_frame(
    stream: &mut TcpStream,
    frame: &Frame,
    idle: &mut dyn FnMut() -> Result<()>,
) -> std::result::Result<(), LinkError> {
    let mut header = [0u8; HEADER_LEN];
    header[0] = frame.kind;
    header[1..5].copy_from_slice(&frame.root.to_le_bytes());
    header[5..13].copy_from_slice(&frame.count.to_le_bytes());
    header[13..21].copy_from_slice(&(frame.payload.len() as u64).to_le_bytes());
    write_all(stream, &header, idle)?;
    write_all(stream, &frame.payload, idle)
}

fn write_all(
    stream: &mut TcpStream,
    mut bytes: &[u8],
    idle: &mut dyn FnMut() -> Result<()>,
) -> std::result::Result<(), LinkError> {
    while !bytes.is_empty() {
        match stream.write(bytes) {
            Ok(0) => return Err(LinkError::Closed),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if is_timeout(&e) => idle().map_err(LinkError::Fatal)?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(LinkError::Io(e)),
        }
    }
    Ok(())
}

/// The fixed-size start of a frame.
struct Header {
    kind: u8,
    root: u32,
    count: u64,
    /// Payload length in bytes.
    len: u64,
}

/// Reads a frame; `idle` runs whenever the socket's timeout elapses without progress.
fn read_frame(
    stream: &mut TcpStream,
    idle: &mut dyn FnMut() -> Result<()>,
) -> std::result::Result<Frame, LinkError> {
    let header = read_header(stream, idle)?;
    let mut payload = Vec::new();
    read_payload(stream, header.len, &mut payload, idle)?;
    Ok(Frame {
        kind: header.kind,
        root: header.root,
        count: header.count,
        payload,
    })
}

fn read_header(
    stream: &mut TcpStream,
    idle: &mut dyn FnMut() -> Result<()>,
) -> std::result::Result<Header, LinkError> {
    let mut bytes = [0u8; HEADER_LEN];
    read_exact(stream, &mut bytes, idle)?;
    Ok(Header {
        kind: bytes[0],
        root: u32::from_le_bytes(bytes[1..5].try_into().expect("4 bytes")),
        count: u64::from_le_bytes(bytes[5..13].try_into().expect("8 bytes")),
        len: u64::from_le_bytes(bytes[13..21].try_into().expect("8 bytes")),
    })
}

/// Reads a payload of `len` bytes into `buffer`, reusing its allocation.
fn read_payload(
    stream: &mut TcpStream,
    len: u64,
    buffer: &mut Vec<u8>,
    idle: &mut dyn FnMut() -> Result<()>,
) -> std::result::Result<(), LinkError> {
    let len =
        usize::try_from(len).map_err(|_| LinkError::Io(io::Error::other("frame too large")))?;
    buffer.clear();
    buffer.resize(len, 0);
    read_exact(stream, buffer, idle)
}

/// Writes a frame header into `out` (replacing its contents) and returns
/// the `len` payload bytes after it for the caller to fill.
fn frame_into(out: &mut Vec<u8>, kind: u8, root: u32, count: u64, len: usize) -> &mut [u8] {
    out.clear();
    out.resize(HEADER_LEN + len, 0);
    out[0] = kind;
    out[1..5].copy_from_slice(&root.to_le_bytes());
    out[5..13].copy_from_slice(&count.to_le_bytes());
    out[13..21].copy_from_slice(&(len as u64).to_le_bytes());
    &mut out[HEADER_LEN..]
}

fn read_exact(
    stream: &mut TcpStream,
    buffer: &mut [u8],
    idle: &mut dyn FnMut() -> Result<()>,
) -> std::result::Result<(), LinkError> {
    let mut filled = 0;
    while filled < buffer.len() {
        match stream.read(&mut buffer[filled..]) {
            Ok(0) => return Err(LinkError::Closed),
            Ok(n) => filled += n,
            Err(e) if is_timeout(&e) => idle().map_err(LinkError::Fatal)?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(LinkError::Io(e)),
        }
    }
    Ok(())
}

fn is_timeout(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
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

    #[test]
    fn exit_statuses_are_described_plainly() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(describe_exit(ExitStatus::from_raw(9)), "signal 9 (SIGKILL)");
        assert_eq!(describe_exit(ExitStatus::from_raw(3 << 8)), "exit code 3");
    }
}
