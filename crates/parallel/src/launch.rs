//! Choosing a backend by name ([`Backend`]) and running a body on it
//! ([`launch`]): the entry points a binary such as the `shoal` CLI calls.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use shoal_rl_core::{Error, Result};

use crate::comm::{Communicator, check_workers};
use crate::process::{ProcessConfig, launch_processes};
use crate::threads::run_threads;

/// Where the ranks of a run live.
///
/// Parsed from `threads`, `processes` or `mpi` (case-insensitive):
///
/// ```
/// use shoal_rl_parallel::Backend;
/// assert_eq!("processes".parse::<Backend>().unwrap(), Backend::Processes);
/// let err = "gpu".parse::<Backend>().unwrap_err().to_string();
/// assert!(err.contains("threads, processes, mpi"), "{err}");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum Backend {
    /// One thread per rank in this process ([`run_threads`]).
    #[default]
    Threads,
    /// One process per rank; rank 0 spawns the others from the current
    /// executable ([`ProcessComm`](crate::ProcessComm)).
    Processes,
    /// One MPI rank per process, started by `mpirun` (cargo feature `mpi`).
    Mpi,
}

impl Backend {
    /// Every backend, in the order they are listed to users.
    pub const ALL: [Backend; 3] = [Backend::Threads, Backend::Processes, Backend::Mpi];

