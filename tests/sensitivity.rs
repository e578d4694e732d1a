//! Step-map sensitivities ∂z_{k+1}/∂z_k (docs/schemes.md §6) against central finite
//! differences of the full step (Newton solved to round-off).

#[macro_use]
mod common;

use hamel::nalgebra::SMatrix;
use hamel::{State, StepSystem, Stepper};

pendulum!(
    PendulumAveraged,
    model = "models/spherical_pendulum.hamel",
    kinematics = "averaged",
    sensitivity = true
);

pendulum!(
    PendulumMidpoint,
    model = "models/spherical_pendulum.hamel",
    kinematics = "midpoint",
    sensitivity = true
);

double_pendulum!(
    Dsp,
    model = "models/double_spherical_pendulum.hamel",
    kinematics = "midpoint",
    sensitivity = true
);

/// Worst relative difference between the analytic sensitivity and central differences.
pub fn check<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(sys: &S, start: State<NZ, NX>, h: f64) -> f64 {
    let mut stepper = Stepper::new(sys, h).unwrap();
    let mut s = start;
    let analytic = stepper.step_with_sensitivity(&mut s).unwrap();
    let mut fd = SMatrix::<f64, NZ, NZ>::zeros();
    for c in 0..NZ {
        let d = 1e-6 * (1.0 + start.z[c].abs());
        let (mut p, mut m) = (start, start);
        p.z[c] += d;
        m.z[c] -= d;
        stepper.step(&mut p).unwrap();
        stepper.step(&mut m).unwrap();
        fd.set_column(c, &((p.z - m.z) / (2.0 * d)));
    }
    let scale = analytic.amax().max(1.0);
    (analytic - fd).amax() / scale
}

#[test]
fn hamel_sensitivities_match_finite_differences() {
    let a = PendulumAveraged::with_defaults();
    let m = PendulumMidpoint::with_defaults();
    let ea = check(&a, a.initial("over_equator").unwrap(), 0.2);
    let em = check(&m, m.initial("over_equator").unwrap(), 0.2);
    let d = Dsp::with_defaults();
    let q: [f64; 6] = [0.705, 0.00625, -0.7092, 0.755, 0.0267, -0.6553];
    let nq = |i: usize| (q[3 * i] * q[3 * i] + q[3 * i + 1] * q[3 * i + 1] + q[3 * i + 2] * q[3 * i + 2]).sqrt();
    let (n1, n2) = (nq(0), nq(1));
    let e = [q[0] / n1, q[1] / n1, q[2] / n1, q[3] / n2, q[4] / n2, q[5] / n2];
    // angular velocities orthogonal to the directors
    let w1 = [
        e[1] * 0.3 - e[2] * 0.8,
        e[2] * 0.5 - e[0] * 0.3,
        e[0] * 0.8 - e[1] * 0.5,
    ];
    let w2 = [
        e[4] * 1.1 - e[5] * 0.2,
        e[5] * 0.4 - e[3] * 1.1,
        e[3] * 0.2 - e[4] * 0.4,
    ];
    let ed = check(
        &d,
        d.initial_state(e, [w1[0], w1[1], w1[2], w2[0], w2[1], w2[2]]).unwrap(),
        0.01,
    );
    println!("sensitivity vs FD: pendulum averaged {ea:.2e}, midpoint {em:.2e}, double pendulum midpoint {ed:.2e}");
    assert!(ea < 1e-6 && em < 1e-6 && ed < 1e-6);
}

pendulum!(
    Rattle,
    model = "models/spherical_pendulum_cartesian.hamel",
    scheme = "rattle",
    sensitivity = true
);

pendulum!(
    SvCartesian,
    model = "models/spherical_pendulum_cartesian.hamel",
    scheme = "stormer_verlet",
    sensitivity = true
);

pendulum!(
    SvAngles,
    model = "models/spherical_pendulum_angles.hamel",
    scheme = "stormer_verlet",
    sensitivity = true
);

#[test]
fn stormer_verlet_and_rattle_sensitivities_match_finite_differences() {
    let r = Rattle::with_defaults();
    let s = SvCartesian::with_defaults();
    let a = SvAngles::with_defaults();
    let er = check(&r, r.initial("published").unwrap(), 0.2);
    let es = check(&s, s.initial("published").unwrap(), 0.2);
    let ea = check(&a, a.initial("swing").unwrap(), 0.1);
    println!(
        "sensitivity vs FD: rattle {er:.2e}, stormer_verlet (index-reduced) {es:.2e}, stormer_verlet (angles) {ea:.2e}"
    );
    assert!(er < 1e-6 && es < 1e-6 && ea < 1e-6);
}
