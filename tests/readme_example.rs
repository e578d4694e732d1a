//! The README's Rust example, kept compiling and true.

use hamel::{simulate, Integrator};

#[derive(Integrator)]
#[hamel(model = "models/spherical_pendulum.hamel", scheme = "hamel", kinematics = "averaged")]
pub struct SphericalPendulum {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

#[test]
fn readme_example_runs() -> Result<(), hamel::StepError> {
    let model = SphericalPendulum::with_defaults();
    let mut state = model.initial("published")?;
    let other = model.initial_state([0.3, 0.2, -0.87f64.sqrt()], [0.6, 0.0, 0.0])?;
    assert!((state.z - other.z).amax() < 1e-15);
    let run = simulate(&model, &mut state, 0.2, 10_000, |_state| {})?;
    assert!(run.monitor.get("energy").unwrap().max_rel_error < 1e-13);
    let (q, _xi) = model.physical(&state)?;
    let inv = model.invariants(&state)?;
    assert!((inv[1] - (q[0] * q[0] + q[1] * q[1] + q[2] * q[2]).sqrt()).abs() < 1e-15);
    Ok(())
}

#[derive(Integrator)]
#[hamel(
    model = "models/torque_driven_spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint",
    sensitivity = true
)]
pub struct TorqueDriven {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

/// The README's forces example ("Forces and inputs"), kept compiling and true.
#[test]
fn readme_forces_example_runs() -> Result<(), hamel::StepError> {
    let model = TorqueDriven::with_defaults();
    let mut state = model.initial("published")?;
    let j0 = model.invariants(&state)?[2];
    let mut stepper = model.stepper(0.05)?;
    stepper.set_inputs(&[2.0])?;
    stepper.step(&mut state)?;
    let (a, b) = stepper.step_linearized(&mut state, true)?;
    assert_eq!((a.nrows(), b.nrows(), b.ncols()), (5, 5, 1));
    let run = hamel::simulate_controlled(
        model.stepper(0.05)?,
        &mut state,
        2000,
        |s, u| u[0] = if s.step < 1000 { 2.0 } else { 0.0 },
        |_| {},
    )?;
    // Two steps at τ = 2, then 998 more, then none: J grows by h τ per driven step.
    let j = model.invariants(&state)?[2];
    assert!((j - j0 - 0.05 * 2.0 * 1000.0).abs() < 1e-10, "{j} {j0}");
    assert!(run.monitor.get("energy balance").unwrap().max_rel_error < 1e-13);
    Ok(())
}
