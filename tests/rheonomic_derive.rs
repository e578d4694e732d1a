//! A rheonomic model derived at compile time: the Kapitza pendulum (its
//! pivot's motion in the Lagrangian) and the bead on a turning wire (a
//! constraint with t), against the same independent references as the
//! run-time back-ends (`load/tests/rheonomic.rs`), and bit for bit with them.

use hamel::{simulate, Integrator, Kernels};

#[derive(Integrator)]
#[hamel(
    simd = false,
    model = "models/gallery/kapitza_pendulum.hamel",
    kinematics = "midpoint"
)]
pub struct Kapitza {
    pub m: f64,
    pub l: f64,
    pub g: f64,
    pub a: f64,
    pub omega: f64,
}

#[derive(Integrator)]
#[hamel(simd = false, model = "models/gallery/rotating_wire.hamel", scheme = "rattle")]
pub struct Wire {
    pub m: f64,
    pub omega: f64,
}

/// θ(1) by classical RK4 of θ̈ = −(g − aω² cos ωt)/l sin θ from θ = 2.9 at rest.
fn kapitza_reference(k: &Kapitza) -> f64 {
    let f = |t: f64, y: [f64; 2]| {
        [
            y[1],
            -(k.g - k.a * k.omega.powi(2) * (k.omega * t).cos()) / k.l * y[0].sin(),
        ]
    };
    let n = 40_000;
    let h = 1.0 / n as f64;
    let mut y = [2.9, 0.0];
    let add = |y: [f64; 2], d: [f64; 2], c: f64| [y[0] + c * d[0], y[1] + c * d[1]];
    for i in 0..n {
        let t = i as f64 * h;
        let k1 = f(t, y);
        let k2 = f(t + h / 2.0, add(y, k1, h / 2.0));
        let k3 = f(t + h / 2.0, add(y, k2, h / 2.0));
        let k4 = f(t + h, add(y, k3, h));
        y = std::array::from_fn(|j| y[j] + h / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]));
    }
    y[0]
}

#[test]
fn the_derived_driven_pendulum_converges_at_order_two_and_balances_its_energy() {
    let k = Kapitza::with_defaults();
    assert_eq!(Kapitza::STATE.last(), Some(&"t"), "the state carries its time");
    let want = kapitza_reference(&k);
    let err: Vec<f64> = [0.002, 0.001]
        .iter()
        .map(|&h| {
            let mut s = k.initial("near_top").unwrap();
            let run = simulate(&k, &mut s, h, (1.0 / h) as u64, |_| {}).unwrap();
            assert!(run.monitor.warnings(&Default::default()).is_empty());
            let b = run.monitor.get("energy balance").unwrap().max_rel_error;
            assert!(b < 2e-3, "balance defect {b:e}");
            assert!(
                (k.time_of(s.z.as_slice()) - 1.0).abs() < 1e-12,
                "time {}",
                k.time_of(s.z.as_slice())
            );
            (k.physical(&s).unwrap().0[0] - want).abs()
        })
        .collect();
    let order = (err[0] / err[1]).log2();
    assert!((order - 2.0).abs() < 0.05 && err[1] < 1e-5, "{err:?}, order {order}");
}

#[test]
fn the_derived_bead_stays_on_the_turning_wire_and_matches_the_loader_bit_for_bit() {
    let w = Wire::with_defaults();
    let mut s = w.initial("sliding_out").unwrap();
    let run = simulate(&w, &mut s, 0.002, 500, |_| {}).unwrap();
    assert!(run.monitor.warnings(&Default::default()).is_empty());
    assert!(run.monitor.get("holonomic 1").unwrap().max_abs_error < 1e-14);
    // r(1) = r₀ cosh ω + (ṙ₀/ω) sinh ω on the wire's direction at t = 1.
    let (q, _) = w.physical(&s).unwrap();
    let r = 0.5 * 2f64.cosh() + 0.05 * 2f64.sinh();
    let e = (q[0] - r * 2f64.cos()).hypot(q[1] - r * 2f64.sin());
    assert!(e < 2e-5, "error {e:e}");
    // The run-time back-end takes the same steps.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/models/gallery/rotating_wire.hamel");
    let m = hamel_load::read_model(path.as_ref(), &[]).unwrap();
    let sys = hamel_load::compile(&m, "rattle".parse().unwrap(), hamel_load::Backend::Interpreter).unwrap();
    let mut d = sys.initial("sliding_out").unwrap();
    let mut stepper = hamel::DynStepper::new(&sys, 0.002).unwrap();
    for _ in 0..500 {
        stepper.step(&mut d).unwrap();
    }
    assert_eq!(d.z.as_slice(), s.z.as_slice());
}
