//! Newton's method with the analytic Jacobian, for every generated step.
//!
//! Stopping rule (Hairer–Wanner): with the contraction estimate
//! `θ = ‖Δx_j‖/‖Δx_{j−1}‖`, stop when `θ/(1−θ) ‖Δx_j‖ ≤ ε ‖x‖`, when the update
//! is exactly zero, or when it stops decreasing at the round-off floor. A plain
//! `‖Δx‖ ≤ c ε ‖x‖` test sits below the floor of `Δx` and wastes iterations.
//!
//! The parts, each tested on its own:
//!
//! - `options`: what a host sets ([`NewtonOptions`]) and reads back ([`NewtonStats`]);
//! - `predictor`: the predictor's error, extrapolated from the last steps'
//!   (kept in [`NewtonMemory`], a module of its own since the state carries it);
//! - `linear_prediction`: the wide systems' fitted recurrence of those errors;
//! - `stopping`: the stopping rules (contraction, stall, first iteration,
//!   round-off, chord), as pure functions of update norms;
//! - `chord`: the cost model that decides on chord iterations;
//! - `iterate`: the loop that applies them;
//! - `step`: the workspace, a solve, and a whole step ([`advance`]).

mod chord;
mod iterate;
mod linear_prediction;
mod options;
mod predictor;
mod step;
mod stopping;
#[cfg(test)]
mod tests;

pub use options::{NewtonOptions, NewtonStats};
pub(crate) use predictor::CUBIC_MIN;
#[cfg(test)]
pub use step::solve;
pub use step::{advance, StepParts, Workspace};
pub(crate) use step::{advance_once, IN_REGISTERS};
