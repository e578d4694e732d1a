//! # hamel
//!
//! Structure-preserving integrators for constrained mechanical systems,
//! derived symbolically at compile time from a model file.
//!
//! ```
//! use hamel::Integrator;
//!
//! #[derive(Integrator)]
//! #[hamel(model = "models/spherical_pendulum.hamel", scheme = "hamel", kinematics = "averaged")]
//! pub struct SphericalPendulum { pub m: f64, pub r: f64, pub g: f64 }
//!
//! let model = SphericalPendulum::with_defaults();
//! let mut state = model.initial("published")?;
//! let [e0, ..] = model.invariants(&state)?;
//! let mut stepper = model.stepper(0.2)?;
//! for _ in 0..10_000 {
//!     stepper.step(&mut state)?;
//! }
//! let [energy, ..] = model.invariants(&state)?;
//! assert!(((energy - e0) / e0).abs() < 1e-13);
//! # Ok::<(), hamel::StepError>(())
//! ```
//!
//! With the `load` feature, the module `load` loads and steps model files at run time
//! (JIT or interpreter), bit for bit as the derived code does.
//!
//! See README.md for the model-file language.

#![warn(missing_docs)]

pub use hamel_macros::Integrator;
pub use hamel_runtime as runtime;
pub use hamel_runtime::{
    nalgebra, simulate, simulate_controlled, simulate_with, DynState, DynStepper, InvariantKind, Kernels, Monitor,
    NameList, NewtonMemory, NewtonOptions, NewtonStats, RunSummary, SharedStepper, State, StateOf, StepError,
    StepSystem, Stepper, StepperOf,
};

/// Loading and stepping model files at run time (feature `load`).
#[cfg(feature = "load")]
pub use hamel_load as load;
