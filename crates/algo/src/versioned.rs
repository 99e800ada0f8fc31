//! The one header every saved buffer starts with: a magic tag, a format version and the shape it was written for.
//!
//! A checkpoint may come from another task, another build or a disk that
//! cut it short; reading it must then be a clear [`Error`], never a panic or
//! a buffer of the wrong shape. Both [`crate::ReplayBuffer`] and
//! [`crate::TransitionBuffer`] write `magic ‖ version ‖ dims ‖ body`
//! (postcard) through [`Format`] and check it the same way.

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result};

/// A versioned byte format: its name in errors, first bytes and version.
pub(crate) struct Format {
    /// What the bytes hold, as errors name it ("replay buffer").
    pub(crate) name: &'static str,
    /// First bytes of the encoding.
    pub(crate) magic: [u8; 8],
    /// Bumped whenever the layout after the header changes.
    pub(crate) version: u32,
}

#[derive(Serialize, Deserialize)]
struct Header<D> {
    magic: [u8; 8],
    version: u32,
    dims: D,
}

impl Format {
    /// The header for `dims`, then `body`.
    pub(crate) fn write<D: Serialize, B: Serialize + ?Sized>(&self, dims: &D, body: &B) -> Vec<u8> {
        let header = Header {
            magic: self.magic,
            version: self.version,
            dims,
        };
        let mut bytes = postcard::to_stdvec(&header).expect("serialising a header cannot fail");
        bytes.extend(postcard::to_stdvec(body).expect("serialising plain vectors cannot fail"));
        bytes
    }

    /// Checks the header (this format, this version, exactly `dims`) and
    /// decodes the body after it; returns the body and the bytes that follow.
    pub(crate) fn read<'a, D, B>(&self, bytes: &'a [u8], dims: &D) -> Result<(B, &'a [u8])>
    where
        D: DeserializeOwned + PartialEq + Debug,
        B: DeserializeOwned,
    {
        let (_, body, rest) = self.read_since(self.version, bytes, dims)?;
        Ok((body, rest))
    }

    /// [`Format::read`] for a format that still reads its versions from
    /// `oldest` on: returns the version found too, so the caller decodes
    /// what follows the body as that version wrote it.
    pub(crate) fn read_since<'a, D, B>(
        &self,
        oldest: u32,
        bytes: &'a [u8],
        dims: &D,
    ) -> Result<(u32, B, &'a [u8])>
    where
        D: DeserializeOwned + PartialEq + Debug,
        B: DeserializeOwned,
    {
        let (header, rest): (Header<D>, &[u8]) =
            postcard::take_from_bytes(bytes).map_err(|_| self.unreadable("no valid header"))?;
        if header.magic != self.magic {
            return Err(self.unreadable(&format!("not a shoal {}", self.name)));
        }
        if !(oldest..=self.version).contains(&header.version) {
            return Err(Error::Shape(format!(
                "{} has format version {}, this build reads version {}",
                self.name,
                header.version,
                if oldest == self.version {
                    self.version.to_string()
                } else {
                    format!("{oldest} to {}", self.version)
                }
            )));
        }
        if header.dims != *dims {
            return Err(Error::Shape(format!(
                "{} holds {:?}, this agent needs {dims:?}",
                self.name, header.dims
            )));
        }
        let (body, rest) =
            postcard::take_from_bytes(rest).map_err(|e| self.unreadable(&e.to_string()))?;
        Ok((header.version, body, rest))
    }

    /// The error for bytes that do not decode, saying `why`.
    pub(crate) fn unreadable(&self, why: &str) -> Error {
        Error::Shape(format!("{} is unreadable: {why}", self.name))
    }
}

