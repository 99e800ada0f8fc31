//! The one error type shared by every shoal crate.

use std::path::PathBuf;

/// Shorthand for `std::result::Result<T, shoal_rl_core::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in shoal, as one line a user can act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An action had the wrong number of components.
    #[error("action has {got} components, the action space has {expected}")]
    ActionShape {
        /// Dimension of the action space.
        expected: usize,
        /// Length of the offending action.
        got: usize,
    },
    /// An action component was NaN or infinite.
    #[error("action component {index} is not finite ({value})")]
    NonFiniteAction {
        /// Index of the first bad component.
        index: usize,
        /// The bad value.
        value: f32,
    },
    /// An action component lay outside the space and clipping is off.
    #[error("action component {index} = {value} is outside [{low}, {high}]")]
    ActionOutOfBounds {
        /// Index of the first bad component.
        index: usize,
        /// The bad value.
        value: f32,
        /// Lower bound of that component.
        low: f32,
        /// Upper bound of that component.
        high: f32,
    },
    /// `step` was called before `reset` or after the episode ended.
    #[error("step called on an episode that has ended or was never reset; call reset first")]
    NeedsReset,
    /// A configuration value or key was not acceptable.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A checkpoint or other saved file could not be used.
    #[error("{path}: {reason}")]
    File {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Parameters or states that must agree in shape did not.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// An environment implemented outside shoal (a Python Gymnasium env)
    /// failed; the message is its own.
    #[error("the environment failed: {0}")]
    Env(String),
    /// A worker or communication channel failed.
    #[error("communication failed: {0}")]
    Comm(String),
    /// An operating-system I/O failure.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The run stopped early because a stop was requested (SIGINT, SIGTERM
    /// or a [`StopFlag`](crate::StopFlag)); the message says what was saved
    /// and how to continue.
    #[error("interrupted: {0}")]
    Interrupted(String),
}

impl Error {
    /// Wraps an I/O error with a short description of what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// A problem with a named file.
    pub fn file(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Error::File {
            path: path.into(),
            reason: reason.into(),
        }
    }
}