    /// The name used on command lines and in configs.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Threads => "threads",
            Backend::Processes => "processes",
            Backend::Mpi => "mpi",
        }
    }

    /// Whether this build can run the backend (`mpi` needs the `mpi` feature).
    pub fn is_available(self) -> bool {
        match self {
            Backend::Threads | Backend::Processes => true,
            Backend::Mpi => cfg!(feature = "mpi"),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Config files name backends as [`FromStr`] does, with its error message.
impl TryFrom<String> for Backend {
    type Error = Error;

    fn try_from(name: String) -> Result<Self> {
        name.parse()
    }
}

impl FromStr for Backend {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        let wanted = name.trim().to_ascii_lowercase();
        Backend::ALL
            .into_iter()
            .find(|b| b.name() == wanted)
            .ok_or_else(|| {
                let choices: Vec<&str> = Backend::ALL.iter().map(|b| b.name()).collect();
                Error::Config(format!(
                    "unknown backend {name:?}; choose one of: {}",
                    choices.join(", ")
                ))
            })
    }
}

/// Runs `body` on `workers` ranks of `backend` and returns rank 0's result:
/// `Ok(Some(result))` in the process that hosts rank 0, `Ok(None)` in a
/// process that hosts another rank (a spawned worker, or an MPI rank > 0),
/// which should then exit quietly.
///
/// * [`Backend::Threads`]: all ranks run here; always `Some`.
/// * [`Backend::Processes`]: the first process spawns `workers - 1` copies of
///   the current executable **with the same command-line arguments**; in each
///   copy, the same call to `launch` sees the worker environment
///   ([`is_worker_process`](crate::is_worker_process)), connects to rank 0 and
///   runs `body` as its rank.
/// * [`Backend::Mpi`]: ranks come from `mpirun -n N`; `workers` must equal
///   `N`. A rank whose `body` fails prints the error and aborts the MPI job
///   (MPI cannot otherwise release ranks blocked in a collective). Needs the
///   `mpi` cargo feature; without it this is an [`Error::Config`].
///
/// `workers == 0` or above [`MAX_WORKERS`](crate::MAX_WORKERS) is an
/// [`Error::Config`]. Call `launch` once per process:
/// a spawned worker serves exactly one run.
///
/// # In a binary
///
/// Everything `main` does before `launch` runs in every process, so keep it
/// free of side effects (parse arguments and configs, but create run
/// directories, print and write files only on rank 0: inside `body` when
/// `comm.is_root()`, or after `launch` returns `Some`):
///
/// ```no_run
/// use shoal_rl_parallel::{Backend, Communicator, launch};
///
/// fn main() -> Result<(), shoal_rl_core::Error> {
///     let backend: Backend = std::env::args().nth(1).unwrap_or("threads".into()).parse()?;
///     let outcome = launch(backend, 2, |comm: &dyn Communicator| {
///         let mut x = [comm.rank() as f32];
///         comm.all_reduce_sum(&mut x)?;
///         Ok(x[0])
///     })?;
///     if let Some(sum) = outcome {
///         println!("sum of ranks: {sum}"); // printed once, by rank 0
///     }
///     Ok(())
/// }
/// ```
pub fn launch<T, F>(backend: Backend, workers: usize, body: F) -> Result<Option<T>>
where
    T: Send,
    F: Fn(&dyn Communicator) -> Result<T> + Sync,
{
    launch_with(backend, workers, &ProcessConfig::default(), body)
}

/// [`launch`] with the processes backend set up by `processes` (its
/// [`timeout`](ProcessConfig::timeout) above all); the other backends
/// ignore it.
pub fn launch_with<T, F>(
    backend: Backend,
    workers: usize,
    processes: &ProcessConfig,
    body: F,
) -> Result<Option<T>>
where
    T: Send,
    F: Fn(&dyn Communicator) -> Result<T> + Sync,
{
    check_workers(workers)?;
    match backend {
        Backend::Threads => Ok(run_threads(workers, body)?.into_iter().next()),
        Backend::Processes => launch_processes(workers, processes, body),
        Backend::Mpi => launch_mpi(workers, body),
    }
}

#[cfg(feature = "mpi")]
fn launch_mpi<T, F>(workers: usize, body: F) -> Result<Option<T>>
where
    F: Fn(&dyn Communicator) -> Result<T>,
{
    let comm = crate::mpi_backend::MpiComm::init()?;
    if comm.size() != workers {
        return Err(Error::Config(format!(
            "{workers} workers were requested but mpirun started {} ranks; \
             pass the same number to both",
            comm.size()
        )));
    }
    match body(&comm) {
        Ok(value) => Ok(comm.is_root().then_some(value)),
        Err(error) if comm.size() > 1 => {
            // One write for the whole line: `eprintln!` writes the error's
            // parts one by one to unbuffered stderr, and mpirun forwards each
            // write as it comes, so its abort notice could land mid-line.
            let line = format!("error (rank {}): {error}\n", comm.rank());
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
            comm.abort(1)
        }
        Err(error) => Err(error),
    }
}

#[cfg(not(feature = "mpi"))]
fn launch_mpi<T, F>(_workers: usize, _body: F) -> Result<Option<T>>
where
    F: Fn(&dyn Communicator) -> Result<T>,
{
    Err(Error::Config(
        "backend \"mpi\" is not available: build shoal with `--features mpi` (needs OpenMPI: \
         apt-get install -y libopenmpi-dev openmpi-bin libclang-dev pkg-config) and start it \
         with mpirun"
            .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_round_trip() {
        for backend in Backend::ALL {
            assert_eq!(backend.name().parse::<Backend>().unwrap(), backend);
            assert_eq!(backend.to_string(), backend.name());
        }
        assert_eq!(" Threads ".parse::<Backend>().unwrap(), Backend::Threads);
    }

    #[test]
    fn unknown_backend_lists_the_choices() {
        let err = "gpu".parse::<Backend>().unwrap_err();
        let Error::Config(message) = err else {
            panic!("not a config error: {err}")
        };
        assert!(message.contains("\"gpu\""), "{message}");
        assert!(message.contains("threads, processes, mpi"), "{message}");
    }

    #[test]
    fn zero_workers_is_an_error_on_every_backend() {
        for backend in Backend::ALL {
            let err = launch(backend, 0, |_: &dyn Communicator| Ok(())).unwrap_err();
            assert!(matches!(err, Error::Config(_)), "{backend}: {err}");
        }
    }

    #[test]
    fn threads_launch_returns_rank_zeros_result() {
        let result = launch(Backend::Threads, 3, |comm: &dyn Communicator| {
            Ok(comm.rank() + 10)
        });
        assert_eq!(result.unwrap(), Some(10));
    }

    #[cfg(not(feature = "mpi"))]
    #[test]
    fn mpi_without_the_feature_explains_how_to_enable_it() {
        let err = launch(Backend::Mpi, 1, |_: &dyn Communicator| Ok(())).unwrap_err();
        assert!(err.to_string().contains("--features mpi"), "{err}");
    }
}
