//! The hamel compiler: model files → symbolic model → scheme step systems →
//! code. Used by the derive macro, the command line tool and the tests.
//!
//! Pipeline: `dsl` parses, [`model`] lowers to scalar expressions in a
//! [`sym::Graph`], [`scheme`] derives a [`scheme::StepSystem`] for a chosen
//! integrator, and [`emit`] turns a step system into Rust tokens.

#![warn(missing_docs)]

pub mod cost;
mod diagnostic;
mod dsl;
pub mod emit;
pub mod model;
pub mod scheme;
pub mod sym;

pub use diagnostic::{Diagnostic, Diagnostics, Span};
pub use dsl::parser::MAX_EXPR_DEPTH;
pub use emit::compiled::CompiledStep;
pub use model::{load, load_with_sizes, Model};
pub use scheme::{Kinematics, Scheme, SchemeError, StepSystem};
