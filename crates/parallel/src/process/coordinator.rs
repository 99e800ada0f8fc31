//! Rank 0's side of the processes backend ([`Coordinator`]): it accepts the
//! workers' connections, runs every collective round, and watches its
//! children so that a worker that dies, stops or lies is an error within a
//! bounded time.

use std::io::{self, Read};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use shoal_rl_core::{Error, Result};

use super::wire::{
    Deadline, Frame, HEADER_LEN, Header, KIND_ABORT, KIND_ALL_REDUCE, KIND_DONE, KIND_HELLO,
    KIND_REPLY_ERR, KIND_REPLY_OK, KIND_WELCOME, LinkError, MAX_TEXT, PROTOCOL,
    decode_contribution, frame_into, is_timeout, read_header, read_payload, worker_payload_limit,
    write_all, write_frame,
};
use super::{ProcessConfig, describe_exit};
use crate::collective::{Contribution, Outcome, combine};
use crate::comm::{comm_error, f32s_to_bytes, pack_payloads};

/// How long a connection may take to present its handshake before rank 0
/// drops it as a stranger.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(10);
/// Connections waiting to present a handshake; more are dropped at once, so
/// a flood of strangers cannot exhaust rank 0.
const MAX_PENDING: usize = 64;

/// Rank 0's side: one stream and (usually) one child process per worker.
pub(super) struct Coordinator {
    /// Index `rank - 1`.
    streams: Vec<TcpStream>,
    /// Index `rank - 1`; `None` once reaped.
    pub(super) children: Vec<Option<Child>>,
    config: ProcessConfig,
    /// Set after the first failure; every later call repeats it.
    broken: Option<String>,
    /// Whether every worker reported a result (then exiting is expected).
    pub(super) finished: bool,
    /// Reused buffers of the all-reduce fast path.
    scratch: Vec<u8>,
    reply: Vec<u8>,
}

/// A connection that has not yet presented its handshake.
struct Pending {
    stream: TcpStream,
    received: Vec<u8>,
    give_up: Instant,
}

impl Coordinator {
    pub(super) fn new(config: &ProcessConfig) -> Self {
        Coordinator {
            streams: Vec::new(),
            children: Vec::new(),
            config: config.clone(),
            broken: None,
            finished: false,
            scratch: Vec::new(),
            reply: Vec::new(),
        }
    }