/// Decodes a learner state written as one postcard struct that carries its
/// layout version (DDPG's and HAC's, older than [`Format`]), and checks that
/// the version is one of `versions` (the caller upgrades older ones);
/// `name` ("DDPG state") names it in errors.
pub(crate) fn read_state<T: DeserializeOwned>(
    name: &str,
    bytes: &[u8],
    versions: std::ops::RangeInclusive<u32>,
    version_of: impl Fn(&T) -> u32,
) -> Result<T> {
    let state: T = postcard::from_bytes(bytes)
        .map_err(|e| Error::Shape(format!("{name} is unreadable: {e}")))?;
    let found = version_of(&state);
    if !versions.contains(&found) {
        let reads = match versions.start() == versions.end() {
            true => format!("version {}", versions.end()),
            false => format!("versions {} to {}", versions.start(), versions.end()),
        };
        return Err(Error::Shape(format!(
            "{name} has version {found}, this build reads {reads}"
        )));
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORMAT: Format = Format {
        name: "test buffer",
        magic: *b"shoalTT\0",
        version: 3,
    };

    /// The layout buffers had when each wrote its own header struct: a
    /// checkpoint written then must still read.
    #[derive(Serialize)]
    struct OldHeader {
        magic: [u8; 8],
        version: u32,
        dims: (u8, u8),
        episodes: u64,
        transitions: u64,
    }

    #[test]
    fn header_and_body_lay_out_as_one_flat_struct() {
        let old = OldHeader {
            magic: FORMAT.magic,
            version: 3,
            dims: (2, 5),
            episodes: 7,
            transitions: 70,
        };
        let bytes = FORMAT.write(&(2u8, 5u8), &(7u64, 70u64));
        assert_eq!(bytes, postcard::to_stdvec(&old).unwrap());
        let (body, rest): ((u64, u64), _) = FORMAT.read(&bytes, &(2u8, 5u8)).unwrap();
        assert_eq!((body, rest.len()), ((7, 70), 0));
    }

    #[test]
    fn other_formats_versions_and_shapes_are_named_errors() {
        let bytes = FORMAT.write(&(2u8, 5u8), &1u64);
        let read = |bytes: &[u8], dims: (u8, u8)| {
            FORMAT
                .read::<(u8, u8), u64>(bytes, &dims)
                .unwrap_err()
                .to_string()
        };
        let mut other = bytes.clone();
        other[0] = b'x';
        assert!(read(&other, (2, 5)).contains("not a shoal test buffer"));
        let mut newer = bytes.clone();
        newer[8] = 4;
        assert!(read(&newer, (2, 5)).contains("format version 4, this build reads version 3"));
        assert!(read(&bytes, (2, 6)).contains("holds (2, 5), this agent needs (2, 6)"));
        assert!(read(&bytes[..3], (2, 5)).contains("no valid header"));
        assert!(read(&bytes[..bytes.len() - 1], (2, 5)).contains("test buffer is unreadable"));
    }

    #[test]
    fn a_learner_state_of_another_version_or_cut_short_is_a_named_error() {
        #[derive(Serialize, Deserialize, Debug, PartialEq)]
        struct State {
            version: u32,
            steps: Vec<u64>,
        }
        let read = |bytes: &[u8]| read_state("toy state", bytes, 2..=2, |s: &State| s.version);
        let current = postcard::to_stdvec(&State {
            version: 2,
            steps: vec![3, 4],
        })
        .unwrap();
        assert_eq!(
            read(&current).unwrap(),
            State {
                version: 2,
                steps: vec![3, 4]
            }
        );
        let older = postcard::to_stdvec(&State {
            version: 1,
            steps: vec![3],
        })
        .unwrap();
        assert_eq!(
            read(&older).unwrap_err().to_string(),
            Error::Shape("toy state has version 1, this build reads version 2".into()).to_string()
        );
        let cut = read(&current[..current.len() - 1]).unwrap_err().to_string();
        assert!(cut.contains("toy state is unreadable: "), "{cut}");
        let span = |bytes: &[u8]| read_state("toy state", bytes, 2..=3, |s: &State| s.version);
        assert!(span(&current).is_ok());
        assert_eq!(
            span(&older).unwrap_err().to_string(),
            Error::Shape("toy state has version 1, this build reads versions 2 to 3".into())
                .to_string()
        );
    }
}
