//! Load and step hamel model files at run time, without compiling Rust.
//!
//! A model file is parsed, lowered and derived with the same compiler the
//! `#[derive(Integrator)]` macro uses; each function of the derived step is
//! lowered to a register program, and the programs are evaluated by one of two
//! back-ends ([`Backend`]): the JIT (native code through cranelift, the
//! default) or the interpreter. Both evaluate the register programs in the
//! order the derived Rust evaluates them, so all three agree to the bit. The
//! runtime's Newton driver steps the result ([`System`] implements
//! [`hamel_runtime::Kernels`]).
//!
//! ```no_run
//! use hamel_load::{compile, read_model, Backend};
//! use hamel_runtime::DynStepper;
//!
//! let model = read_model("models/spherical_pendulum.hamel".as_ref(), &[])?;
//! let sys = compile(&model, "hamel_averaged".parse()?, Backend::Jit)?;
//! let mut state = sys.initial("published")?;
//! let mut stepper = DynStepper::new(&sys, 0.2)?;
//! for _ in 0..10_000 {
//!     stepper.step(&mut state)?;
//! }
//! println!("{:?}", sys.invariants(&state.z, state.step)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod cache;
pub mod ensemble;
pub mod evaluator;
pub mod initial;
pub mod inputs;
mod lu_jit;
pub mod run;
pub mod steps;
pub mod system;
pub mod table;

use std::path::Path;
use std::str::FromStr;

use hamel_compiler::emit::compiled::CompiledStep;
pub use hamel_compiler::scheme::{Scheme, TableauChoice};
pub use hamel_compiler::Model;

pub use cache::Cache;
pub use ensemble::{run_many, Member};
pub use evaluator::{Args, Evaluator, Slot};
pub use initial::{initial, parse_override, Overrides};
pub use inputs::Schedule;
pub use run::{run, Run, RunError, RunFailed, RunOptions};
pub use steps::{step_count, LengthError};
pub use system::System;

/// Largest model file read, in bytes: model files are small text files.
pub const MAX_MODEL_BYTES: u64 = 4 << 20;

/// What evaluates a loaded model's kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// native code compiled when the model is loaded (cranelift)
    #[default]
    Jit,
    /// the register-program interpreter
    Interpreter,
}

impl Backend {
    /// Every back-end.
    pub const ALL: [Backend; 2] = [Backend::Jit, Backend::Interpreter];

    /// The back-end's name on the command line and in summaries.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Jit => "jit",
            Backend::Interpreter => "interpreter",
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = LoadError;
    fn from_str(s: &str) -> Result<Backend, LoadError> {
        Backend::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| LoadError::Usage(format!("unknown back-end `{s}` (available: jit, interpreter)")))
    }
}

/// Why a model could not be loaded or compiled.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// the model file could not be read
    #[error("cannot read model file `{path}`: {reason}")]
    Read {
        /// the path as given
        path: String,
        /// what went wrong
        reason: String,
    },
    /// the model file has errors (located diagnostics, all of them)
    #[error("{0}")]
    Model(String),
    /// the scheme is unknown or does not apply to the model
    #[error("{0}")]
    Scheme(String),
    /// the JIT could not compile the model's kernels
    #[error("{0}")]
    Jit(String),
    /// a bad name or value given by the caller
    #[error("{0}")]
    Usage(String),
    /// the initial state cannot be taken (off the constraints, a singular
    /// observation, non-finite values)
    #[error("{0}")]
    State(hamel_runtime::StepError),
}

impl From<hamel_compiler::scheme::SchemeError> for LoadError {
    fn from(e: hamel_compiler::scheme::SchemeError) -> LoadError {
        LoadError::Scheme(e.0)
    }
}

/// Reads and validates a model file, with sizes of indexed families
/// overridden. A size whose derivation with the default scheme (or the first
/// that applies) is estimated beyond the limit is refused (see
/// [`load_source`]); a host that knows the schemes it will derive reads with
/// [`read_model_for`], which estimates those.
pub fn read_model(path: &Path, sizes: &[(String, i64)]) -> Result<Model, LoadError> {
    read_model_estimated(path, sizes).map(|(m, _)| m)
}

/// [`read_model`], with the estimated derivation time of a size large
/// enough to be measured (`hamel_compiler::cost`), for a host to announce:
/// that of the default scheme, or of the first that applies.
pub fn read_model_estimated(
    path: &Path,
    sizes: &[(String, i64)],
) -> Result<(Model, Option<hamel_compiler::cost::Estimate>), LoadError> {
    let src = read_source(path)?;
    load_source_estimated(&path.display().to_string(), &src, sizes)
}

/// Reads and validates a model file that will be derived with `schemes`
/// (each as many times as it is listed), with sizes of indexed families
/// overridden. Sizes whose derivation of them all is estimated beyond the
/// limit are refused here, at once, with the estimates (see
/// [`check_cost`]); otherwise returns the model and the estimates, one per
/// scheme that was probed (none for small sizes), for a host to announce.
pub fn read_model_for(
    path: &Path,
    sizes: &[(String, i64)],
    schemes: &[Scheme],
    cache: Option<&Cache>,
) -> Result<(Model, Vec<hamel_compiler::cost::Estimate>), LoadError> {
    let src = read_source(path)?;
    load_source_for(&path.display().to_string(), &src, sizes, schemes, cache)
}

/// The text of a model file (at most [`MAX_MODEL_BYTES`]), as the readers
/// above read it; a host that checks the cost of a scheme later
/// ([`check_cost`]) keeps it.
pub fn read_source(path: &Path) -> Result<String, LoadError> {
    table::read_text(path, MAX_MODEL_BYTES).map_err(|reason| LoadError::Read {
        path: path.display().to_string(),
        reason,
    })
}