    /// Accepts one connection per worker rank. Connections that are not
    /// from this machine, or that do not present this run's token and
    /// protocol within [`HANDSHAKE_WAIT`], are dropped and the run goes on;
    /// the whole wait is bounded by `connect_timeout` on the clock.
    pub(super) fn accept_all(
        &mut self,
        listener: &TcpListener,
        token: u64,
        size: usize,
    ) -> Result<()> {
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("cannot configure the workers' listener", e))?;
        let deadline = Instant::now() + self.config.connect_timeout;
        let mut slots: Vec<Option<TcpStream>> = (1..size).map(|_| None).collect();
        let mut pending: Vec<Pending> = Vec::new();
        while slots.iter().any(Option::is_none) {
            let mut progressed = false;
            match listener.accept() {
                Ok((stream, peer)) => {
                    progressed = true;
                    if peer.ip().is_loopback()
                        && pending.len() < MAX_PENDING
                        && stream.set_nonblocking(true).is_ok()
                    {
                        pending.push(Pending {
                            stream,
                            received: Vec::new(),
                            give_up: Instant::now() + HANDSHAKE_WAIT,
                        });
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io("cannot accept a worker connection", e)),
            }
            let mut still_pending = Vec::new();
            for mut connection in pending.drain(..) {
                match poll_hello(&mut connection, token) {
                    Hello::Waiting if Instant::now() < connection.give_up => {
                        still_pending.push(connection)
                    }
                    Hello::Waiting | Hello::Stranger => progressed = true,
                    Hello::Worker(rank) => {
                        progressed = true;
                        if rank == 0 || rank >= size {
                            return Err(comm_error(format!(
                                "a worker claimed rank {rank} in a world of size {size}"
                            )));
                        }
                        if slots[rank - 1].is_some() {
                            return Err(comm_error(format!("two workers claimed rank {rank}")));
                        }
                        slots[rank - 1] = Some(self.welcome(connection.stream, rank)?);
                    }
                }
            }
            pending = still_pending;
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
            if !progressed {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.streams = slots.into_iter().flatten().collect();
        Ok(())
    }

    /// Configures an accepted worker's socket and answers its handshake.
    fn welcome(&self, stream: TcpStream, rank: usize) -> Result<TcpStream> {
        let configure = |s: &TcpStream| -> io::Result<()> {
            s.set_nonblocking(false)?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(self.config.poll_interval))?;
            s.set_write_timeout(Some(self.config.poll_interval))
        };
        configure(&stream).map_err(|e| Error::io("cannot configure a worker connection", e))?;
        let mut stream = stream;
        let welcome = Frame::new(KIND_WELCOME, Vec::new());
        write_frame(
            &mut stream,
            &welcome,
            Deadline::after(HANDSHAKE_WAIT),
            &mut || Ok(()),
        )
        .map_err(|e| comm_error(format!("handshake with worker {rank} failed: {e}")))?;
        Ok(stream)
    }

    /// When every worker must have answered a collective that starts now.
    fn round_deadline(&self) -> Deadline {
        Deadline::after(self.config.timeout)
    }

    pub(super) fn exchange(&mut self, own: Contribution) -> Result<Outcome> {
        if let Some(message) = &self.broken {
            return Err(comm_error(message.clone()));
        }
        let call = own.describe();
        let deadline = self.round_deadline();
        let mut contributions = vec![own];
        for rank in 1..=self.streams.len() {
            let frame = self.receive(rank, &call, deadline)?;
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
        let shared = Frame::new(KIND_REPLY_OK, shared);
        let packed = Frame::new(KIND_REPLY_OK, packed);
        for rank in 1..=self.streams.len() {
            let reply = match &outcome {
                Outcome::Payloads { root, .. } if *root == rank => &packed,
                _ => &shared,
            };
            self.send(rank, reply, &call, deadline)?;
        }
        Ok(outcome)
    }

    /// All-reduce without the generic round: each worker's payload is added
    /// into `values` straight from a reused buffer, in rank order (the same
    /// order, hence the same bits, as [`combine`]), and one encoded reply is
    /// sent to every worker.
    pub(super) fn all_reduce(&mut self, values: &mut [f32]) -> Result<()> {
        if let Some(message) = &self.broken {
            return Err(comm_error(message.clone()));
        }
        let call = format!("all_reduce_sum({} values)", values.len());
        let deadline = self.round_deadline();
        let mut scratch = std::mem::take(&mut self.scratch);
        for rank in 1..=self.streams.len() {
            let header = self.receive_header(rank, &call, deadline)?;
            let matches = header.kind == KIND_ALL_REDUCE
                && header.count == values.len() as u64
                && header.len == 4 * values.len() as u64;
            self.receive_payload(rank, &header, &mut scratch, &call, deadline)?;
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
                *value += f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            }
        }
        self.scratch = scratch;
        let mut reply = std::mem::take(&mut self.reply);
        let payload = frame_into(&mut reply, KIND_REPLY_OK, 0, 0, 4 * values.len());
        for (chunk, value) in payload.chunks_exact_mut(4).zip(values.iter()) {
            chunk.copy_from_slice(&value.to_le_bytes());
        }
        for rank in 1..=self.streams.len() {
            self.send_bytes(rank, &reply, &call, deadline)?;
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
        let mut text = message.as_bytes().to_vec();
        text.truncate(MAX_TEXT as usize);
        let reply = Frame::new(KIND_REPLY_ERR, text);
        let deadline = Deadline::after(self.config.poll_interval * 10);
        for stream in &mut self.streams {
            let _ = write_frame(stream, &reply, deadline, &mut || Ok(()));
        }
    }

    fn receive_header(&mut self, rank: usize, call: &str, deadline: Deadline) -> Result<Header> {
        let mut stream = self.stream(rank)?;
        let result = read_header(&mut stream, deadline, &mut || self.check_children(call));
        result.map_err(|e| self.lost(rank, call, e))
    }

    /// Reads the payload `header` announces, if worker `rank` may send
    /// such a frame at all.
    fn receive_payload(
        &mut self,
        rank: usize,
        header: &Header,
        buffer: &mut Vec<u8>,
        call: &str,
        deadline: Deadline,
    ) -> Result<()> {
        let limit = worker_payload_limit(header, rank);
        let mut stream = self.stream(rank)?;
        let result = match limit {
            Some(limit) => read_payload(&mut stream, header, limit, buffer, deadline, &mut || {
                self.check_children(call)
            }),
            None => Err(LinkError::Malformed(*header)),
        };
        result.map_err(|e| self.lost(rank, call, e))
    }

    fn send_bytes(
        &mut self,
        rank: usize,
        bytes: &[u8],
        call: &str,
        deadline: Deadline,
    ) -> Result<()> {
        let mut stream = self.stream(rank)?;
        let result = write_all(&mut stream, bytes, deadline, &mut || {
            self.check_children(call)
        });
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
    fn receive(&mut self, rank: usize, call: &str, deadline: Deadline) -> Result<Frame> {
        let header = self.receive_header(rank, call, deadline)?;
        let mut payload = Vec::new();
        self.receive_payload(rank, &header, &mut payload, call, deadline)?;
        Ok(Frame {
            kind: header.kind,
            root: header.root,
            count: header.count,
            payload,
        })
    }

    fn send(&mut self, rank: usize, frame: &Frame, call: &str, deadline: Deadline) -> Result<()> {
        let mut stream = self.stream(rank)?;
        let result = write_frame(&mut stream, frame, deadline, &mut || {
            self.check_children(call)
        });
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
        let message = match error {
            LinkError::Fatal(error) => return error,
            LinkError::Deadline => format!(
                "worker {rank} did not take part in {call} within {:?} (parallel.timeout_s): \
                 it is stopped, deadlocked or far slower than the others",
                self.config.timeout
            ),
            LinkError::Malformed(header) => format!(
                "worker {rank} sent a malformed frame during {call} ({}); is it a shoal worker \
                 of the same version?",
                header.describe()
            ),
            LinkError::Closed | LinkError::Io(_) => {
                // Give a dying worker a moment to be reaped, to report how it ended.
                let deadline = Instant::now() + self.config.exit_grace.min(Duration::from_secs(3));
                let status = loop {
                    match self.exit_status(rank) {
                        Some(status) => break Some(status),
                        None if Instant::now() >= deadline
                            || self.children.get(rank - 1).is_none() =>
                        {
                            break None;
                        }
                        None => std::thread::sleep(Duration::from_millis(10)),
                    }
                };
                match status {
                    Some(status) => format!(
                        "worker {rank} exited with {} during {call}",
                        describe_exit(status)
                    ),
                    None => format!("connection to worker {rank} lost during {call}: {error}"),
                }
            }
        };
        self.tell_workers(&message);
        self.fail(message)
    }

    /// Waits up to `wait` for workers' abort messages and returns the most
    /// telling: the first root cause, else the first abort of any kind.
    pub(super) fn root_cause(&mut self, wait: Duration) -> Option<String> {
        let deadline = Instant::now() + wait;
        let mut pending: Vec<usize> = (1..=self.streams.len()).collect();
        let mut fallback = None;
        while !pending.is_empty() && Instant::now() < deadline {
            let mut still_pending = Vec::new();
            for rank in pending {
                // One poll interval per worker and round: `idle` gives up at once.
                match self.pending_abort(rank) {
                    Ok(Some((message, true))) => return Some(message),
                    Ok(Some((message, false))) => {
                        fallback.get_or_insert(message);
                    }
                    Ok(None) => {}
                    Err(()) => still_pending.push(rank),
                }
            }
            pending = still_pending;
        }
        fallback
    }

    /// Reads a pending abort message from a worker that has exited, if it left one.
    fn abort_message(&mut self, rank: usize) -> Option<String> {
        self.pending_abort(rank).ok().flatten().map(|(m, _)| m)
    }

    /// Worker `rank`'s abort message, if one is waiting on its socket, with
    /// whether it is a root cause. `Err` if nothing has arrived yet.
    fn pending_abort(&mut self, rank: usize) -> std::result::Result<Option<(String, bool)>, ()> {
        let Ok(mut stream) = self.stream(rank) else {
            return Ok(None);
        };
        let nothing_yet = &mut || Err(comm_error("nothing yet"));
        let never = Deadline::after(Duration::MAX);
        let header = match read_header(&mut stream, never, nothing_yet) {
            Ok(header) => header,
            Err(LinkError::Fatal(_)) => return Err(()),
            Err(_) => return Ok(None),
        };
        if header.kind != KIND_ABORT {
            return Ok(None);
        }
        let mut text = Vec::new();
        let wait = Deadline::after(self.config.poll_interval * 10);
        if read_payload(&mut stream, &header, MAX_TEXT, &mut text, wait, &mut || {
            Ok(())
        })
        .is_err()
        {
            return Ok(None);
        }
        let message = format!("worker {rank} failed: {}", String::from_utf8_lossy(&text));
        Ok(Some((message, header.count == 1)))
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
    pub(super) fn collect_results(&mut self) -> Result<Vec<Vec<u8>>> {
        if let Some(message) = &self.broken {
            return Err(comm_error(message.clone()));
        }
        let call = "the end of the run";
        let deadline = self.round_deadline();
        let mut results = Vec::with_capacity(self.streams.len());
        for rank in 1..=self.streams.len() {
            let frame = self.receive(rank, call, deadline)?;
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
        let ack = Frame::new(KIND_REPLY_OK, Vec::new());
        for rank in 1..=self.streams.len() {
            self.send(rank, &ack, call, deadline)?;
        }
        Ok(results)
    }
}

/// What a pending connection has shown of its handshake so far.
enum Hello {
    Waiting,
    /// Closed, or sent something other than this run's hello: dropped.
    Stranger,
    Worker(usize),
}

/// Reads what has arrived of a pending connection's hello without blocking,
/// and judges it as soon as it can: the header's kind, token and length
/// before a byte of payload is accepted.
fn poll_hello(connection: &mut Pending, token: u64) -> Hello {
    let whole = HEADER_LEN + PROTOCOL.len();
    let mut piece = [0u8; 64];
    while connection.received.len() < whole {
        let want = whole - connection.received.len();
        match connection.stream.read(&mut piece[..want]) {
            Ok(0) => return Hello::Stranger,
            Ok(n) => connection.received.extend_from_slice(&piece[..n]),
            Err(e) if is_timeout(&e) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Hello::Stranger,
        }
    }
    if connection.received.len() >= HEADER_LEN {
        let bytes: &[u8; HEADER_LEN] = connection.received[..HEADER_LEN]
            .try_into()
            .expect("a header's worth of bytes");
        let header = Header::parse(bytes);
        if header.kind != KIND_HELLO || header.count != token || header.len != PROTOCOL.len() as u64
        {
            return Hello::Stranger;
        }
        if connection.received.len() == whole {
            return if &connection.received[HEADER_LEN..] == PROTOCOL {
                Hello::Worker(header.root as usize)
            } else {
                Hello::Stranger
            };
        }
    }
    Hello::Waiting
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
