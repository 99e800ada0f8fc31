//! The wire format of the processes backend: frames, their kinds, and reads
//! and writes that are bounded in size and in time.
//!
//! A frame is `[kind u8][root u32][count u64][payload length u64][payload]`,
//! all little endian. Nothing read from a peer is trusted: a payload length
//! is checked against the largest payload its kind may carry *before*
//! anything is allocated, and the buffer then grows only as bytes really
//! arrive, so a lying length prefix costs at most what the liar sends. Every
//! read and write also has a [`Deadline`], checked on the clock at every
//! step, not only when the socket's timeout fires.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use shoal_rl_core::{Error, Result};

use crate::collective::Contribution;
use crate::comm::f32s_to_bytes;

pub(super) const KIND_BARRIER: u8 = 1;
pub(super) const KIND_BROADCAST: u8 = 2;
pub(super) const KIND_ALL_REDUCE: u8 = 3;
pub(super) const KIND_GATHER: u8 = 4;
pub(super) const KIND_BROADCAST_BYTES: u8 = 5;
pub(super) const KIND_DONE: u8 = 6;
pub(super) const KIND_ABORT: u8 = 7;
pub(super) const KIND_REPLY_OK: u8 = 8;
pub(super) const KIND_REPLY_ERR: u8 = 9;
pub(super) const KIND_HELLO: u8 = 10;
pub(super) const KIND_WELCOME: u8 = 11;
pub(super) const HEADER_LEN: usize = 21;
/// Identifies the protocol in the handshake.
pub(super) const PROTOCOL: &[u8] = b"shoal-rl-parallel/1";

/// The largest byte payload any frame may carry: a worker's replay memory
/// gathered for a checkpoint is the largest thing shoal sends.
pub(super) const MAX_PAYLOAD: u64 = 1 << 32;
/// The largest error message (an abort, an error reply).
pub(super) const MAX_TEXT: u64 = 1 << 16;
/// Payloads are read in pieces of at most this size, so memory grows with
/// the bytes received, not with the length a peer announced.
const READ_PIECE: usize = 1 << 20;

/// When a transfer must have finished; `None` waits forever.
#[derive(Clone, Copy, Debug)]
pub(super) struct Deadline(Option<Instant>);

impl Deadline {
    /// `wait` from now (forever if that overflows the clock).
    pub(super) fn after(wait: Duration) -> Self {
        Deadline(Instant::now().checked_add(wait))
    }

    pub(super) fn passed(self) -> bool {
        self.0.is_some_and(|at| Instant::now() >= at)
    }
}

pub(super) struct Frame {
    pub(super) kind: u8,
    pub(super) root: u32,
    pub(super) count: u64,
    pub(super) payload: Vec<u8>,
}

impl Frame {
    /// A frame of `kind` with nothing but a payload.
    pub(super) fn new(kind: u8, payload: Vec<u8>) -> Self {
        Frame {
            kind,
            root: 0,
            count: 0,
            payload,
        }
    }
}

/// The fixed-size start of a frame.
#[derive(Clone, Copy, Debug)]
pub(super) struct Header {
    pub(super) kind: u8,
    pub(super) root: u32,
    pub(super) count: u64,
    /// Payload length in bytes.
    pub(super) len: u64,
}

impl Header {
    pub(super) fn parse(bytes: &[u8; HEADER_LEN]) -> Self {
        let u64_at = |at: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(word)
        };
        Header {
            kind: bytes[0],
            root: u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]),
            count: u64_at(5),
            len: u64_at(13),
        }
    }

    /// "kind 3, 800 bytes": how a rejected frame is described.
    pub(super) fn describe(&self) -> String {
        format!("kind {}, {} payload bytes", self.kind, self.len)
    }
}

/// The largest payload a worker's frame of this header may carry during a
/// collective on rank 0, or `None` if such a frame is malformed whatever the
/// call (a float payload that is not `4 × count`, a non-root rank sending
/// broadcast data, a kind rank 0 never receives). `sender` is the worker's
/// rank.
pub(super) fn worker_payload_limit(header: &Header, sender: usize) -> Option<u64> {
    let from_root = header.root as usize == sender;
    let floats = header.count.checked_mul(4).filter(|b| *b <= MAX_PAYLOAD);
    match header.kind {
        KIND_BARRIER => Some(0),
        KIND_BROADCAST if from_root => floats.filter(|b| *b == header.len),
        KIND_BROADCAST => floats.map(|_| 0),
        KIND_ALL_REDUCE => floats.filter(|b| *b == header.len),
        KIND_GATHER | KIND_DONE => Some(MAX_PAYLOAD),
        KIND_BROADCAST_BYTES if from_root => Some(MAX_PAYLOAD),
        KIND_BROADCAST_BYTES => Some(0),
        KIND_ABORT => Some(MAX_TEXT),
        _ => None,
    }
    .filter(|limit| header.len <= *limit)
}

