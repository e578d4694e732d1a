//! Back-ends: step systems → code. `rust` knows tapes and Rust tokens only;
//! `integrator` wires a step system's functions to the runtime's traits.

pub mod integrator;
pub mod rust;
