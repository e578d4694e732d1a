//! The `hamel` command's library: run model files without compiling Rust.
//!
//! A model file is parsed, lowered and derived with the same compiler the
//! derive macro uses; the step is compiled to register programs
//! ([`hamel_compiler::emit::program`]) and driven by the runtime's Newton
//! driver ([`tape_system::TapeSystem`]). On top: runs with CSV output and
//! summaries ([`simulate`]), plots ([`plot`]), the rotating-frame analysis of
//! the double spherical pendulum ([`patterns`]) and the report ([`report`]).

#![warn(missing_docs)]

pub mod case;
pub mod doc;
pub mod figures;
pub mod patterns;
pub mod plot;
pub mod report;
pub mod simulate;
pub mod tape_system;

use std::path::Path;

use hamel_compiler::emit::compiled::CompiledStep;
use hamel_compiler::scheme::Scheme;
use hamel_compiler::Model;

pub use tape_system::TapeSystem;

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
}

impl Error {
    /// Maps an I/O error while writing into `place` (a file or folder).
    pub fn writing(place: &Path) -> impl Fn(std::io::Error) -> Error + Copy + '_ {
        move |e| Error::Output(format!("cannot write into `{}`: {e}", place.display()))
    }
}

/// Reads and validates a model file, with sizes of indexed families overridden.
pub fn load_model(path: &Path, sizes: &[(String, i64)]) -> Result<Model, Error> {
    let shown = path.display().to_string();
    let src = std::fs::read_to_string(path).map_err(|e| Error::Read {
        path: shown.clone(),
        reason: e.to_string(),
    })?;
    hamel_compiler::model::load_with_sizes(&shown, &src, sizes)
        .map_err(|d| Error::Model(format!("{d}\n{shown}: {} error(s)", d.0.len())))
}

/// Parses a scheme as written on the command line: `hamel`, `hamel_midpoint`
/// (or `hamel` with `kinematics`), `stormer_verlet`, `rattle`, `energy_momentum`.
pub fn parse_scheme(name: &str, kinematics: Option<&str>) -> Result<Scheme, Error> {
    let (name, kinematics) = match name {
        "hamel_midpoint" => ("hamel", Some(kinematics.unwrap_or("midpoint"))),
        "hamel_averaged" => ("hamel", Some(kinematics.unwrap_or("averaged"))),
        other => (other, kinematics),
    };
    Scheme::from_names(name, kinematics).map_err(|e| Error::Scheme(e.to_string()))
}

/// The short name of a scheme, as accepted by [`parse_scheme`].
pub fn scheme_name(s: Scheme) -> &'static str {
    use hamel_compiler::scheme::Kinematics;
    match s {
        Scheme::Hamel(Kinematics::Averaged) => "hamel",
        Scheme::Hamel(Kinematics::Midpoint) => "hamel_midpoint",
        Scheme::StormerVerlet => "stormer_verlet",
        Scheme::Rattle => "rattle",
        Scheme::EnergyMomentum => "energy_momentum",
    }
}

/// Every scheme, in the order tools list them.
pub fn all_schemes() -> Vec<Scheme> {
    Scheme::ALL
        .iter()
        .map(|(n, k)| Scheme::from_names(n, *k).expect("known scheme"))
        .collect()
}

/// Derives `scheme` for `model` and compiles it for the run-time back-end.
pub fn compile(model: &Model, scheme: Scheme) -> Result<TapeSystem, Error> {
    let sys = scheme.derive(model).map_err(|e| Error::Scheme(e.to_string()))?;
    let step = CompiledStep::new(&sys).map_err(Error::Scheme)?;
    Ok(TapeSystem::new(step))
}