pub(super) fn encode_contribution(contribution: Contribution) -> Frame {
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

/// The contribution a frame carries, or the frame back if it is something
/// else. Float payloads must hold exactly `count` values (which
/// [`worker_payload_limit`] has checked for frames from workers).
pub(super) fn decode_contribution(frame: Frame) -> std::result::Result<Contribution, Frame> {
    let root = frame.root as usize;
    let floats = |bytes: &[u8]| -> Vec<f32> {
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    let whole_floats = frame.payload.len().is_multiple_of(4);
    Ok(match frame.kind {
        KIND_BARRIER => Contribution::Barrier,
        KIND_BROADCAST if whole_floats => Contribution::Broadcast {
            root,
            len: frame.count as usize,
            values: floats(&frame.payload),
        },
        KIND_ALL_REDUCE if whole_floats && frame.payload.len() as u64 == 4 * frame.count => {
            Contribution::AllReduce {
                values: floats(&frame.payload),
            }
        }
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
pub(super) enum LinkError {
    /// The peer closed the connection.
    Closed,
    /// The socket failed.
    Io(io::Error),
    /// The idle check found a problem elsewhere (already a finished error).
    Fatal(Error),
    /// The deadline passed before the transfer finished.
    Deadline,
    /// The peer announced a frame larger than, or unlike, what it may send here.
    Malformed(Header),
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkError::Closed => write!(f, "connection closed"),
            LinkError::Io(e) => write!(f, "{e}"),
            LinkError::Fatal(e) => write!(f, "{e}"),
            LinkError::Deadline => write!(f, "timed out"),
            LinkError::Malformed(header) => {
                write!(f, "malformed frame ({})", header.describe())
            }
        }
    }
}

pub(super) type LinkResult<T> = std::result::Result<T, LinkError>;

/// The idle check a transfer runs whenever its socket's timeout passes
/// without progress; an error ends the transfer.
pub(super) type Idle<'a> = &'a mut dyn FnMut() -> Result<()>;

/// Writes a frame.
pub(super) fn write_frame(
    stream: &mut TcpStream,
    frame: &Frame,
    deadline: Deadline,
    idle: Idle<'_>,
) -> LinkResult<()> {
    let mut header = [0u8; HEADER_LEN];
    header[0] = frame.kind;
    header[1..5].copy_from_slice(&frame.root.to_le_bytes());
    header[5..13].copy_from_slice(&frame.count.to_le_bytes());
    header[13..21].copy_from_slice(&(frame.payload.len() as u64).to_le_bytes());
    write_all(stream, &header, deadline, idle)?;
    write_all(stream, &frame.payload, deadline, idle)
}

pub(super) fn write_all(
    stream: &mut TcpStream,
    mut bytes: &[u8],
    deadline: Deadline,
    idle: Idle<'_>,
) -> LinkResult<()> {
    while !bytes.is_empty() {
        if deadline.passed() {
            return Err(LinkError::Deadline);
        }
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

pub(super) fn read_header(
    stream: &mut TcpStream,
    deadline: Deadline,
    idle: Idle<'_>,
) -> LinkResult<Header> {
    let mut bytes = [0u8; HEADER_LEN];
    read_exact(stream, &mut bytes, deadline, idle)?;
    Ok(Header::parse(&bytes))
}

/// Reads the payload announced by `header` into `buffer` (reusing its
/// allocation), provided it is at most `limit` bytes: a longer one is
/// [`LinkError::Malformed`] before a byte of it is read.
pub(super) fn read_payload(
    stream: &mut TcpStream,
    header: &Header,
    limit: u64,
    buffer: &mut Vec<u8>,
    deadline: Deadline,
    idle: Idle<'_>,
) -> LinkResult<()> {
    if header.len > limit {
        return Err(LinkError::Malformed(*header));
    }
    let len = usize::try_from(header.len).map_err(|_| LinkError::Malformed(*header))?;
    buffer.clear();
    while buffer.len() < len {
        let start = buffer.len();
        let piece = (len - start).min(READ_PIECE.max(buffer.capacity() - start));
        buffer.resize(start + piece, 0);
        read_exact(stream, &mut buffer[start..], deadline, idle)?;
    }
    Ok(())
}

/// Writes a frame header into `out` (replacing its contents) and returns
/// the `len` payload bytes after it for the caller to fill.
pub(super) fn frame_into(
    out: &mut Vec<u8>,
    kind: u8,
    root: u32,
    count: u64,
    len: usize,
) -> &mut [u8] {
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
    deadline: Deadline,
    idle: Idle<'_>,
) -> LinkResult<()> {
    let mut filled = 0;
    while filled < buffer.len() {
        if deadline.passed() {
            return Err(LinkError::Deadline);
        }
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

pub(super) fn is_timeout(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn header(kind: u8, root: u32, count: u64, len: u64) -> Header {
        Header {
            kind,
            root,
            count,
            len,
        }
    }

    #[test]
    fn header_bytes_parse_little_endian() {
        let mut out = Vec::new();
        frame_into(&mut out, KIND_GATHER, 3, 0x0102_0304_0506_0708, 2);
        let bytes: [u8; HEADER_LEN] = out[..HEADER_LEN].try_into().unwrap();
        let parsed = Header::parse(&bytes);
        assert_eq!(parsed.kind, KIND_GATHER);
        assert_eq!(parsed.root, 3);
        assert_eq!(parsed.count, 0x0102_0304_0506_0708);
        assert_eq!(parsed.len, 2);
        assert_eq!(out[5], 0x08, "count is little endian");
    }

    #[test]
    fn worker_frames_are_bounded_by_what_their_kind_may_carry() {
        // Floats: exactly 4 × count, and only from the root for a broadcast.
        assert_eq!(
            worker_payload_limit(&header(KIND_ALL_REDUCE, 0, 10, 40), 1),
            Some(40)
        );
        assert_eq!(
            worker_payload_limit(&header(KIND_ALL_REDUCE, 0, 10, 41), 1),
            None
        );
        assert_eq!(
            worker_payload_limit(&header(KIND_ALL_REDUCE, 0, u64::MAX / 2, 0), 1),
            None,
            "4 × count overflows the payload limit"
        );
        assert_eq!(
            worker_payload_limit(&header(KIND_BROADCAST, 1, 10, 40), 1),
            Some(40)
        );
        assert_eq!(
            worker_payload_limit(&header(KIND_BROADCAST, 0, 10, 40), 1),
            None,
            "a non-root rank sends no broadcast data"
        );
        assert_eq!(
            worker_payload_limit(&header(KIND_BROADCAST_BYTES, 0, 0, 1), 2),
            None
        );
        // Bytes: up to the protocol's maximum, messages up to MAX_TEXT.
        assert_eq!(
            worker_payload_limit(&header(KIND_GATHER, 0, 0, 1 << 20), 1),
            Some(MAX_PAYLOAD)
        );
        assert_eq!(
            worker_payload_limit(&header(KIND_GATHER, 0, 0, 1 << 62), 1),
            None
        );
        assert_eq!(
            worker_payload_limit(&header(KIND_ABORT, 0, 0, MAX_TEXT + 1), 1),
            None
        );
        assert_eq!(
            worker_payload_limit(&header(KIND_BARRIER, 0, 0, 1), 1),
            None
        );
        // Kinds a worker never sends to rank 0.
        for kind in [
            KIND_REPLY_OK,
            KIND_REPLY_ERR,
            KIND_HELLO,
            KIND_WELCOME,
            0,
            200,
        ] {
            assert_eq!(worker_payload_limit(&header(kind, 0, 0, 0), 1), None);
        }
    }

    #[test]
    fn a_float_frame_with_a_ragged_payload_is_not_a_contribution() {
        let frame = Frame {
            kind: KIND_ALL_REDUCE,
            root: 0,
            count: 2,
            payload: vec![0; 7],
        };
        let back = decode_contribution(frame).expect_err("7 bytes are not 2 floats");
        assert_eq!((back.kind, back.payload.len()), (KIND_ALL_REDUCE, 7));
    }

    /// A connected loopback socket whose peer has sent `bytes` and closed.
    fn stream_of(bytes: &[u8]) -> TcpStream {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (receiver, _) = listener.accept().unwrap();
        sender.write_all(bytes).unwrap();
        drop(sender);
        receiver
    }

    fn soon() -> Deadline {
        Deadline::after(Duration::from_secs(10))
    }

    /// A header written by hand (the oracle for `frame_into`/`write_frame`).
    fn header_bytes(kind: u8, root: u32, count: u64, len: u64) -> Vec<u8> {
        let mut out = vec![kind];
        out.extend(root.to_le_bytes());
        out.extend(count.to_le_bytes());
        out.extend(len.to_le_bytes());
        out
    }

    /// A contribution in a comparable form: floats by their bits, so NaN
    /// payloads compare too.
    #[derive(Debug, PartialEq)]
    enum Plain {
        Barrier,
        Broadcast(usize, usize, Vec<u32>),
        AllReduce(Vec<u32>),
        Gather(usize, Vec<u8>),
        BroadcastBytes(usize, Vec<u8>),
    }

    fn plain(c: &Contribution) -> Plain {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect();
        match c {
            Contribution::Barrier => Plain::Barrier,
            Contribution::Broadcast { root, len, values } => {
                Plain::Broadcast(*root, *len, bits(values))
            }
            Contribution::AllReduce { values } => Plain::AllReduce(bits(values)),
            Contribution::Gather { root, payload } => Plain::Gather(*root, payload.clone()),
            Contribution::BroadcastBytes { root, bytes } => {
                Plain::BroadcastBytes(*root, bytes.clone())
            }
        }
    }

    /// What an honest worker of rank `sender` sends: a broadcast carries
    /// values only from its root (as `ProcessComm::broadcast` sends them).
    fn honest_contribution() -> impl Strategy<Value = (Contribution, usize)> {
        let floats = || prop::collection::vec(any::<u32>().prop_map(f32::from_bits), 0..64);
        let bytes = || prop::collection::vec(any::<u8>(), 0..300);
        let rank = || 0usize..6;
        prop_oneof![
            rank().prop_map(|s| (Contribution::Barrier, s)),
            (rank(), rank(), floats()).prop_map(|(root, sender, values)| {
                let len = values.len();
                let values = if root == sender { values } else { Vec::new() };
                (Contribution::Broadcast { root, len, values }, sender)
            }),
            (rank(), floats()).prop_map(|(s, values)| (Contribution::AllReduce { values }, s)),
            (rank(), rank(), bytes())
                .prop_map(|(root, s, payload)| (Contribution::Gather { root, payload }, s)),
            (rank(), rank(), bytes()).prop_map(|(root, sender, bytes)| {
                let bytes = if root == sender { bytes } else { Vec::new() };
                (Contribution::BroadcastBytes { root, bytes }, sender)
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// `frame_into` writes the header a hand-built one equals, and
        /// `Header::parse` reads every field back.
        #[test]
        fn frame_headers_round_trip(kind: u8, root: u32, count: u64, len in 0usize..2048) {
            let mut out = vec![7u8; 5];
            let payload = frame_into(&mut out, kind, root, count, len);
            prop_assert_eq!(payload.len(), len);
            prop_assert!(payload.iter().all(|b| *b == 0));
            prop_assert_eq!(out.len(), HEADER_LEN + len);
            prop_assert_eq!(&out[..HEADER_LEN], &header_bytes(kind, root, count, len as u64)[..]);
            let parsed = Header::parse(out[..HEADER_LEN].try_into().unwrap());
            prop_assert_eq!(
                (parsed.kind, parsed.root, parsed.count, parsed.len),
                (kind, root, count, len as u64)
            );
        }

        /// Any contribution an honest worker sends crosses a real socket
        /// (`write_frame` → `read_header` → the limit check → `read_payload`
        /// → `decode_contribution`) unchanged.
        #[test]
        fn honest_contributions_round_trip_over_a_socket((sent, sender) in honest_contribution()) {
            let expected = plain(&sent);
            let frame = encode_contribution(sent);
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let mut writer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (mut reader, _) = listener.accept().unwrap();
            write_frame(&mut writer, &frame, soon(), &mut || Ok(())).unwrap();
            let header = read_header(&mut reader, soon(), &mut || Ok(())).unwrap();
            let limit = worker_payload_limit(&header, sender);
            prop_assert!(limit.is_some(), "honest frame refused: {}", header.describe());
            let mut payload = Vec::new();
            read_payload(&mut reader, &header, limit.unwrap(), &mut payload, soon(), &mut || Ok(()))
                .unwrap();
            let back = Frame { kind: header.kind, root: header.root, count: header.count, payload };
            let decoded = decode_contribution(back).map_err(|f| f.kind);
            prop_assert_eq!(decoded.as_ref().map(plain), Ok(expected));
        }

        /// Any header with any payload bytes behind it is refused, or read
        /// to exactly its announced length within its kind's limit; no
        /// buffer ever grows past what the header may carry or past one
        /// read piece beyond the bytes that arrived; decoding never panics.
        #[test]
        fn any_bytes_from_a_worker_are_refused_or_read_within_bounds(
            kind in prop_oneof![1u8..=11, any::<u8>()],
            root in prop_oneof![0u32..4, any::<u32>()],
            count in prop_oneof![0u64..200, any::<u64>()],
            len in prop_oneof![0u64..800, (1u64 << 20)..(1 << 40), any::<u64>()],
            sender in 0usize..4,
            body in prop::collection::vec(any::<u8>(), 0..800),
        ) {
            let mut bytes = header_bytes(kind, root, count, len);
            bytes.extend(&body);
            let mut stream = stream_of(&bytes);
            let header = read_header(&mut stream, soon(), &mut || Ok(())).unwrap();
            prop_assert_eq!((header.kind, header.root, header.count, header.len), (kind, root, count, len));
            let Some(limit) = worker_payload_limit(&header, sender) else {
                return Ok(());
            };
            prop_assert!(len <= limit && limit <= MAX_PAYLOAD);
            if matches!(kind, KIND_ALL_REDUCE) || (kind == KIND_BROADCAST && root as usize == sender) {
                prop_assert_eq!(Some(len), count.checked_mul(4), "float payloads are 4 × count");
            }
            if kind == KIND_BARRIER || (kind == KIND_BROADCAST && root as usize != sender) {
                prop_assert_eq!(len, 0);
            }
            let mut buffer = Vec::new();
            let read = read_payload(&mut stream, &header, limit, &mut buffer, soon(), &mut || Ok(()));
            prop_assert!(buffer.capacity() as u64 <= len.min(READ_PIECE as u64).max(body.len() as u64));
            match read {
                Ok(()) => {
                    prop_assert_eq!(&buffer[..], &body[..len as usize]);
                    let frame = Frame { kind, root, count, payload: buffer };
                    if let Ok(Contribution::AllReduce { values }) = decode_contribution(frame) {
                        prop_assert_eq!(values.len() as u64, count);
                    }
                }
                Err(LinkError::Closed) => prop_assert!((body.len() as u64) < len),
                Err(other) => prop_assert!(false, "unexpected {other}"),
            }
        }

        /// A gather frame may announce up to `MAX_PAYLOAD`; one that
        /// announces more than it sends costs at most one read piece.
        #[test]
        fn a_lying_length_costs_at_most_one_read_piece(
            len in (READ_PIECE as u64 + 1)..(1 << 26),
            body in prop::collection::vec(any::<u8>(), 0..800),
        ) {
            let mut bytes = header_bytes(KIND_GATHER, 0, 0, len);
            bytes.extend(&body);
            let mut stream = stream_of(&bytes);
            let header = read_header(&mut stream, soon(), &mut || Ok(())).unwrap();
            let limit = worker_payload_limit(&header, 1).unwrap();
            let mut buffer = Vec::new();
            let read = read_payload(&mut stream, &header, limit, &mut buffer, soon(), &mut || Ok(()));
            prop_assert!(matches!(read, Err(LinkError::Closed)));
            prop_assert!(buffer.capacity() <= READ_PIECE, "{} bytes reserved", buffer.capacity());
        }

        /// A payload longer than the caller's limit is refused before a byte
        /// of it is read or allocated.
        #[test]
        fn read_payload_refuses_beyond_its_limit(len in 1u64.., limit in 0u64..1 << 20) {
            prop_assume!(len > limit);
            let header = Header { kind: KIND_GATHER, root: 0, count: 0, len };
            let mut stream = stream_of(&[1, 2, 3]);
            let mut buffer = Vec::new();
            let read = read_payload(&mut stream, &header, limit, &mut buffer, soon(), &mut || Ok(()));
            prop_assert!(matches!(read, Err(LinkError::Malformed(h)) if h.len == len));
            prop_assert_eq!(buffer.capacity(), 0);
            let mut rest = [0u8; 3];
            stream.read_exact(&mut rest).unwrap();
            prop_assert_eq!(rest, [1, 2, 3], "nothing was consumed");
        }
    }

    #[test]
    fn deadlines_combine_and_pass() {
        let never = Deadline(None);
        let soon = Deadline::after(Duration::ZERO);
        assert!(!never.passed());
        assert!(soon.passed());
        assert!(Deadline::after(Duration::MAX).0.is_none());
    }
}
