//! Time done right: every scheme is second order when the force depends on
//! time, whichever way the time dependence is given (`t` in the model, an
//! input expression sampled by the host, a CSV schedule finer than the step),
//! and the linearization of every scheme is complete (an LQR designed on each
//! scheme's `(A, B)` decays at its designed rate).
//!
//! References are independent of hamel: classical RK4 at a step 1/200 of the
//! finest one, on equations of motion derived by hand in this file.

mod driven;
mod rk4;
use driven::{drive, duffing_reference, lqr_follows_design, pendulum_reference};
use hamel_load::{compile, compile_with_sensitivity, load_source, run, Backend, RunOptions, Schedule, System};

/// A driven, damped Duffing oscillator: `x'' = −δx' − αx − βx³ + F(t)`.
const DUFFING: &str = "
model duffing {
    parameters { alpha = 1.0, beta = 0.5, delta = 0.1, f0 = 0.8, w = 1.3 }
    INPUTS
    coordinates { x }
    lagrangian  = 0.5 * x'^2 - 0.5 * alpha * x^2 - 0.25 * beta * x^4
    dissipation = 0.5 * delta * x'^2
    force x     = FORCE
    initial start { x = 0.5, x' = 0 }
}";

/// The same oscillator in a body frame of one velocity (`x' = 2 v`), so that
/// the Hamel schemes meet a frame that is not the identity.
const DUFFING_FRAME: &str = "
model duffing_frame {
    parameters { alpha = 1.0, beta = 0.5, delta = 0.1, f0 = 0.8, w = 1.3 }
    INPUTS
    coordinates { x }
    velocities { v }
    frame { x' = 2 * v }
    lagrangian  = 2 * v^2 - 0.5 * alpha * x^2 - 0.25 * beta * x^4
    dissipation = 2 * delta * v^2
    force v     = 2 * (FORCE)
    initial start { x = 0.5, v = 0 }
}";

/// A spherical pendulum in Cartesian coordinates pushed along x by
/// `F(t)`: `m x'' = −m g e₃ + F e₁ + λ x`, `|x| = r`.
const PENDULUM: &str = "
model driven_pendulum {
    parameters { m = 1.0, r = 1.0, g = 9.81, f0 = 0.8, w = 1.3 }
    INPUTS
    coordinates { x: vec3 }
    lagrangian = 0.5 * m * dot(x', x') - m * g * x[2]
    holonomic  norm2(x) = r^2
    force x    = (FORCE, 0, 0)
    initial start { x = (0.6, 0, -0.8), x' = (0, 0.7, 0) }
}";

const F0: f64 = 0.8;
const W: f64 = 1.3;
const T_END: f64 = 4.0;

/// How the force's time dependence reaches the step.
#[derive(Clone, Copy, Debug)]
enum Given {
    /// `t` in the model's force
    Model,
    /// an input given as an expression in `t` (`--input u=…`)
    Expression,
    /// a CSV table of the input, 16 rows per finest step, each row the
    /// drive at its interval's midpoint
    Table,
}

fn system(src: &str, given: Given, scheme: &str) -> System {
    let (force, inputs) = match given {
        Given::Model => ("f0 * cos(w * t)", ""),
        Given::Expression | Given::Table => ("u", "inputs { u }"),
    };
    let src = src.replace("FORCE", force).replace("INPUTS", inputs);
    let model = load_source("time_order.hamel", &src, &[]).unwrap();
    compile(&model, scheme.parse().unwrap(), Backend::Jit).unwrap()
}

fn schedule(given: Given, h_min: f64, dir: &std::path::Path) -> Option<Schedule> {
    match given {
        Given::Model => None,
        Given::Expression => Some(Schedule::from_assignments(&["u"], &[format!("u={F0}*cos({W}*t)")]).unwrap()),
        Given::Table => {
            let dt = h_min / 16.0;
            let mut csv = String::from("t,u\n");
            for j in 0..=((T_END / dt).round() as usize) {
                let t = j as f64 * dt;
                csv += &format!("{t:.17e},{:.17e}\n", drive(t + dt / 2.0));
            }
            let path = dir.join("u.csv");
            std::fs::write(&path, csv).unwrap();
            Some(Schedule::from_csv(&["u"], &path).unwrap())
        }
    }
}

/// Observed orders `log₂(e(h)/e(h/2))` of the final position error.
fn orders(src: &str, scheme: &str, given: Given, reference: &[f64]) -> Vec<f64> {
    let hs = [0.04, 0.02, 0.01];
    let dir = std::env::temp_dir().join(format!("hamel-time-order-{}-{scheme}-{given:?}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sys = system(src, given, scheme);
    let errors: Vec<f64> = hs
        .iter()
        .map(|&h| {
            let opt = RunOptions {
                h,
                steps: (T_END / h).round() as u64,
                compensated: false,
                record_every: 0,
                inputs: schedule(given, hs[hs.len() - 1], &dir),
                newton: Default::default(),
            };
            let r = run(&sys, sys.initial("start").unwrap(), None, &opt).unwrap();
            let q = r.q.last().unwrap();
            q.iter().zip(reference).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max)
        })
        .collect();
    std::fs::remove_dir_all(&dir).ok();
    errors.windows(2).map(|e| (e[0] / e[1]).log2()).collect()
}

fn assert_second_order(src: &str, schemes: &[&str], reference: &[f64]) {
    let mut failures = vec![];
    for scheme in schemes {
        for given in [Given::Model, Given::Expression, Given::Table] {
            let p = orders(src, scheme, given, reference);
            eprintln!("{scheme:16} {given:?}: orders {p:.3?}");
            if (p[p.len() - 1] - 2.0).abs() > 0.05 {
                failures.push(format!("{scheme} {given:?}: {p:.3?}"));
            }
        }
    }
    assert!(failures.is_empty(), "not second order: {failures:?}");
}

#[test]
fn every_scheme_is_second_order_under_time_dependent_forcing() {
    let duffing = duffing_reference(T_END, 200_000);
    assert_second_order(
        DUFFING,
        &["hamel_averaged", "hamel_midpoint", "stormer_verlet"],
        &duffing,
    );
    assert_second_order(DUFFING_FRAME, &["hamel_averaged", "hamel_midpoint"], &duffing);
    assert_second_order(
        PENDULUM,
        &["rattle", "energy_momentum", "stormer_verlet"],
        &pendulum_reference(T_END, 200_000),
    );
}

/// The cart-pole on a horizontal track, upright at `θ = 0`:
/// `L = ½(M + m)ẋ² + m l ẋ θ̇ cos θ + ½ m l² θ̇² − m g l cos θ`, a force `u`
/// on the cart. An LQR designed on each scheme's `(A, B)` at the upright
/// equilibrium must decay at the rate its closed loop `A − B K` predicts.
#[test]
fn lqr_on_every_scheme_decays_at_its_designed_rate() {
    let src = "
model cart_pole {
    parameters { mc = 1.0, mp = 0.3, l = 0.8, g = 9.81 }
    inputs { u }
    coordinates { x, th }
    lagrangian = 0.5 * (mc + mp) * x'^2 + mp * l * x' * th' * cos(th) + 0.5 * mp * l^2 * th'^2 - mp * g * l * cos(th)
    force x = u
    initial up { x = 0, th = 0, x' = 0, th' = 0 }
}";
    let model = load_source("cart_pole.hamel", src, &[]).unwrap();
    let h = 0.01;
    let mut failures = vec![];
    for scheme in ["hamel_averaged", "hamel_midpoint", "stormer_verlet"] {
        let sys = compile_with_sensitivity(&model, scheme.parse().unwrap(), Backend::Jit).unwrap();
        // Tilt the pole by 1e-6 and close the loop on the nonlinear step: it
        // must follow the designed closed loop to the size of the neglected
        // second-order terms. A dependence of the step missing from (A, B),
        // as the previous input was, shows as an O(1) relative difference.
        let steps = 2000;
        let (designed, worst, decayed) = lqr_follows_design(&sys, h, steps, scheme);
        assert!(designed < 1.0, "{scheme}: the design is stable ({designed})");
        eprintln!(
            "{scheme}: designed spectral radius {designed:.6}, |δz| decayed to {decayed:.3e} of its start in {steps} steps, max relative deviation from the design {worst:.2e}"
        );
        if worst > 1e-4 || decayed > 0.5 {
            failures.push(format!("{scheme}: deviation {worst:e}, decay {decayed:e}"));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}
