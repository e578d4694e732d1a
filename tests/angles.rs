//! The spherical pendulum in spherical angles (identity frame, docs/schemes.md §2):
//! energy error falls as h², and the coordinate singularity at the pole gives
//! an error, never a NaN.

#[macro_use]
mod common;

use hamel::{simulate, StepError};

pendulum!(
    Angles,
    model = "models/spherical_pendulum_angles.hamel",
    kinematics = "midpoint"
);

pendulum!(
    AnglesAveraged,
    model = "models/spherical_pendulum_angles.hamel",
    kinematics = "averaged"
);

#[test]
fn energy_error_falls_as_h_squared() {
    let m = Angles::with_defaults();
    let t_end = 10.0;
    let errs: Vec<f64> = [0.1, 0.01, 0.001]
        .iter()
        .map(|&h| {
            let mut s = m.initial("swing").unwrap();
            let run = simulate(&m, &mut s, h, (t_end / h) as u64, |_| {}).unwrap();
            run.monitor.get("energy").unwrap().max_rel_error
        })
        .collect();
    println!("max relative energy error for h = 0.1, 0.01, 0.001: {errs:?}");
    for w in errs.windows(2) {
        let ratio = w[0] / w[1];
        assert!((80.0..=120.0).contains(&ratio), "ratio {ratio} (h²: 100)");
    }
}

#[test]
fn averaged_kinematics_is_second_order_too() {
    let m = AnglesAveraged::with_defaults();
    let errs: Vec<f64> = [0.02, 0.01]
        .iter()
        .map(|&h| {
            let mut s = m.initial("swing").unwrap();
            let run = simulate(&m, &mut s, h, (10.0 / h) as u64, |_| {}).unwrap();
            run.monitor.get("energy").unwrap().max_rel_error
        })
        .collect();
    let ratio = errs[0] / errs[1];
    println!("averaged, energy error ratio for h 0.02 → 0.01: {ratio:.3}");
    assert!((3.5..=4.5).contains(&ratio), "ratio {ratio}");
}

#[test]
fn a_state_at_the_pole_is_rejected() {
    let m = Angles::with_defaults();
    // At the pole (and within 1e-7 rad of it) the Legendre map cannot be
    // inverted in floating point; the health kernels name the cause.
    for th in [0.0, 1e-7, -1e-8] {
        let e = m.initial_state([th, 0.0], [0.0, 1.0]).unwrap_err();
        assert!(matches!(e, StepError::InvalidInput(_)), "{e}");
        assert!(e.to_string().contains("singular point of the coordinates"), "{e}");
    }
}

#[test]
fn a_run_driven_towards_the_pole_never_yields_nan() {
    // Falling towards the pole with a tiny azimuthal momentum at a coarse step.
    // Whether a step fails depends on round-off (the discrete trajectory is
    // chaotic there), so this asserts what must always hold: every accepted
    // state is finite, and a step that cannot be solved is an error naming
    // step, residual and iterations.
    let m = Angles::with_defaults();
    let mut s = m.initial_state([0.3, 0.0], [-2.0, 1e-3]).unwrap();
    let mut finite = true;
    let res = simulate(&m, &mut s, 0.1, 3000, |st| finite &= st.z.iter().all(|v| v.is_finite()));
    assert!(finite);
    assert!(s.z.iter().all(|v| v.is_finite()), "the state is the last good one");
    match res {
        Err(e) => {
            println!("stopped: {e}");
            let msg = e.to_string();
            assert!(
                msg.contains("step ") && msg.contains("residual norm") && msg.contains("iteration"),
                "{msg}"
            );
        }
        Ok(run) => println!(
            "no failure; energy error {:.2e}",
            run.monitor.get("energy").unwrap().max_rel_error
        ),
    }
}
