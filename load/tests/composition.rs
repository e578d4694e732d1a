//! Orders four and six: every symmetric scheme composed with the triple jump
//! (order 4) and Kahan–Li's nine stages (order 6) reaches its order on a
//! chain, a nonholonomic model and a model forced in time, on both run-time
//! back-ends; keeps what its base scheme keeps; and its linearization is the
//! chain rule of its sub-steps'.
//!
//! References are independent of hamel: classical RK4 at a small step on
//! equations of motion derived by hand in this file.

mod driven;
mod rk4;
use driven::{duffing_reference, lqr_follows_design, pendulum_reference, rk4};
use hamel_load::{compile, compile_with_sensitivity, load_source, read_model, run, Backend, Model, RunOptions, System};
use hamel_runtime::nalgebra::{DMatrix, DVector};
use hamel_runtime::DynStepper;

fn model_path(name: &str) -> std::path::PathBuf {
    format!("{}/../models/{name}.hamel", env!("CARGO_MANIFEST_DIR")).into()
}

fn system(model: &Model, scheme: &str, backend: Backend, order: u32) -> System {
    let mut sys = compile(model, scheme.parse().unwrap(), backend).unwrap();
    sys.set_order(order).unwrap();
    sys
}

/// The physical coordinates after `steps` steps of size `h` from `init`,
/// and the largest error of each monitored quantity over the run.
fn final_q(sys: &System, init: &str, h: f64, steps: u64) -> (Vec<f64>, Vec<(String, f64)>) {
    let opt = RunOptions {
        h,
        steps,
        compensated: false,
        record_every: steps,
        inputs: None,
        newton: Default::default(),
    };
    let r = run(sys, sys.initial(init).unwrap(), None, &opt).unwrap();
    let errors = r
        .invariants
        .iter()
        .zip(r.monitor.reports())
        .map(|((n, _), rep)| (n.clone(), rep.max_abs_error))
        .collect();
    (r.q.last().unwrap().clone(), errors)
}

