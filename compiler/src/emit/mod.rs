//! Back-ends: step systems → code. `rust` knows tapes and Rust tokens only;
//! `integrator` wires a step system's functions to the runtime's traits.
//! `program` is the run-time back-end (a register machine evaluated by tools),
//! and `compiled` gathers a step system's programs for it.

pub mod compiled;
pub mod integrator;
mod persist;
pub mod program;
pub mod rust;
