//! Runtime of hamel-generated integrators: the traits generated code
//! implements, one Newton driver for every scheme, states, and diagnostics.

#![warn(missing_docs)]

// The rooms a user or a host names by path: composition coefficients,
// control design, the diagnosis of a state's health kernels, the
// instruction-set ceiling, the LU generated code calls, what a back-end
// lends the LU to compile its steps, the native kernels of run-time
// back-ends, and the run loop's building blocks. Everything else is reached
// through the curated `pub use` list below.
pub mod columns;
pub mod compose;
pub mod control;
pub mod diagnosis;
pub mod isa;
pub mod lu;
pub mod lu_code;
pub mod native;
pub mod run;

mod error;
mod kernels;
mod linearize;
mod memory;
mod monitor;
mod newton;
mod packed_band;
mod shared;
mod sparse_band;
mod state;
mod system;

pub use error::StepError;
pub use kernels::{Alloc, InvariantKind, Kernels, NameList};
pub use memory::NewtonMemory;
pub use monitor::{Conditioning, Health, InvariantReport, Monitor};
pub use newton::{NewtonOptions, NewtonStats};
pub use run::{drive, simulate, simulate_controlled, simulate_with, Ended, Host, RunSummary};
pub use shared::SharedStepper;
pub use state::{DynState, State, StateOf};
pub use system::{DynStepper, Linearization, OwnedStepper, StepSystem, Stepper, StepperOf};

/// The evaluation core: register programs and their interpreter.
pub use hamel_kernel as kernel;
/// Double-double numbers (compensated runs), from the evaluation core.
pub use hamel_kernel::dd;

/// Re-export so that generated code and users name one nalgebra version.
pub use nalgebra;