fn sci(v: &[f64]) -> String {
    let parts: Vec<String> = v.iter().map(|x| format!("{x:.3e}")).collect();
    format!("[{}]", parts.join(", "))
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

/// Errors at `T` and observed orders `log(e_i/e_{i+1}) / log(h_i/h_{i+1})`.
fn orders(
    sys: &System,
    init: &str,
    t_end: f64,
    hs: &[f64],
    observe: &dyn Fn(&[f64]) -> Vec<f64>,
    reference: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let errors: Vec<f64> = hs
        .iter()
        .map(|&h| {
            let steps = (t_end / h).round() as u64;
            distance(&observe(&final_q(sys, init, h, steps).0), reference)
        })
        .collect();
    let p = errors
        .windows(2)
        .zip(hs.windows(2))
        .map(|(e, h)| (e[0] / e[1]).ln() / (h[0] / h[1]).ln())
        .collect();
    (errors, p)
}

/// What an order test found, for the assertion message and the log.
struct Found {
    failures: Vec<String>,
}

impl Found {
    fn check(&mut self, label: &str, order: u32, errors: &[f64], p: &[f64]) {
        let slack = if order == 6 { 0.2 } else { 0.1 };
        let last = p[p.len() - 1];
        let line = format!("{label} order {order}: errors {}, observed {p:.3?}", sci(errors));
        eprintln!("{line}");
        if (last - order as f64).abs() > slack || errors.iter().any(|&e| e < 1e-12) {
            self.failures.push(line);
        }
    }
}

const T_CHAIN: f64 = 1.0;

/// Bob positions of the double spherical pendulum (W95 data, Pattern I) at
/// `T_CHAIN`: `M q̈ = f + Gᵀλ` with the multipliers from the twice
/// differentiated constraints `|q₁|² = l₁²`, `|q₂ − q₁|² = l₂²`.
fn chain_reference() -> Vec<f64> {
    chain_reference_with(T_CHAIN, 40_000)
}

/// [`chain_reference`] at `t_end`, RK4 in `n` steps.
fn chain_reference_with(t_end: f64, n: usize) -> Vec<f64> {
    let (m1, m2, g) = (2.0, 3.5, 9.81);
    let f = |_t: f64, y: &[f64]| {
        let (q1, q2, v1, v2) = (&y[0..3], &y[3..6], &y[6..9], &y[9..12]);
        let d: Vec<f64> = (0..3).map(|i| q2[i] - q1[i]).collect();
        let dv: Vec<f64> = (0..3).map(|i| v2[i] - v1[i]).collect();
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
        // constraint rows (halved): c₁ = q₁·q̈₁ + |v₁|² = 0, c₂ = d·(q̈₂ − q̈₁) + |dv|² = 0,
        // with q̈₁ = (−m₁ g e₃ + λ₁ q₁ − λ₂ d)/m₁, q̈₂ = (−m₂ g e₃ + λ₂ d)/m₂.
        let a11 = dot(q1, q1) / m1;
        let a12 = -dot(q1, &d) / m1;
        let a21 = -dot(&d, q1) / m1;
        let a22 = dot(&d, &d) * (1.0 / m1 + 1.0 / m2);
        let r1 = -dot(v1, v1) + g * q1[2];
        let r2 = -dot(&dv, &dv);
        let det = a11 * a22 - a12 * a21;
        let l1 = (r1 * a22 - a12 * r2) / det;
        let l2 = (a11 * r2 - a21 * r1) / det;
        let mut out = y[6..12].to_vec();
        for i in 0..3 {
            let e3 = if i == 2 { 1.0 } else { 0.0 };
            out.push((-m1 * g * e3 + l1 * q1[i] - l2 * d[i]) / m1);
        }
        for i in 0..3 {
            let e3 = if i == 2 { 1.0 } else { 0.0 };
            out.push((-m2 * g * e3 + l2 * d[i]) / m2);
        }
        out
    };
    let (l1, l2) = (4.0f64, 3.0f64);
    let (x1, y1, x2, y2) = (2.82f64, 0.025, 5.085, 0.105);
    let (vx1, vy1, vx2, vy2) = (3.381f64, 2.506, 2.497, 10.495);
    let z1 = -(l1 * l1 - x1 * x1 - y1 * y1).sqrt();
    let z2 = z1 - (l2 * l2 - (x2 - x1).powi(2) - (y2 - y1).powi(2)).sqrt();
    let vz1 = -(x1 * vx1 + y1 * vy1) / z1;
    let vz2 = vz1 - ((x2 - x1) * (vx2 - vx1) + (y2 - y1) * (vy2 - vy1)) / (z2 - z1);
    let y0 = [x1, y1, z1, x2, y2, z2, vx1, vy1, vz1, vx2, vy2, vz2];
    rk4(f, &y0, t_end, n)[..6].to_vec()
}

#[test]
fn chain_reaches_orders_four_and_six_under_every_symmetric_scheme_and_back_end() {
    let reference = chain_reference();
    let cart = read_model(&model_path("double_spherical_pendulum_cartesian"), &[]).unwrap();
    let director = read_model(&model_path("double_spherical_pendulum"), &[]).unwrap();
    let positions = |q: &[f64]| q.to_vec();
    // directors e₁, e₂ to bob positions l₁e₁, l₁e₁ + l₂e₂
    let bobs = |q: &[f64]| {
        let mut x: Vec<f64> = q[..3].iter().map(|e| 4.0 * e).collect();
        x.extend((0..3).map(|i| 4.0 * q[i] + 3.0 * q[3 + i]));
        x
    };
    let mut found = Found { failures: vec![] };
    for backend in Backend::ALL {
        for (model, scheme, observe) in [
            (&director, "hamel_midpoint", &bobs as &dyn Fn(&[f64]) -> Vec<f64>),
            (&director, "hamel_averaged", &bobs),
            (&cart, "rattle", &positions),
            (&cart, "energy_momentum", &positions),
        ] {
            for (order, hs) in [(4, [0.02, 0.01, 0.005]), (6, [0.05, 0.025, 0.0125])] {
                if scheme == "energy_momentum" && order == 6 {
                    continue; // refused: see stormer_verlet_composed_and_bad_orders_refused
                }
                let sys = system(model, scheme, backend, order);
                let (e, p) = orders(&sys, "pattern_I", T_CHAIN, &hs, observe, &reference);
                found.check(&format!("double pendulum {scheme} {backend}"), order, &e, &p);
            }
        }
    }
    assert!(found.failures.is_empty(), "{:#?}", found.failures);
}

#[test]
fn stormer_verlet_composed_and_bad_orders_refused() {
    // Störmer–Verlet, index-reduced, on the Cartesian chain: symmetric.
    let reference = chain_reference();
    let cart = read_model(&model_path("double_spherical_pendulum_cartesian"), &[]).unwrap();
    let mut found = Found { failures: vec![] };
    for (order, hs) in [(4, [0.02, 0.01, 0.005]), (6, [0.05, 0.025, 0.0125])] {
        let sys = system(&cart, "stormer_verlet", Backend::Jit, order);
        let (e, p) = orders(&sys, "pattern_I", T_CHAIN, &hs, &|q| q.to_vec(), &reference);
        found.check("double pendulum stormer_verlet jit", order, &e, &p);
    }
    assert!(found.failures.is_empty(), "{:#?}", found.failures);
    // Energy–momentum on a constrained model stays at order 4 when composed
    // to order 6 (measured: 4.0), so order 6 is refused there, naming the argument.
    let mut sys = compile(&cart, "energy_momentum".parse().unwrap(), Backend::Jit).unwrap();
    let err = sys.set_order(6).unwrap_err().to_string();
    assert!(err.starts_with("order 6 is not reached by energy_momentum"), "{err}");
    let err = sys.set_order(3).unwrap_err().to_string();
    assert!(err.contains("order 3 is not offered"), "{err}");
    assert_eq!(sys.step_order(), 2, "a refused order leaves the system as it was");
    sys.set_order(4).unwrap();
    assert_eq!(sys.step_order(), 4);
}

/// Energy–momentum composed to order 6 where it has no constraints: Kepler,
/// against the order-6 RATTLE (velocity Verlet) solution at h = 1e-3 (itself
/// within 1e-15 of the exact flow at this h).
#[test]
fn energy_momentum_without_constraints_reaches_order_six() {
    let m = read_model(&model_path("gallery/kepler"), &[]).unwrap();
    let reference = final_q(&system(&m, "rattle", Backend::Jit, 6), "perihelion", 0.001, 2000).0;
    let mut found = Found { failures: vec![] };
    let sys = system(&m, "energy_momentum", Backend::Jit, 6);
    let (e, p) = orders(
        &sys,
        "perihelion",
        2.0,
        &[0.04, 0.02, 0.01],
        &|q| q.to_vec(),
        &reference,
    );
    found.check("kepler energy_momentum jit", 6, &e, &p);
    // and keeps the energy and the angular momentum to round-off
    let (_, kept) = final_q(&sys, "perihelion", 0.01, 200);
    eprintln!("  kept: {kept:?}");
    assert!(kept[0].1 < 1e-14 && kept[1].1 < 1e-11, "{kept:?}");
    assert!(found.failures.is_empty(), "{:#?}", found.failures);
}

/// Chaplygin sleigh (models/chaplygin_sleigh.hamel): `u̇ = a ω²`,
/// `(I + m a²) ω̇ = −m a u ω`, `(ẋ, ẏ, θ̇) = (u cos θ, u sin θ, ω)`.
fn sleigh_reference(t_end: f64) -> Vec<f64> {
    let (m, a, i) = (1.0, 0.5, 0.2);
    let f = |_t: f64, y: &[f64]| {
        let (th, u, om) = (y[2], y[3], y[4]);
        vec![
            u * th.cos(),
            u * th.sin(),
            om,
            a * om * om,
            -m * a * u * om / (i + m * a * a),
        ]
    };
    rk4(f, &[0.0, 0.0, 0.0, 1.0, 1.0], t_end, 20_000)[..3].to_vec()
}

#[test]
fn nonholonomic_sleigh_reaches_orders_four_and_six_and_keeps_its_energy() {
    let t_end = 2.0;
    let reference = sleigh_reference(t_end);
    let sleigh = read_model(&model_path("chaplygin_sleigh"), &[]).unwrap();
    let mut found = Found { failures: vec![] };
    for backend in Backend::ALL {
        for (order, hs) in [(4, [0.1, 0.05, 0.025]), (6, [0.2, 0.1, 0.05])] {
            let sys = system(&sleigh, "hamel_midpoint", backend, order);
            let (e, p) = orders(&sys, "push", t_end, &hs, &|q| q.to_vec(), &reference);
            found.check(&format!("sleigh hamel_midpoint {backend}"), order, &e, &p);
            // what midpoint kinematics keep, the composition keeps: the
            // knife-edge constraint and the energy, to round-off
            let (_, kept) = final_q(&sys, "push", hs[1], 400);
            for (name, err) in &kept {
                eprintln!("  {name}: {err:.2e}");
            }
            let energy = kept[0].1;
            assert!(energy < 1e-13, "sleigh order {order} {backend}: energy {energy:e}");
        }
    }
    assert!(found.failures.is_empty(), "{:#?}", found.failures);
}

/// A driven, damped Duffing oscillator, the drive written in the model:
/// `x'' = −δx' − αx − βx³ + f₀ cos ωt`.
const DUFFING: &str = "
model duffing {
    parameters { alpha = 1.0, beta = 0.5, delta = 0.1, f0 = 0.8, w = 1.3 }
    coordinates { x }
    lagrangian  = 0.5 * x'^2 - 0.5 * alpha * x^2 - 0.25 * beta * x^4
    dissipation = 0.5 * delta * x'^2
    force x     = f0 * cos(w * t)
    initial start { x = 0.5, x' = 0 }
}";

/// A spherical pendulum in Cartesian coordinates pushed along x by
/// `f₀ cos ωt`: `m x'' = −m g e₃ + F e₁ + λ x`, `|x| = r`.
const PENDULUM: &str = "
model driven_pendulum {
    parameters { m = 1.0, r = 1.0, g = 9.81, f0 = 0.8, w = 1.3 }
    coordinates { x: vec3 }
    lagrangian = 0.5 * m * dot(x', x') - m * g * x[2]
    holonomic  norm2(x) = r^2
    force x    = (f0 * cos(w * t), 0, 0)
    initial start { x = (0.6, 0, -0.8), x' = (0, 0.7, 0) }
}";

const T_FORCED: f64 = 4.0;

#[test]
fn forced_in_time_each_sub_step_at_its_own_time_reaches_orders_four_and_six() {
    let duffing = load_source("duffing.hamel", DUFFING, &[]).unwrap();
    let pendulum = load_source("driven_pendulum.hamel", PENDULUM, &[]).unwrap();
    let (rd, rp) = (
        duffing_reference(T_FORCED, 40_000),
        pendulum_reference(T_FORCED, 40_000),
    );
    let mut found = Found { failures: vec![] };
    for backend in Backend::ALL {
        for (model, scheme, reference) in [
            (&duffing, "hamel_midpoint", &rd),
            (&duffing, "stormer_verlet", &rd),
            (&duffing, "hamel_averaged", &rd),
            (&pendulum, "rattle", &rp),
            (&pendulum, "energy_momentum", &rp),
        ] {
            for (order, hs) in [(4, [0.1, 0.05, 0.025]), (6, [0.2, 0.1, 0.05])] {
                if scheme == "energy_momentum" && order == 6 {
                    continue; // refused on constrained models
                }
                let sys = system(model, scheme, backend, order);
                let (e, p) = orders(&sys, "start", T_FORCED, &hs, &|q| q.to_vec(), reference);
                found.check(&format!("{} {scheme} {backend}", sys.compiled().model), order, &e, &p);
            }
        }
    }
    assert!(found.failures.is_empty(), "{:#?}", found.failures);
}

/// The largest error of each monitored quantity (energy, momenta, constraint
/// residuals) over 10 s of Pattern I at h = 0.01, for orders 2, 4, 6.
#[test]
fn composed_steps_keep_what_their_base_step_keeps() {
    let cart = read_model(&model_path("double_spherical_pendulum_cartesian"), &[]).unwrap();
    let director = read_model(&model_path("double_spherical_pendulum"), &[]).unwrap();
    let mut failures = vec![];
    for (model, scheme) in [
        (&director, "hamel_midpoint"),
        (&director, "hamel_averaged"),
        (&cart, "rattle"),
        (&cart, "energy_momentum"),
        (&cart, "stormer_verlet"),
    ] {
        let (mut energy, mut momentum) = (vec![], vec![]);
        for order in [2, 4, 6] {
            if scheme == "energy_momentum" && order == 6 {
                continue;
            }
            let sys = system(model, scheme, Backend::Jit, order);
            let (_, kept) = final_q(&sys, "pattern_I", 0.01, 1000);
            let line: Vec<String> = kept.iter().map(|(n, e)| format!("{n} {e:.1e}")).collect();
            eprintln!("{scheme} order {order}: {}", line.join(", "));
            let get = |name: &str| kept.iter().find(|(n, _)| n == name).map(|(_, e)| *e).unwrap();
            energy.push(get("energy"));
            momentum.push(get("J"));
            // constraints: to round-off (Newton tolerance), except the
            // index-reduced Störmer–Verlet, whose constraint drifts at O(h²)
            // for the base step and at O(h^order) composed
            for (n, e) in &kept {
                // (the energy–momentum step does not impose the hidden
                // velocity-level constraint, composed or not)
                let hidden = n.ends_with("(velocity)") && scheme == "energy_momentum";
                let residual =
                    !hidden && (n.starts_with("holonomic") || n.starts_with("constraint") || n.starts_with("length"));
                let limit = if scheme == "stormer_verlet" { 1e-2 } else { 1e-12 };
                if residual && *e > limit {
                    failures.push(format!("{scheme} order {order}: {n} {e:e}"));
                }
            }
            // the vertical angular momentum: to round-off where the base
            // step keeps it (RATTLE, Störmer–Verlet, energy–momentum; the
            // Hamel director chain's J drifts at O(h²), docs/theory.md §8.3,
            // and composed at O(h^order), as its energy below)
            if !scheme.starts_with("hamel") && get("J") > 1e-11 {
                failures.push(format!("{scheme} order {order}: J {:e}", get("J")));
            }
            // energy–momentum: the energy to round-off (a walk over 1000 or
            // 3000 sub-steps: 5e-13 and 1.4e-12 measured)
            if scheme == "energy_momentum" && get("energy") > 1e-11 {
                failures.push(format!("{scheme} order {order}: energy {:e}", get("energy")));
            }
        }
        // energy: bounded, and at this h smaller by orders of magnitude
        // composed (the energy–momentum step keeps it to round-off anyway)
        if scheme != "energy_momentum" && !(energy[1] < energy[0] / 100.0 && energy[2] < energy[1] / 1000.0) {
            failures.push(format!("{scheme}: energy errors for orders 2, 4, 6 {}", sci(&energy)));
        }
        if scheme.starts_with("hamel") && !(momentum[1] < momentum[0] / 10.0 && momentum[2] < momentum[1]) {
            failures.push(format!("{scheme}: J errors for orders 2, 4, 6 {}", sci(&momentum)));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The cart-pole of `time_order.rs`, upright at `θ = 0`, a force `u` on the cart.
const CART_POLE: &str = "
model cart_pole {
    parameters { mc = 1.0, mp = 0.3, l = 0.8, g = 9.81 }
    inputs { u }
    coordinates { x, th }
    lagrangian = 0.5 * (mc + mp) * x'^2 + mp * l * x' * th' * cos(th) + 0.5 * mp * l^2 * th'^2 - mp * g * l * cos(th)
    force x = u
    initial up { x = 0, th = 0, x' = 0, th' = 0 }
}";

/// `(A, B)` of the composed step is the chain rule of its sub-steps':
/// against central differences of the whole composed step, away from the
/// equilibrium; and an LQR designed on it at the upright equilibrium decays
/// at its designed rate on the nonlinear composed step.
#[test]
fn linearization_of_the_composed_step_is_the_chain_rule_and_lqr_decays_as_designed() {
    let model = load_source("cart_pole.hamel", CART_POLE, &[]).unwrap();
    let h = 0.05;
    let mut failures = vec![];
    for scheme in ["hamel_midpoint", "hamel_averaged", "stormer_verlet"] {
        for order in [4, 6] {
            let label = format!("{scheme} order {order}");
            let mut sys = compile_with_sensitivity(&model, scheme.parse().unwrap(), Backend::Jit).unwrap();
            sys.set_order(order).unwrap();
            // (1) finite differences at a swinging state, u ≠ 0, t ≠ 0
            let mut at = sys.initial("up").unwrap();
            at.z[1] += 0.3;
            at.z[2] += 0.2;
            at.step = 7;
            let u0 = 0.4;
            let step_from = |z: &DVector<f64>, u: f64| {
                let mut s = DynStepper::new(&sys, h).unwrap();
                let mut st = at.clone();
                st.z.copy_from(z);
                s.step_with_inputs(&mut st, &[u]).unwrap();
                st.z
            };
            let mut s = DynStepper::new(&sys, h).unwrap();
            s.set_inputs(&[u0]).unwrap();
            let mut st = at.clone();
            let (a, b) = s.step_linearized(&mut st, true).unwrap();
            assert_eq!(st.z, step_from(&at.z, u0), "{label}: the linearized step is the step");
            let n = a.nrows();
            let d = 1e-6;
            let mut fd_a = DMatrix::zeros(n, n);
            for j in 0..n {
                let (mut zp, mut zm) = (at.z.clone(), at.z.clone());
                zp[j] += d;
                zm[j] -= d;
                fd_a.set_column(j, &((step_from(&zp, u0) - step_from(&zm, u0)) / (2.0 * d)));
            }
            let fd_b = (step_from(&at.z, u0 + d) - step_from(&at.z, u0 - d)) / (2.0 * d);
            let (ea, eb) = ((&a - &fd_a).amax(), (b.column(0) - &fd_b).amax());
            eprintln!(
                "{label}: |A − FD| {ea:.1e}, |B − FD| {eb:.1e} (|A| {:.2}, |B| {:.2e})",
                a.amax(),
                b.amax()
            );
            if ea > 1e-7 || eb > 1e-7 {
                failures.push(format!("{label}: A {ea:e}, B {eb:e}"));
            }
            // (2) LQR at the upright equilibrium
            let steps = 400;
            let (designed, worst, decayed) = lqr_follows_design(&sys, h, steps, &label);
            eprintln!("{label}: designed spectral radius {designed:.6}, decayed to {decayed:.2e} in {steps} steps, max relative deviation from the design {worst:.1e}");
            if designed >= 1.0 || worst > 1e-4 || decayed > 0.5 {
                failures.push(format!(
                    "{label}: designed {designed}, deviation {worst:e}, decay {decayed:e}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// One rung of an accuracy-per-cost ladder: a run of the double pendulum
/// (Pattern I, `T_LADDER` seconds) at one order and step size.
#[derive(Clone, Copy, Debug)]
struct Rung {
    order: u32,
    h: f64,
    /// largest bob-position error at `T_LADDER` against the RK4 reference
    error: f64,
    /// largest relative energy error over the run
    energy: f64,
    /// Newton iterations over the run (each a residual-and-Jacobian
    /// evaluation and a factorization or solve: the cost that counts)
    iterations: u64,
    /// wall time of the stepping alone, best of three (seconds)
    seconds: f64,
}

const T_LADDER: f64 = 5.0;

/// Bob positions of the double spherical pendulum, Pattern I, at `t_end`
/// (`chain_reference`'s equations, RK4 at 1e-4).
fn chain_reference_at(t_end: f64) -> Vec<f64> {
    chain_reference_with(t_end, (t_end / 1e-4).round() as usize)
}

/// The ladder of `hamel_midpoint` on the director double pendulum for
/// `order`, at `rungs` halvings of `h0`.
fn ladder(order: u32, h0: f64, rungs: usize, reference: &[f64], timed: bool) -> Vec<Rung> {
    let director = read_model(&model_path("double_spherical_pendulum"), &[]).unwrap();
    let sys = system(&director, "hamel_midpoint", Backend::Jit, order);
    (0..rungs)
        .map(|k| {
            let h = h0 / f64::powi(2.0, k as i32);
            let steps = (T_LADDER / h).round() as u64;
            let opt = RunOptions {
                h,
                steps,
                compensated: false,
                record_every: steps,
                inputs: None,
                newton: Default::default(),
            };
            let r = run(&sys, sys.initial("pattern_I").unwrap(), None, &opt).unwrap();
            let q = r.q.last().unwrap();
            let mut x: Vec<f64> = q[..3].iter().map(|e| 4.0 * e).collect();
            x.extend((0..3).map(|i| 4.0 * q[i] + 3.0 * q[3 + i]));
            let seconds = if timed {
                (0..3)
                    .map(|_| {
                        let mut st = sys.initial("pattern_I").unwrap();
                        let mut s = DynStepper::new(&sys, h).unwrap();
                        let t = std::time::Instant::now();
                        for _ in 0..steps {
                            s.step(&mut st).unwrap();
                        }
                        t.elapsed().as_secs_f64()
                    })
                    .fold(f64::INFINITY, f64::min)
            } else {
                f64::NAN
            };
            Rung {
                order,
                h,
                error: distance(&x, reference),
                energy: r.monitor.get("energy").unwrap().max_rel_error,
                iterations: r.newton.iterations,
                seconds,
            }
        })
        .collect()
}

/// The least cost (by `cost`) over the rungs that reach `target`.
fn least(rungs: &[Rung], target: f64, cost: impl Fn(&Rung) -> f64) -> Option<f64> {
    rungs.iter().filter(|r| r.error <= target).map(cost).reduce(f64::min)
}

/// The README's claim, asserted on a machine-independent cost (Newton
/// iterations, which rank the rungs as the wall time does): on the double
/// pendulum, at a loose 1e-2 position error order 2 is the cheapest; at
/// 1e-6 order 4 beats it and order 6 beats order 4; at 1e-9 order 6 beats
/// order 4 and order 2 does not get there on its ladder (h ≥ 3e-4).
#[test]
fn composed_orders_pay_at_tight_targets() {
    let reference = chain_reference_at(T_LADDER);
    let l2 = ladder(2, 0.01, 6, &reference, false);
    let l4 = ladder(4, 0.04, 6, &reference, false);
    let l6 = ladder(6, 0.04, 4, &reference, false);
    for r in l2.iter().chain(&l4).chain(&l6) {
        eprintln!("{r:?}");
    }
    let it = |r: &Rung| r.iterations as f64;
    let inf = f64::INFINITY;
    let at = |t: f64| [&l2, &l4, &l6].map(|l| least(l, t, it).unwrap_or(inf));
    let (loose, mid, tight) = (at(1e-2), at(1e-6), at(1e-9));
    eprintln!("Newton iterations to reach 1e-2: {loose:?}; 1e-6: {mid:?}; 1e-9: {tight:?}");
    assert!(
        loose[0] < loose[1] && loose[0] < loose[2],
        "order 2 is the cheapest at 1e-2: {loose:?}"
    );
    assert!(
        mid[1] < mid[0] && mid[2] < mid[1],
        "orders 4 and 6 pay at 1e-6: {mid:?}"
    );
    assert!(
        tight[2] < tight[1] && tight[0] == inf,
        "order 6 pays at 1e-9, out of order 2's reach: {tight:?}"
    );
}

/// The figure of the README: error against wall time of the stepping for
/// orders 2, 4, 6 on the double pendulum (Pattern I, 5 s), written to
/// `target/orders/` as CSV and SVG. Run in release:
/// `cargo test --release -p hamel-load --test composition -- --ignored --nocapture`.
#[test]
#[ignore]
fn accuracy_per_second_figure() {
    let reference = chain_reference_at(T_LADDER);
    let all: Vec<Vec<Rung>> = vec![
        ladder(2, 0.02, 9, &reference, true),
        ladder(4, 0.04, 8, &reference, true),
        ladder(6, 0.04, 7, &reference, true),
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/orders");
    std::fs::create_dir_all(&dir).unwrap();
    let mut csv = String::from("order,h,position_error,energy_error_rel,newton_iterations,seconds\n");
    for r in all.iter().flatten() {
        csv += &format!(
            "{},{},{:e},{:e},{},{:e}\n",
            r.order, r.h, r.error, r.energy, r.iterations, r.seconds
        );
        eprintln!(
            "order {} h {:<9} error {:.2e} energy {:.2e} iterations {:>8} {:.3e} s",
            r.order, r.h, r.error, r.energy, r.iterations, r.seconds
        );
    }
    std::fs::write(dir.join("orders.csv"), csv).unwrap();
    for target in [1e-3, 1e-6, 1e-9] {
        let best: Vec<String> = all
            .iter()
            .map(|l| match least(l, target, |r| r.seconds) {
                Some(s) => format!("order {}: {:.2e} s", l[0].order, s),
                None => format!("order {}: not reached", l[0].order),
            })
            .collect();
        eprintln!("position error {target:e}: {}", best.join(", "));
    }
    std::fs::write(dir.join("orders.svg"), svg(&all)).unwrap();
    eprintln!("wrote {}", dir.display());
}

/// A log–log plot of error against seconds, one polyline per order.
fn svg(all: &[Vec<Rung>]) -> String {
    let (w, h, m) = (640.0, 420.0, 60.0);
    let pts: Vec<&Rung> = all.iter().flatten().collect();
    let lx = |r: &Rung| r.seconds.log10();
    let ly = |r: &Rung| r.error.max(1e-16).log10();
    let (x0, x1) = (
        pts.iter().map(|r| lx(r)).fold(f64::INFINITY, f64::min).floor(),
        pts.iter().map(|r| lx(r)).fold(f64::NEG_INFINITY, f64::max).ceil(),
    );
    let (y0, y1) = (
        pts.iter().map(|r| ly(r)).fold(f64::INFINITY, f64::min).floor(),
        pts.iter().map(|r| ly(r)).fold(f64::NEG_INFINITY, f64::max).ceil(),
    );
    let px = |v: f64| m + (v - x0) / (x1 - x0) * (w - 2.0 * m);
    let py = |v: f64| h - m - (v - y0) / (y1 - y0) * (h - 2.0 * m);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    for e in (x0 as i32)..=(x1 as i32) {
        let x = px(e as f64);
        s += &format!("<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">1e{e}</text>\n", m, h - m, h - m + 16.0);
    }
    for e in (y0 as i32)..=(y1 as i32) {
        let y = py(e as f64);
        s += &format!("<line x1=\"{m}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">1e{e}</text>\n", w - m, m - 6.0, y + 4.0);
    }
    s += &format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">wall time of the stepping (s)</text>\n",
        w / 2.0,
        h - 16.0
    );
    s += &format!("<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">bob position error at t = 5 s</text>\n", h / 2.0, h / 2.0);
    for (l, colour) in all.iter().zip(["#1f77b4", "#d62728", "#2ca02c"]) {
        let line: Vec<String> = l.iter().map(|r| format!("{:.1},{:.1}", px(lx(r)), py(ly(r)))).collect();
        s += &format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>\n",
            line.join(" ")
        );
        let last = &l[0];
        s += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{colour}\">order {}</text>\n",
            px(lx(last)) + 6.0,
            py(ly(last)) - 6.0,
            last.order
        );
    }
    s + "</svg>\n"
}

/// The composition with coefficients `gamma`, by hand (one stepper per
/// sub-step size; the chain is unforced, so time labels do not matter):
/// bob-position error at `T_CHAIN` with step `h`.
fn composed_by_hand(sys: &System, gamma: &[f64], h: f64, reference: &[f64]) -> f64 {
    let mut steppers: Vec<DynStepper<'_, System>> =
        gamma.iter().map(|g| DynStepper::new(sys, g * h).unwrap()).collect();
    let mut st = sys.initial("pattern_I").unwrap();
    for _ in 0..(T_CHAIN / h).round() as u64 {
        for s in &mut steppers {
            s.step(&mut st).unwrap();
        }
    }
    let (q, _) = sys.physical(&st.z, st.step).unwrap();
    let mut x: Vec<f64> = q[..3].iter().map(|e| 4.0 * e).collect();
    x.extend((0..3).map(|i| 4.0 * q[i] + 3.0 * q[3 + i]));
    distance(&x, reference)
}

/// Why Kahan–Li's nine stages for order 6: at equal work (sub-steps per
/// unit time) its error on the double pendulum is below Yoshida's seven
/// stages' (2.2× measured) and far below the triple jump of the triple
/// jump's (nine stages, 230×). For order 4, Suzuki's five stages beat the
/// triple jump the same way (0.21× its error at equal work), recorded here
/// for a later choice: order 4 is the triple jump as specified. The
/// error constant `C = e / h⁶` is measured at a step in the asymptotic
/// range; at equal work `s/h` the error is `C s⁶ / W⁶`, so `C s⁶` ranks them.
#[test]
fn kahan_li_has_the_smallest_sixth_order_error_at_equal_work() {
    use hamel_runtime::compose::{KAHAN_LI_9, TRIPLE_JUMP, YOSHIDA_7};
    let reference = chain_reference();
    let director = read_model(&model_path("double_spherical_pendulum"), &[]).unwrap();
    let sys = compile(&director, "hamel_midpoint".parse().unwrap(), Backend::Jit).unwrap();
    let d1 = 1.0 / (2.0 - 2f64.powf(0.2));
    let d2 = 1.0 - 2.0 * d1;
    let tj2: Vec<f64> = [d1, d2, d1].iter().flat_map(|d| TRIPLE_JUMP.map(|g| d * g)).collect();
    let cost = |g: &[f64], p: i32, h: f64| {
        let e = composed_by_hand(&sys, g, h, &reference);
        let e2 = composed_by_hand(&sys, g, h / 2.0, &reference);
        let order = (e / e2).log2();
        let c = e2 / (h / 2.0).powi(p) * (g.len() as f64).powi(p);
        eprintln!(
            "{} stages: errors {e:.2e}, {e2:.2e} (order {order:.2}); C s^{p} = {c:.3e}",
            g.len()
        );
        assert!((order - p as f64).abs() < 0.2, "{order}");
        c
    };
    let (kl, yoshida, tj) = (
        cost(&KAHAN_LI_9, 6, 0.025),
        cost(&YOSHIDA_7, 6, 0.025),
        cost(&tj2, 6, 0.025),
    );
    eprintln!(
        "order 6, equal-work error relative to Kahan–Li: Yoshida 7 {:.1}×, triple jump² {:.1}×",
        yoshida / kl,
        tj / kl
    );
    assert!(kl < yoshida / 1.5 && kl < tj / 50.0, "{kl:e} {yoshida:e} {tj:e}");
    // Order 4, for the record: Suzuki's five stages against the triple jump.
    let (triple, suzuki) = (
        cost(&TRIPLE_JUMP, 4, 0.01),
        cost(&hamel_runtime::compose::SUZUKI_5, 4, 0.01),
    );
    eprintln!(
        "order 4, equal-work error of Suzuki 5 relative to the triple jump: {:.2}×",
        suzuki / triple
    );
    assert!(suzuki < triple / 2.0, "{suzuki:e} {triple:e}");
}

/// A composed step that fails (here: Newton allowed one iteration) leaves
/// the state as it was, and the next step from it is the step a fresh
/// stepper takes, to the bit; a composed stepper with a negative step runs
/// the motion back to its start (the composition is symmetric).
#[test]
fn failed_composed_steps_change_nothing_and_negative_steps_run_back() {
    let cart = read_model(&model_path("double_spherical_pendulum_cartesian"), &[]).unwrap();
    for order in [4, 6] {
        let sys = system(&cart, "rattle", Backend::Interpreter, order);
        let start = sys.initial("pattern_I").unwrap();
        let mut s = DynStepper::new(&sys, 0.05).unwrap();
        s.options.max_iterations = 1;
        let mut st = start.clone();
        assert!(s.step(&mut st).is_err(), "one Newton iteration is not enough");
        assert_eq!(st, start, "order {order}: a failed step changes nothing");
        s.options.max_iterations = 30;
        s.step(&mut st).unwrap();
        let mut fresh = start.clone();
        DynStepper::new(&sys, 0.05).unwrap().step(&mut fresh).unwrap();
        assert_eq!(st.z, fresh.z, "order {order}");

        let mut st = start.clone();
        let mut forward = DynStepper::new(&sys, 0.01).unwrap();
        for _ in 0..100 {
            forward.step(&mut st).unwrap();
        }
        let mut back = DynStepper::new(&sys, -0.01).unwrap();
        for _ in 0..100 {
            back.step(&mut st).unwrap();
        }
        let off = (&st.z - &start.z).amax();
        eprintln!("order {order}: 100 steps forward and back, |Δz| = {off:.1e}");
        assert!(off < 1e-10, "order {order}: {off:e}");
    }
}

/// Inputs are held over the whole composed step (zero-order hold): the same
/// drive given as an input expression in `t` (sampled once per step, at its
/// midpoint) limits the composed step to order 2, where the drive written in
/// the model keeps order 4 (`forced_in_time_…`).
#[test]
fn inputs_held_over_the_composed_step_limit_it_to_order_two() {
    let src = DUFFING.replace("force x     = f0 * cos(w * t)", "inputs { u }\n    force x     = u");
    let model = load_source("duffing_input.hamel", &src, &[]).unwrap();
    let sys = system(&model, "hamel_midpoint", Backend::Jit, 4);
    let reference = duffing_reference(T_FORCED, 40_000);
    let hs = [0.1, 0.05, 0.025];
    let errors: Vec<f64> = hs
        .iter()
        .map(|&h| {
            let steps = (T_FORCED / h).round() as u64;
            let opt = RunOptions {
                h,
                steps,
                compensated: false,
                record_every: steps,
                inputs: Some(
                    hamel_load::Schedule::from_assignments(&["u"], &["u=0.8*cos(1.3*t)".to_string()]).unwrap(),
                ),
                newton: Default::default(),
            };
            let r = run(&sys, sys.initial("start").unwrap(), None, &opt).unwrap();
            distance(r.q.last().unwrap(), &reference)
        })
        .collect();
    let p: Vec<f64> = errors.windows(2).map(|e| (e[0] / e[1]).log2()).collect();
    eprintln!(
        "duffing, input expression, order 4 composed: errors {}, observed {p:.3?}",
        sci(&errors)
    );
    assert!((p[1] - 2.0).abs() < 0.1, "{p:?}");
}

/// The composed step agrees between the back-ends to the bit (as the base
/// step does), and runs with compensated summation (each sub-step's
/// increment added with TwoSum) to the same accuracy.
#[test]
fn composed_steps_agree_between_back_ends_and_run_compensated() {
    let cart = read_model(&model_path("double_spherical_pendulum_cartesian"), &[]).unwrap();
    let reference = chain_reference();
    for order in [4, 6] {
        let [jit, interp] = Backend::ALL.map(|b| system(&cart, "rattle", b, order));
        let (a, _) = final_q(&jit, "pattern_I", 0.01, 100);
        let (b, _) = final_q(&interp, "pattern_I", 0.01, 100);
        assert_eq!(a, b, "order {order}: JIT and interpreter");
        let opt = RunOptions {
            h: 0.01,
            steps: 100,
            compensated: true,
            record_every: 100,
            inputs: None,
            newton: Default::default(),
        };
        let r = run(&jit, jit.initial("pattern_I").unwrap(), None, &opt).unwrap();
        let (plain, compensated) = (distance(&a, &reference), distance(r.q.last().unwrap(), &reference));
        eprintln!("order {order}: error {plain:.3e} plain, {compensated:.3e} compensated");
        assert!((compensated / plain - 1.0).abs() < 0.01, "{plain:e} {compensated:e}");
    }
}
