//! A worker's side of the processes backend ([`WorkerLink`]): it connects to
//! rank 0, presents the run's token, and sends its contributions; it gives
//! up when rank 0 goes silent for longer than the run's timeout, and it
//! never believes a reply larger than the call it made can produce.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use shoal_rl_core::{Error, Result};

use super::wire::{
    Deadline, Frame, KIND_ALL_REDUCE, KIND_DONE, KIND_HELLO, KIND_REPLY_ERR, KIND_REPLY_OK,
    KIND_WELCOME, LinkError, MAX_PAYLOAD, MAX_TEXT, PROTOCOL, encode_contribution, frame_into,
    read_header, read_payload, write_all, write_frame,
};
use crate::collective::Contribution;
use crate::comm::{bytes_into_f32s, comm_error};

/// A worker's side: one stream to rank 0.
pub(super) struct WorkerLink {
    stream: TcpStream,
    pub(super) broken: Option<String>,
    /// How long to wait for rank 0 inside one call.
    timeout: Duration,
    /// Reused buffers: the outgoing frame and the reply payload.
    out: Vec<u8>,
    reply: Vec<u8>,
}

impl WorkerLink {
    /// Connects worker `rank` to rank 0 at `address` (retrying until
    /// `connect_timeout`), presents `token` and waits for the welcome.
    pub(super) fn connect(
        address: SocketAddr,
        rank: usize,
        token: u64,
        connect_timeout: Duration,
        poll_interval: Duration,
        timeout: Duration,
    ) -> Result<WorkerLink> {
        let deadline = Deadline::after(connect_timeout);
        let mut stream = loop {
            match TcpStream::connect_timeout(&address, poll_interval.max(Duration::from_secs(1))) {
                Ok(stream) => break stream,
                Err(e) if deadline.passed() => {
                    return Err(Error::io(
                        format!("worker {rank} cannot reach rank 0 at {address}"),
                        e,
                    ));
                }
                Err(_) => std::thread::sleep(poll_interval),
            }
        };
        let configure = |s: &TcpStream| -> std::io::Result<()> {
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(poll_interval))?;
            s.set_write_timeout(Some(poll_interval))
        };
        configure(&stream).map_err(|e| Error::io("cannot configure the socket", e))?;
        let handshake_failed =
            |e: LinkError| comm_error(format!("worker {rank}: handshake with rank 0 failed: {e}"));
        let hello = Frame {
            kind: KIND_HELLO,
            root: rank as u32,
            count: token,
            payload: PROTOCOL.to_vec(),
        };
        write_frame(&mut stream, &hello, deadline, &mut || Ok(())).map_err(handshake_failed)?;
        let header =
            read_header(&mut stream, deadline, &mut || Ok(())).map_err(handshake_failed)?;
        match (header.kind, header.len) {
            (KIND_WELCOME, 0) => {}
            (KIND_REPLY_ERR, len) if len <= MAX_TEXT => {
                let mut text = Vec::new();
                read_payload(
                    &mut stream,
                    &header,
                    MAX_TEXT,
                    &mut text,
                    deadline,
                    &mut || Ok(()),
                )
                .map_err(handshake_failed)?;
                return Err(comm_error(String::from_utf8_lossy(&text).into_owned()));
            }
            _ => {
                return Err(comm_error(format!(
                    "worker {rank}: rank 0 at {address} answered the handshake with a \
                     malformed frame ({}); is another program listening there?",
                    header.describe()
                )));
            }
        }
        Ok(WorkerLink {
            stream,
            broken: None,
            timeout,
            out: Vec::new(),
            reply: Vec::new(),
        })
    }

    pub(super) fn exchange(&mut self, contribution: Contribution, rank: usize) -> Result<Vec<u8>> {
        let call = contribution.describe();
        let reply_limit = match &contribution {
            Contribution::Barrier => 0,
            Contribution::Broadcast { len, .. } => 4 * *len as u64,
            Contribution::AllReduce { values } => 4 * values.len() as u64,
            Contribution::Gather { root, .. } if *root == rank => MAX_PAYLOAD,
            Contribution::Gather { .. } => 0,
            Contribution::BroadcastBytes { .. } => MAX_PAYLOAD,
        };
        let frame = encode_contribution(contribution);
        let payload = &frame.payload;
        self.round_trip(
            &frame,
            payload.len(),
            |out| out.copy_from_slice(payload),
            reply_limit,
            &call,
            rank,
        )?;
        Ok(std::mem::take(&mut self.reply))
    }

    pub(super) fn all_reduce(&mut self, values: &mut [f32], rank: usize) -> Result<()> {
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
            4 * values.len() as u64,
            &call,
            rank,
        )?;
        bytes_into_f32s(&self.reply, values)
    }

    /// Sends this worker's result and waits for rank 0's acknowledgement.
    pub(super) fn finish(&mut self, result: Vec<u8>, rank: usize) -> Result<()> {
        let call = "the end of the run";
        let done = Frame::new(KIND_DONE, Vec::new());
        self.round_trip(
            &done,
            result.len(),
            |out| out.copy_from_slice(&result),
            0,
            call,
            rank,
        )
    }

    /// Sends a frame with `header`'s kind, root and count and a payload of
    /// `len` bytes written by `fill`, then reads the reply into `self.reply`:
    /// an acknowledgement of at most `reply_limit` bytes, or an error.
    fn round_trip(
        &mut self,
        header: &Frame,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
        reply_limit: u64,
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
        let deadline = Deadline::after(self.timeout);
        let no_idle = &mut || Ok(());
        let reply = write_all(&mut self.stream, &self.out, deadline, no_idle)
            .and_then(|()| read_header(&mut self.stream, deadline, no_idle))
            .and_then(|header| {
                let limit = match header.kind {
                    KIND_REPLY_OK => reply_limit,
                    KIND_REPLY_ERR => MAX_TEXT,
                    _ => return Err(LinkError::Malformed(header)),
                };
                read_payload(
                    &mut self.stream,
                    &header,
                    limit,
                    &mut self.reply,
                    deadline,
                    no_idle,
                )?;
                Ok(header.kind)
            });
        let message = match reply {
            Ok(KIND_REPLY_OK) => return Ok(()),
            Ok(_) => String::from_utf8_lossy(&self.reply).into_owned(),
            Err(LinkError::Deadline) => format!(
                "worker {rank}: rank 0 did not answer {call} within {:?} \
                 (parallel.timeout_s); it is stopped, deadlocked or gone; giving up",
                self.timeout
            ),
            Err(LinkError::Malformed(header)) => format!(
                "worker {rank}: rank 0 sent a malformed reply to {call} ({})",
                header.describe()
            ),
            Err(e) => format!(
                "worker {rank}: connection to rank 0 lost during {call} ({e}); \
                 rank 0 exited or failed"
            ),
        };
        self.broken = Some(message.clone());
        Err(comm_error(message))
    }

    /// Tells rank 0 that this worker failed (best effort) and closes the link.
    pub(super) fn abort(&mut self, message: &str, root_cause: bool) {
        self.broken = Some(format!("this worker aborted: {message}"));
        let mut text = message.as_bytes().to_vec();
        text.truncate(MAX_TEXT as usize);
        let frame = Frame {
            count: u64::from(root_cause),
            ..Frame::new(super::wire::KIND_ABORT, text)
        };
        let deadline = Deadline::after(Duration::from_secs(2));
        let _ = write_frame(&mut self.stream, &frame, deadline, &mut || Ok(()));
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// Ends this process if the process `parent` (rank 0) goes away.
pub(super) fn watch_parent(parent: u32, rank: usize) {
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
