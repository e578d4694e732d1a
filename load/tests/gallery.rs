//! The gallery (`models/gallery/`): classic models written as textbooks write
//! them, each checked against a result hamel did not compute — a closed form
//! or a conservation law — under every scheme that applies and both run-time
//! back-ends. A scheme that refuses a gallery model fails the test unless
//! the model is listed as out of that scheme's reach, with the reason.
//!
//! Several of these steps are explicit (no Newton unknowns after the
//! compiler's elimination: the projectile and the oscillator in every
//! scheme, Störmer–Verlet on every constant mass matrix); they once panicked
//! in the LU.

mod common;

use common::{simulate, systems};
use hamel_load::System;

/// Every scheme: each applies to a model in generalized coordinates with a
/// constant mass matrix, constrained or not (RATTLE without constraints is
/// velocity Verlet; energy–momentum a discrete-gradient method).
const UNCONSTRAINED: [&str; 5] = [
    "hamel_averaged",
    "hamel_midpoint",
    "stormer_verlet",
    "rattle",
    "energy_momentum",
];

/// Final physical state `(q, v)` after `steps` steps of size `h`, and the run.
fn final_state(sys: &System, init: &str, h: f64, steps: u64) -> (Vec<f64>, Vec<f64>, hamel_load::Run) {
    let r = simulate(sys, init, h, steps);
    (r.q.last().unwrap().clone(), r.v.last().unwrap().clone(), r)
}

