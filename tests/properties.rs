//! Properties over random physical states (proptest): near the poles, across
//! the equator, at high energy. Each property states the bound it asserts.

#[macro_use]
mod common;

use hamel::{simulate, Stepper};
use proptest::prelude::*;

pendulum!(Body, model = "models/spherical_pendulum.hamel", kinematics = "averaged");

pendulum!(
    Rattle,
    model = "models/spherical_pendulum_cartesian.hamel",
    scheme = "rattle"
);

double_pendulum!(
    Em,
    model = "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "energy_momentum"
);

double_pendulum!(
    Directors,
    model = "models/double_spherical_pendulum.hamel",
    kinematics = "midpoint"
);

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// A unit vector from spherical angles; `polar` near 0 or π is near a pole.
fn unit(polar: f64, azimuth: f64) -> [f64; 3] {
    [polar.sin() * azimuth.cos(), polar.sin() * azimuth.sin(), polar.cos()]
}

/// Polar angles concentrated near the poles and the equator, and anywhere.
fn polar() -> impl Strategy<Value = f64> {
    prop_oneof![
        0.0f64..1e-3,
        (std::f64::consts::PI - 1e-3)..std::f64::consts::PI,
        1.5f64..1.65,
        0.0f64..std::f64::consts::PI
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Body-frame pendulum, averaged kinematics, 200 steps: ‖γ‖ within 1e-13 of 1,
    /// energy and vertical momentum within 1e-12 of their scale.
    #[test]
    fn hamel_conserves_norm_energy_momentum(p in polar(), a in 0.0f64..6.3, w0 in -3.0f64..3.0, w1 in -3.0f64..3.0, h in 0.02f64..0.2) {
        let m = Body::with_defaults();
        let mut s = m.initial_state(unit(p, a), [w0, w1, 0.0]).unwrap();
        let run = simulate(&m, &mut s, h, 200, |_| {}).unwrap();
        let mon = &run.monitor;
        let len = mon.get("length").unwrap();
        let scale = 96.04 * (1.0 + w0 * w0 + w1 * w1);
        prop_assert!((len.max - 1.0).abs() < 1e-13 && (len.min - 1.0).abs() < 1e-13);
        prop_assert!(mon.get("energy").unwrap().max_abs_error < 1e-12 * scale);
        prop_assert!(mon.get("J").unwrap().max_abs_error < 1e-12 * scale);
    }

    /// Symmetric schemes: 50 steps forward then 50 with −h return to the start
    /// (to 1e-10 relative).
    #[test]
    fn symmetric_schemes_are_reversible(p in polar(), a in 0.0f64..6.3, w0 in -2.0f64..2.0, w1 in -2.0f64..2.0, h in 0.01f64..0.1) {
        let m = Body::with_defaults();
        let start = m.initial_state(unit(p, a), [w0, w1, 0.0]).unwrap();
        let mut s = start;
        let mut fwd = Stepper::new(&m, h).unwrap();
        for _ in 0..50 { fwd.step(&mut s).unwrap(); }
        let mut back = Stepper::new(&m, -h).unwrap();
        for _ in 0..50 { back.step(&mut s).unwrap(); }
        prop_assert!((s.z - start.z).amax() < 1e-10 * (1.0 + start.z.amax()));

        let r = Rattle::with_defaults();
        let e = unit(p, a);
        let x = e.map(|c| 9.8 * c);
        let v = cross([w0, w1, 0.3], e).map(|c| 9.8 * c);
        let start = r.initial_state(x, v).unwrap();
        let mut s = start;
        let mut fwd = Stepper::new(&r, h).unwrap();
        for _ in 0..50 { fwd.step(&mut s).unwrap(); }
        let mut back = Stepper::new(&r, -h).unwrap();
        for _ in 0..50 { back.step(&mut s).unwrap(); }
        prop_assert!((s.z - start.z).amax() < 1e-10 * (1.0 + start.z.amax()));
    }

    /// Double pendulum from random states: energy–momentum keeps energy and
    /// momentum to 1e-12 relative of their scale over 100 steps; the director
    /// form keeps ‖e_i‖ = 1 and ⟨w_i, e_i⟩ = 0 to 1e-13.
    #[test]
    fn double_pendulum_invariants(p1 in polar(), a1 in 0.0f64..6.3, p2 in polar(), a2 in 0.0f64..6.3,
                                  w in prop::array::uniform6(-2.0f64..2.0)) {
        let (e1, e2) = (unit(p1, a1), unit(p2, a2));
        let (w1, w2) = (cross([w[0], w[1], w[2]], e1), cross([w[3], w[4], w[5]], e2));
        let d = Directors::with_defaults();
        let mut s = d.initial_state([e1[0], e1[1], e1[2], e2[0], e2[1], e2[2]], [w1[0], w1[1], w1[2], w2[0], w2[1], w2[2]]).unwrap();
        let run = simulate(&d, &mut s, 0.01, 100, |_| {}).unwrap();
        for name in ["length1", "length2"] {
            prop_assert!(run.monitor.get(name).unwrap().max_abs_error < 1e-13);
        }
        for name in ["constraint 1", "constraint 2"] {
            prop_assert!(run.monitor.get(name).unwrap().max_abs_error < 1e-13);
        }

        let em = Em::with_defaults();
        let q1 = e1.map(|c| 4.0 * c);
        let q2: [f64; 3] = std::array::from_fn(|i| q1[i] + 3.0 * e2[i]);
        // bob velocities tangent to the constraints: v1 = l1 w1 × e1, v2 = v1 + l2 w2 × e2
        let v1 = cross(w1, e1).map(|c| 4.0 * c);
        let v2: [f64; 3] = std::array::from_fn(|i| v1[i] + 3.0 * cross(w2, e2)[i]);
        let mut s = em.initial_state([q1[0], q1[1], q1[2], q2[0], q2[1], q2[2]], [v1[0], v1[1], v1[2], v2[0], v2[1], v2[2]]).unwrap();
        let run = simulate(&em, &mut s, 0.01, 100, |_| {}).unwrap();
        let scale = 2.0 * 16.0 * (1.0 + w.iter().map(|x| x * x).sum::<f64>()) + 200.0;
        prop_assert!(run.monitor.get("energy").unwrap().max_abs_error < 1e-12 * scale);
        prop_assert!(run.monitor.get("J").unwrap().max_abs_error < 1e-12 * scale);
    }
}
