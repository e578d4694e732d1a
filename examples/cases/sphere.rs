//! The published spherical-pendulum case (ZLB12 §5): the body-frame model
//! under the discrete Hamel integrator (averaged kinematics), and the
//! Cartesian model under RATTLE and index-reduced Störmer–Verlet, h = 0.2,
//! 10 000 steps from the same physical state. One module for the example
//! that prints and times it (`examples/sphere_comparison.rs`) and the test
//! that checks the README's quotes of it (`tests/readme_sphere_table.rs`).
#![allow(dead_code)] // each includer uses what it needs

use hamel::{simulate, Integrator, State, StepSystem};

#[derive(Integrator)]
#[hamel(model = "models/spherical_pendulum.hamel", scheme = "hamel", kinematics = "averaged")]
pub struct Hamel {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

#[derive(Integrator)]
#[hamel(model = "models/spherical_pendulum_cartesian.hamel", scheme = "stormer_verlet")]
pub struct StormerVerlet {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

#[derive(Integrator)]
#[hamel(model = "models/spherical_pendulum_cartesian.hamel", scheme = "rattle")]
pub struct Rattle {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

pub const H: f64 = 0.2;
pub const STEPS: u64 = 10_000;

/// What one scheme keeps over the run.
pub struct Accuracy {
    /// max |ΔE|
    pub energy_abs: f64,
    /// max |ΔE/E|
    pub energy_rel: f64,
    /// max | ‖γ‖ − 1 | (body frame) or max | ‖x‖ − r | / r (Cartesian)
    pub constraint: f64,
    /// max |ΔJ/J|
    pub momentum_rel: f64,
    /// mean Newton iterations per step
    pub newton: f64,
}

/// Runs one scheme from `start`; `length_scale` turns the `length`
/// invariant into a relative error.
pub fn accuracy<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    start: State<NZ, NX>,
    length_scale: f64,
) -> Result<Accuracy, hamel::StepError> {
    let mut s = start;
    let run = simulate(sys, &mut s, H, STEPS, |_| {})?;
    let m = &run.monitor;
    let get = |n: &str| m.get(n).unwrap_or_else(|| panic!("the model has no `{n}` invariant"));
    let len = get("length");
    Ok(Accuracy {
        energy_abs: get("energy").max_abs_error,
        energy_rel: get("energy").max_rel_error,
        constraint: (len.max - length_scale).abs().max((len.min - length_scale).abs()) / length_scale,
        momentum_rel: get("J").max_rel_error,
        newton: run.newton.mean(),
    })
}