fn sci(v: &[f64]) -> String {
    v.iter().map(|x| format!("{x:.2e}")).collect::<Vec<_>>().join(", ")
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[test]
fn projectile_follows_its_parabola_exactly() {
    // Constant acceleration: every scheme here integrates it exactly, so the
    // only error is round-off.
    let (g, t) = (9.81, 2.0);
    let want_q = [3.0 * t, 1.0 + 4.0 * t - 0.5 * g * t * t];
    let want_v = [3.0, 4.0 - g * t];
    for (label, sys) in systems("projectile", &UNCONSTRAINED) {
        let (q, v, r) = final_state(&sys, "throw", 0.01, 200);
        let err = max_diff(&q, &want_q).max(max_diff(&v, &want_v));
        eprintln!(
            "{label}: |error| {err:.2e}, Newton iterations/step {:.2}",
            r.newton.mean()
        );
        assert!(err < 1e-11, "{label}: {err:e}");
        assert_eq!(
            r.newton.mean(),
            0.0,
            "{label}: an explicit step needs no Newton iteration"
        );
    }
}

#[test]
fn anisotropic_oscillator_converges_at_order_two() {
    // x = cos t, y = sin(2t)/2 (ω₁ = 1, ω₂ = 2).
    let t: f64 = 3.0;
    let want = [t.cos(), (2.0 * t).sin() / 2.0];
    for (label, sys) in systems("anisotropic_oscillator", &UNCONSTRAINED) {
        let e: Vec<f64> = [0.02, 0.01]
            .iter()
            .map(|&h| max_diff(&final_state(&sys, "start", h, (t / h).round() as u64).0, &want))
            .collect();
        let order = (e[0] / e[1]).log2();
        eprintln!("{label}: errors {}, order {order:.3}", sci(&e));
        assert!(
            e[1] < 1e-3 && (order - 2.0).abs() < 0.05,
            "{label}: {}, order {order}",
            sci(&e)
        );
    }
}

#[test]
fn kepler_orbit_closes_and_keeps_its_angular_momentum() {
    // a = 1/(2/r₀ − v₀²/k) = 1, period 2π: the orbit returns to perihelion.
    let period = 2.0 * std::f64::consts::PI;
    for (label, sys) in systems("kepler", &UNCONSTRAINED) {
        let mut momentum = vec![];
        let errors: Vec<f64> = [0.002, 0.001]
            .iter()
            .map(|&h| {
                let steps = (period / h).round() as u64;
                // Land exactly on the period: the last step is off by < h/2,
                // so compare with the closed orbit at the time reached.
                let (q, _, r) = final_state(&sys, "perihelion", h, steps);
                let dt = steps as f64 * h - period;
                let want = [0.4, 2.0 * dt];
                // The symplectic schemes keep L = x y' − y x' to round-off
                // (a rotation symmetry); averaged Hamel kinematics and the
                // discrete gradient of the non-quadratic −k/r to O(h²). The
                // energy–momentum scheme keeps the energy to round-off.
                let l = r.monitor.get("L").unwrap().max_abs_error;
                momentum.push(l);
                if !label.contains(" hamel_averaged ") && !label.contains(" energy_momentum ") {
                    assert!(l < 1e-13, "{label}: angular momentum error {l:e}");
                }
                if label.contains(" energy_momentum ") {
                    let e = r.monitor.get("energy").unwrap().max_rel_error;
                    assert!(e < 1e-13, "{label}: energy error {e:e}");
                }
                max_diff(&q, &want)
            })
            .collect();
        let order = (errors[0] / errors[1]).log2();
        eprintln!(
            "{label}: return to perihelion off by {}, order {order:.3}; |ΔL| {}",
            sci(&errors),
            sci(&momentum)
        );
        if label.contains(" energy_momentum ") {
            // Gonzalez's correction along Δq has a torque: O(h²), not round-off.
            let p = (momentum[0] / momentum[1]).log2();
            assert!(
                momentum[1] > 1e-9 && (p - 2.0).abs() < 0.1,
                "{label}: |ΔL| {momentum:?}"
            );
        }
        assert!(
            errors[1] < 2e-3 && (order - 2.0).abs() < 0.1,
            "{label}: {}, order {order}",
            sci(&errors)
        );
    }
}

#[test]
fn two_masses_keep_their_momentum_and_beat_at_the_reduced_frequency() {
    let (m1, m2, k, l): (f64, f64, f64, f64) = (1.0, 2.0, 3.0, 1.0);
    let (x1, x2, v1, v2) = (0.0, 1.3, 0.2, -0.1);
    let (mass, p) = (m1 + m2, m1 * v1 + m2 * v2);
    let w = (k * mass / (m1 * m2)).sqrt();
    let t = 5.0;
    let cm = (m1 * x1 + m2 * x2) / mass + p / mass * t;
    let s = l + (x2 - x1 - l) * (w * t).cos() + (v2 - v1) / w * (w * t).sin();
    let want = [cm - m2 / mass * s, cm + m1 / mass * s];
    for (label, sys) in systems("two_masses_spring", &UNCONSTRAINED) {
        let e: Vec<f64> = [0.01, 0.005]
            .iter()
            .map(|&h| {
                let (q, _, r) = final_state(&sys, "stretched", h, (t / h).round() as u64);
                let dp = r.monitor.get("P").unwrap().max_abs_error;
                assert!(dp < 1e-14, "{label}: momentum error {dp:e}");
                max_diff(&q, &want)
            })
            .collect();
        let order = (e[0] / e[1]).log2();
        eprintln!("{label}: errors {}, order {order:.3}", sci(&e));
        assert!(
            e[1] < 1e-3 && (order - 2.0).abs() < 0.05,
            "{label}: {}, order {order}",
            sci(&e)
        );
    }
}

#[test]
fn bead_on_a_torus_keeps_its_surface_and_its_conservation_laws() {
    // A quartic constraint: RATTLE keeps it and the vertical angular
    // momentum (a rotation symmetry) to round-off, energy–momentum keeps it
    // and the energy (Gonzalez's discrete gradient of the constraint).
    for (label, sys) in systems("bead_on_torus", &["rattle", "energy_momentum"]) {
        let (_, _, r) = final_state(&sys, "rolling", 0.01, 2000);
        let get = |n: &str| r.monitor.get(n).unwrap();
        let (c, e, jz) = (
            get("holonomic 1").max_abs_error,
            get("energy").max_rel_error,
            get("Jz").max_rel_error,
        );
        eprintln!("{label}: constraint {c:.2e}, energy {e:.2e}, Jz {jz:.2e}");
        assert!(c < 1e-13, "{label}: constraint {c:e}");
        if label.contains("rattle") {
            assert!(jz < 1e-13 && e < 1e-2, "{label}: Jz {jz:e}, energy {e:e}");
        } else {
            assert!(e < 1e-13 && jz < 1e-3, "{label}: energy {e:e}, Jz {jz:e}");
        }
    }
}

#[test]
fn the_chaplygin_sleigh_spin_is_monitored_not_a_momentum() {
    // models/chaplygin_sleigh.hamel: `invariant spin = om` is linear in the
    // velocities but changes (the sleigh turns less and less): it was
    // reported as a momentum with a 0.92 error. A resolved run now reports no
    // momentum error and no warning, and the spin as a monitored quantity.
    let path = format!("{}/../models/chaplygin_sleigh.hamel", env!("CARGO_MANIFEST_DIR"));
    let m = hamel_load::read_model(path.as_ref(), &[]).unwrap();
    for s in ["hamel_averaged", "hamel_midpoint"] {
        for b in hamel_load::Backend::ALL {
            let sys = hamel_load::compile(&m, s.parse().unwrap(), b).unwrap();
            let r = simulate(&sys, "push", 0.05, 1000);
            let spin = r.monitor.get("spin").unwrap();
            assert_eq!(spin.kind, hamel_runtime::InvariantKind::Monitored, "{s} {b}");
            // The spin really changes: from 1 to nearly 0.
            assert!(spin.max_abs_error > 0.9, "{s} {b}: {}", spin.max_abs_error);
            assert!(r.momentum_indices().is_empty(), "{s} {b}");
            assert!(r.summary("x")["max_momentum_error_rel"].is_null(), "{s} {b}");
            assert!(r.warnings().is_empty(), "{s} {b}: {:?}", r.warnings());
        }
    }
}