/// Validates model source text; `name` is how errors refer to it. Sizes
/// whose derivation with the default scheme (or the first that applies) is
/// estimated beyond the limit (`hamel_compiler::cost::check`) are refused
/// here, at once, unless the cache ([`Cache::from_env`]) holds a derivation
/// of the model at them. A host that knows the schemes it will derive loads
/// with [`load_source_for`].
pub fn load_source(name: &str, src: &str, sizes: &[(String, i64)]) -> Result<Model, LoadError> {
    load_source_estimated(name, src, sizes).map(|(m, _)| m)
}

fn load_source_estimated(
    name: &str,
    src: &str,
    sizes: &[(String, i64)],
) -> Result<(Model, Option<hamel_compiler::cost::Estimate>), LoadError> {
    let model = lower(name, src, sizes)?;
    // A model the cache holds at these sizes was derived before: the guard's
    // probe derivations (a tenth of a second and more) would only delay it.
    if Cache::from_env().is_some_and(|c| c.holds(&model)) {
        return Ok((model, None));
    }
    let estimate = hamel_compiler::cost::check(name, src, sizes).map_err(LoadError::Usage)?;
    Ok((model, estimate))
}

/// [`load_source`] for a model that will be derived with `schemes`: the
/// guard of [`check_cost`] on them.
pub fn load_source_for(
    name: &str,
    src: &str,
    sizes: &[(String, i64)],
    schemes: &[Scheme],
    cache: Option<&Cache>,
) -> Result<(Model, Vec<hamel_compiler::cost::Estimate>), LoadError> {
    let model = lower(name, src, sizes)?;
    let estimates = check_cost(name, src, sizes, &model, schemes, cache)?;
    Ok((model, estimates))
}

/// The size guard: refuses, at once, sizes whose derivation of `schemes`
/// (each as many times as listed) for `model` — loaded from `src` at
/// `sizes` — is estimated beyond the limit, all together
/// (`hamel_compiler::cost::check_schemes`: each scheme derived at two small
/// sizes, in the form it takes at these). Schemes whose derivation of
/// `model` `cache` holds are read, not derived, by [`compile_cached`]: they
/// are not probed. Returns the estimates of the others, one per scheme that
/// was probed (none for small sizes, or a scheme that does not apply).
pub fn check_cost(
    name: &str,
    src: &str,
    sizes: &[(String, i64)],
    model: &Model,
    schemes: &[Scheme],
    cache: Option<&Cache>,
) -> Result<Vec<hamel_compiler::cost::Estimate>, LoadError> {
    let derived: Vec<Scheme> = schemes
        .iter()
        .copied()
        .filter(|&s| !cache.is_some_and(|c| c.holds_scheme(model, s)))
        .collect();
    hamel_compiler::cost::check_schemes(name, src, sizes, &derived).map_err(LoadError::Usage)
}

/// Lowers model source text, its errors located.
fn lower(name: &str, src: &str, sizes: &[(String, i64)]) -> Result<Model, LoadError> {
    hamel_compiler::model::load_with_sizes(name, src, sizes)
        .map_err(|d| LoadError::Model(format!("{d}\n{name}: {} error(s)", d.0.len())))
}

/// Derives `scheme` for `model` and prepares it for `backend`.
pub fn compile(model: &Model, scheme: Scheme, backend: Backend) -> Result<System, LoadError> {
    compile_cached(model, scheme, backend, None)
}

/// [`compile`] with the choice of keeping the model's tableau made by the
/// caller instead of by size (for comparing the sparse and dense steps).
pub fn compile_with(
    model: &Model,
    scheme: Scheme,
    backend: Backend,
    tableau: TableauChoice,
) -> Result<System, LoadError> {
    let sys = scheme.derive_with(model, tableau)?;
    let step = CompiledStep::new(&sys).map_err(LoadError::Scheme)?;
    System::new(step, backend)
}

/// [`compile`], reading the derivation and the JIT's machine code from
/// `cache` when it holds them for this model, scheme and build of hamel, and
/// keeping them there when it does not (see [`Cache`]). The system is the
/// same to the bit either way.
pub fn compile_cached(
    model: &Model,
    scheme: Scheme,
    backend: Backend,
    cache: Option<&Cache>,
) -> Result<System, LoadError> {
    let Some(cache) = cache else {
        let sys = scheme.derive(model)?;
        let step = CompiledStep::new(&sys).map_err(LoadError::Scheme)?;
        return System::new(step, backend);
    };
    let entry = cache.entry(model, scheme, false);
    let step = match cache.step(&entry) {
        Some(step) => step,
        None => {
            let sys = scheme.derive(model)?;
            let step = CompiledStep::new(&sys).map_err(LoadError::Scheme)?;
            cache.keep_step(&entry, &step);
            step
        }
    };
    System::new_kept(step, backend, Some((cache, &entry)))
}

/// [`compile`], with the step map's sensitivity `∂z'/∂z` compiled too (for
/// [`hamel_runtime::DynStepper::step_with_sensitivity`]); it costs compile
/// time, so it is compiled only when asked for.
pub fn compile_with_sensitivity(model: &Model, scheme: Scheme, backend: Backend) -> Result<System, LoadError> {
    let mut sys = scheme.derive(model)?;
    sys.add_sensitivity();
    let step = CompiledStep::new(&sys).map_err(LoadError::Scheme)?;
    System::new(step, backend)
}
