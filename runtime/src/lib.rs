//! Runtime of hamel-generated integrators: the traits generated code
//! implements, one Newton driver for every scheme, states, and diagnostics.

#![warn(missing_docs)]
// Index loops mirror the indices of the equations they implement.
#![allow(clippy::needless_range_loop)]

pub mod dd;
pub mod dynamic;
pub mod error;
pub mod lu;
pub mod monitor;
pub mod newton;
pub mod run;
pub mod system;

pub use dynamic::{DynState, DynStepper};
pub use error::StepError;
pub use monitor::{InvariantReport, Monitor};
pub use newton::{NewtonOptions, NewtonStats, StepEquations};
pub use run::{simulate, simulate_with, RunSummary};
pub use system::{InvariantKind, State, StepSystem, Stepper};

/// Re-export so that generated code and users name one nalgebra version.
pub use nalgebra;
