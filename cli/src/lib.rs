//! The `hamel` command's library: run model files without compiling Rust.
//!
//! Model files are loaded and stepped by the run-time back-ends of
//! [`hamel_load`] (JIT or interpreter, chosen with `--backend`). On top: runs with CSV output and
//! summaries ([`simulate`]), plots ([`plot`]), the rotating-frame analysis of
//! the double spherical pendulum ([`patterns`]) and the report ([`report`]).

#![warn(missing_docs)]

pub mod case;
pub mod doc;
pub mod figures;
pub mod gallery;
pub mod interrupt;
pub mod output;
pub mod patterns;
pub mod plot;
pub mod report;
pub mod report_forces;
pub mod simulate;

use std::path::Path;

use hamel_compiler::scheme::Scheme;
use hamel_compiler::Model;
use hamel_load::LoadError;

pub use hamel_load::{Backend, System};

/// A number as the user reads it back in headers and messages: as `{}`
/// prints it, except extreme magnitudes (`1e-300`, `1e300`), which `{}`
/// would spell out in hundreds of digits.
pub fn num(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-5..1e15).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// What can go wrong in a command; each variant is printed as a message and
/// ends the command with a non-zero exit code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// the model file could not be read
    #[error("cannot read model file `{path}`: {reason}")]
    Read {
        /// the path as given
        path: String,
        /// the OS error
        reason: String,
    },
    /// the model file has errors (located diagnostics, all of them)
    #[error("{0}")]
    Model(String),
    /// the scheme is unknown or does not apply to the model
    #[error("{0}")]
    Scheme(String),
    /// a step or an observation failed
    #[error("{0}")]
    Step(#[from] hamel_runtime::StepError),
    /// a step failed during a run; what was computed until then is kept
    #[error("{error}")]
    RunFailed {
        /// why the step failed (step number, residual norm, iterations)
        error: hamel_runtime::StepError,
        /// the run up to the last good state
        partial: Box<simulate::Run>,
    },
    /// bad command-line input
    #[error("{0}")]
    Usage(String),
    /// writing output failed
    #[error("{0}")]
    Output(String),
    /// the run finished but is not trustworthy (non-finite values, an energy
    /// or constraint error beyond bounds); its outputs were written
    #[error("{0}")]
    Untrustworthy(String),
    /// the run was stopped by Ctrl-C; what it computed was written (exit
    /// code 130, as for a process a shell's Ctrl-C ends)
    #[error("{0}")]
    Interrupted(String),
    /// standard output was closed by its reader (e.g. `| head`): the command
    /// stops quietly
    #[error("standard output closed")]
    ClosedOutput,
}

/// Writes one line to standard output. A reader that went away (a closed
/// pipe) ends the command quietly ([`Error::ClosedOutput`]); any other failure
/// (a full disk) is an error, never a panic.
pub fn write_line(args: std::fmt::Arguments<'_>) -> Result<(), Error> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => Error::ClosedOutput,
            _ => Error::Output(format!("cannot write to standard output: {e}")),
        })
}

/// `println!` that returns [`Error`] instead of panicking (see [`write_line`]).
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {
        $crate::write_line(format_args!($($t)*))?
    };
}

impl From<LoadError> for Error {
    fn from(e: LoadError) -> Error {
        match e {
            LoadError::Read { path, reason } => Error::Read { path, reason },
            LoadError::Model(m) => Error::Model(m),
            LoadError::Scheme(m) | LoadError::Jit(m) => Error::Scheme(m),
            LoadError::Usage(m) => Error::Usage(m),
            LoadError::State(e) => Error::Step(e),
        }
    }
}

impl Error {
    /// Maps an I/O error while writing into `place` (a file or folder).
    pub fn writing(place: &Path) -> impl Fn(std::io::Error) -> Error + Copy + '_ {
        move |e| Error::Output(format!("cannot write into `{}`: {e}", place.display()))
    }
}

