//! # hamel
//!
//! Structure-preserving integrators for constrained mechanical systems,
//! derived symbolically at compile time from a model file.
//!
//! ```ignore
//! #[derive(hamel::Integrator)]
//! #[hamel(model = "models/spherical_pendulum.hamel", scheme = "hamel", kinematics = "averaged")]
//! pub struct SphericalPendulum { pub m: f64, pub r: f64, pub g: f64 }
//!
//! let model = SphericalPendulum::with_defaults();
//! let mut state = model.initial("published").unwrap();
//! let mut stepper = model.stepper(0.2)?;
//! for _ in 0..10_000 { stepper.step(&mut state)?; }
//! println!("{:?}", model.invariants(&state)?);
//! ```
//!
//! See README.md for the model-file language.

#![warn(missing_docs)]

pub use hamel_macros::Integrator;
pub use hamel_runtime as runtime;
pub use hamel_runtime::{
    nalgebra, simulate, simulate_with, InvariantKind, Monitor, NewtonOptions, RunSummary, State, StepError, StepSystem,
    Stepper,
};
