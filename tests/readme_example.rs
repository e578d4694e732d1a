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