/// Reads and validates a model file, with sizes of indexed families
/// overridden; a size whose derivation with the default scheme (or the
/// first that applies) is estimated beyond the limit is refused (see
/// [`load_model_for`], which commands use: they know their schemes).
pub fn load_model(path: &Path, sizes: &[(String, i64)]) -> Result<Model, Error> {
    estimating(path, sizes, Some(""), || {
        hamel_load::read_model_estimated(path, sizes).map(|(m, e)| (m, e.into_iter().collect()))
    })
}

/// [`load_model`] for a command that will derive the model with `schemes`
/// (each as many times as listed; `check` derives every scheme): a size
/// whose derivation of them all is estimated beyond the limit is refused at
/// once, with the estimates, and a long one is announced with them (see
/// [`derivation_note`]). Schemes whose derivation the cache holds are not
/// estimated: they are read, not derived.
pub fn load_model_for(path: &Path, sizes: &[(String, i64)], schemes: &[Scheme]) -> Result<Model, Error> {
    let names: Vec<&str> = schemes.iter().map(|s| s.name()).collect();
    let which = match names[..] {
        [] => None,
        _ if schemes == Scheme::LIST => Some(" with every scheme that applies".to_string()),
        _ => Some(format!(" with {}", names.join(", "))),
    };
    estimating(path, sizes, which.as_deref(), || {
        hamel_load::read_model_for(path, sizes, schemes, cache())
    })
}

/// Reads a model with `read`, which probes the cost of deriving it `which`
/// way at a large size (`None`: it probes nothing); says so while it does,
/// and announces a long derivation.
fn estimating(
    path: &Path,
    sizes: &[(String, i64)],
    which: Option<&str>,
    read: impl FnOnce() -> Result<(Model, Vec<hamel_compiler::cost::Estimate>), hamel_load::LoadError>,
) -> Result<Model, Error> {
    use hamel_compiler::cost::PROBE_ABOVE;
    use std::sync::atomic::Ordering::Relaxed;
    // A size above the probe threshold is first derived at small sizes to
    // estimate the cost: seconds on an idle machine, longer on a busy one,
    // so that wait reports itself as the derivation does.
    let probed = sizes.iter().filter(|(_, v)| *v > PROBE_ABOVE).max_by_key(|(_, v)| *v);
    let (model, estimates) = match which.zip(probed) {
        Some((which, (name, value))) => {
            ANNOUNCED.store(true, Relaxed);
            let what = format!(
                "estimating the cost of deriving {}{which} at {name} = {value} (deriving it at {name} = {}, {PROBE_ABOVE}, … first)",
                path.display(),
                PROBE_ABOVE / 2
            );
            let read = with_status(&what, read);
            ANNOUNCED.store(false, Relaxed);
            read?
        }
        None => read()?,
    };
    // A long derivation says so before it starts.
    if hamel_compiler::cost::total_seconds(&estimates) > 5.0 {
        eprintln!("{}", derivation_note(&model.name, &estimates));
        ANNOUNCED.store(true, Relaxed);
    }
    Ok(model)
}

/// The note printed before a long derivation: the estimate of each scheme
/// that will be derived and, where there are several, of them all (empty
/// for none).
pub fn derivation_note(model: &str, estimates: &[hamel_compiler::cost::Estimate]) -> String {
    use hamel_compiler::cost::{human_duration, total_seconds};
    match estimates {
        [] => String::new(),
        [e] => format!("note: deriving `{model}` takes {e}"),
        [first, ..] => {
            let (n, v) = &first.size;
            let each: Vec<String> = estimates.iter().map(|e| format!("  {e}")).collect();
            format!(
                "note: deriving `{model}` takes about {} at {n} = {v} for {} schemes:\n{}",
                human_duration(total_seconds(estimates)),
                estimates.len(),
                each.join("\n")
            )
        }
    }
}

/// Parses a scheme as written on the command line: `hamel`, `hamel_midpoint`
/// (or `hamel` with `kinematics`), `stormer_verlet`, `rattle`, `energy_momentum`.
pub fn parse_scheme(name: &str, kinematics: Option<&str>) -> Result<Scheme, Error> {
    Scheme::from_names(name, kinematics).map_err(|e| Error::Usage(e.to_string()))
}

