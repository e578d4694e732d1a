//! `order = 4` in the derive attribute: the derived step composed with the
//! triple jump reaches order 4 against an independent reference, and agrees
//! with the run-time back-end's composed step to the bit.

use hamel::{simulate, Integrator};

#[derive(Integrator)]
#[hamel(
    simd = false,
    model = "models/chaplygin_sleigh.hamel",
    kinematics = "midpoint",
    order = 4
)]
pub struct Sleigh {
    pub m: f64,
    pub a: f64,
    pub inertia: f64,
}

/// Chaplygin sleigh: `u̇ = a ω²`, `(I + m a²) ω̇ = −m a u ω`,
/// `(ẋ, ẏ, θ̇) = (u cos θ, u sin θ, ω)`; classical RK4 with a small step.
fn reference(t_end: f64) -> [f64; 3] {
    let (m, a, i) = (1.0, 0.5, 0.2);
    let f = |y: &[f64; 5]| {
        let (th, u, om) = (y[2], y[3], y[4]);
        [
            u * th.cos(),
            u * th.sin(),
            om,
            a * om * om,
            -m * a * u * om / (i + m * a * a),
        ]
    };
    let n = 20_000;
    let h = t_end / n as f64;
    let mut y = [0.0, 0.0, 0.0, 1.0, 1.0];
    let add = |y: &[f64; 5], k: &[f64; 5], c: f64| std::array::from_fn::<f64, 5, _>(|j| y[j] + c * k[j]);
    for _ in 0..n {
        let k1 = f(&y);
        let k2 = f(&add(&y, &k1, h / 2.0));
        let k3 = f(&add(&y, &k2, h / 2.0));
        let k4 = f(&add(&y, &k3, h));
        y = std::array::from_fn(|j| y[j] + h / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]));
    }
    [y[0], y[1], y[2]]
}

#[test]
fn derived_order_four_reaches_order_four_and_matches_the_jit() {
    let model = Sleigh::with_defaults();
    assert_eq!(hamel::runtime::Kernels::order(&model), 4);
    let t_end = 2.0;
    let exact = reference(t_end);
    let hs = [0.1, 0.05, 0.025];
    let mut errors = vec![];
    for h in hs {
        let mut state = model.initial("push").unwrap();
        let run = simulate(&model, &mut state, h, (t_end / h).round() as u64, |_| {}).unwrap();
        assert!(run.monitor.get("energy").unwrap().max_rel_error < 1e-13, "energy kept");
        let (q, _) = model.physical(&state).unwrap();
        errors.push(q.iter().zip(&exact).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max));
    }
    let p: Vec<f64> = errors.windows(2).map(|e| (e[0] / e[1]).log2()).collect();
    eprintln!("derived sleigh, order 4: errors {errors:?}, observed orders {p:?}");
    assert!((p[1] - 4.0).abs() < 0.1, "{p:?}");

    // The same composed step through the JIT: the same bits.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/models/chaplygin_sleigh.hamel");
    let m = hamel_load::read_model(path.as_ref(), &[]).unwrap();
    let mut sys = hamel_load::compile(&m, "hamel_midpoint".parse().unwrap(), hamel_load::Backend::Jit).unwrap();
    sys.set_order(4).unwrap();
    let mut jit_state = sys.initial("push").unwrap();
    let mut stepper = hamel::runtime::DynStepper::new(&sys, 0.05).unwrap();
    let mut state = model.initial("push").unwrap();
    let mut derived = model.stepper(0.05).unwrap();
    for _ in 0..40 {
        stepper.step(&mut jit_state).unwrap();
        derived.step(&mut state).unwrap();
    }
    assert_eq!(state.z.as_slice(), jit_state.z.as_slice());
}