/// The short name of a scheme, as accepted by [`parse_scheme`].
pub fn scheme_name(s: Scheme) -> &'static str {
    s.name()
}

/// Every scheme, in the order tools list them.
pub fn all_schemes() -> Vec<Scheme> {
    Scheme::LIST.to_vec()
}

/// Derives `scheme` for `model` and prepares it for `backend`.
pub fn compile(model: &Model, scheme: Scheme, backend: Backend) -> Result<System, Error> {
    let what = format!(
        "deriving {} for `{}` ({} coordinates, {} velocities) and compiling it ({backend})",
        scheme.name(),
        model.name,
        model.coords.len(),
        model.vels.len()
    );
    Ok(with_status(&what, || {
        hamel_load::compile_cached(model, scheme, backend, cache())
    })?)
}

static CACHE: std::sync::OnceLock<Option<hamel_load::Cache>> = std::sync::OnceLock::new();

/// Makes [`compile`] keep derivations and machine code in `cache` (`None`:
/// derive and compile every time). Only the first call counts; without one,
/// the cache is [`hamel_load::Cache::from_env`].
pub fn use_cache(cache: Option<hamel_load::Cache>) {
    let _ = CACHE.set(cache);
}

fn cache() -> Option<&'static hamel_load::Cache> {
    CACHE.get_or_init(hamel_load::Cache::from_env).as_ref()
}

/// Whether a long derivation was announced ([`load_model_for`]'s note),
/// or its cost is being measured:
/// then its progress is reported even where standard error is no terminal,
/// since a script's log would otherwise show minutes of silence after it.
static ANNOUNCED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Runs `f`; if it takes longer than two seconds, says what is going on, and
/// then how long it took (large models take minutes to derive). On standard
/// error, where that is a terminal or a long derivation was announced.
pub fn with_status<T>(what: &str, f: impl FnOnce() -> T) -> T {
    use std::io::IsTerminal;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    if !std::io::stderr().is_terminal() && !ANNOUNCED.load(std::sync::atomic::Ordering::Relaxed) {
        return f();
    }
    let started = Instant::now();
    let (done, wait) = mpsc::channel::<()>();
    let what = what.to_string();
    let watcher = std::thread::spawn(move || {
        if wait.recv_timeout(Duration::from_secs(2)).is_err() {
            eprintln!("{what}…");
            let _ = wait.recv();
            eprintln!("  done in {:.1} s", started.elapsed().as_secs_f64());
        }
    });
    let out = f();
    let _ = done.send(());
    let _ = watcher.join();
    out
}

#[cfg(test)]
mod note_tests {
    use super::*;

    #[test]
    fn the_derivation_note_gives_the_time_of_every_scheme_derived() {
        // `check --size N=40` on the chain announced 58 s "per scheme" and then
        // derived two schemes (hostile campaign); the note now quotes each
        // scheme's own estimate, and their sum.
        use hamel_compiler::scheme::Kinematics;
        let e = |scheme, tableau, seconds| hamel_compiler::cost::Estimate {
            scheme,
            tableau,
            size: ("N".into(), 40),
            probes: [(8, 0.4), (16, 3.4)],
            exponent: 3.1,
            seconds,
        };
        let midpoint = e(Scheme::DEFAULT, true, 20.0);
        let averaged = e(Scheme::Hamel(Kinematics::Averaged), false, 58.0);
        assert_eq!(
            derivation_note("spherical_chain", &[midpoint.clone(), averaged.clone()]),
            format!("note: deriving `spherical_chain` takes about 78 s at N = 40 for 2 schemes:\n  {midpoint}\n  {averaged}")
        );
        assert_eq!(
            derivation_note("spherical_chain", std::slice::from_ref(&averaged)),
            format!("note: deriving `spherical_chain` takes {averaged}")
        );
        assert!(averaged
            .to_string()
            .starts_with("about 58 s at N = 40 for hamel_averaged (measured"));
    }
}
