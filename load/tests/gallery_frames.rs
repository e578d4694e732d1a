//! Gallery models whose frames mechanics writes that way (theory §1.1):
//! Euler–Poisson (pointwise dependent fields, no constraint), a cart carrying
//! a director pendulum (an affine action, a product of blocks), SE(2) with
//! body velocities (invertible). Each is checked against a result hamel did
//! not compute — an RK4 integration, written here with a small step, of the
//! equations as the textbooks state them, or a closed form — and against its
//! conservation laws, under both Hamel kinematics and both back-ends.

mod common;
mod rk4;

use common::{simulate, systems};
use hamel_load::System;
use rk4::rk4;

const KINEMATICS: [&str; 2] = ["hamel_averaged", "hamel_midpoint"];

/// `max |I − I₀|` of a monitored quantity over a run.
/// An autonomous right-hand side `f(y)` as RK4's `f(t, y)`.
fn autonomous(f: impl Fn(&[f64]) -> Vec<f64>) -> impl Fn(f64, &[f64]) -> Vec<f64> {
    move |_, y| f(y)
}

fn drift(r: &hamel_load::Run, name: &str) -> f64 {
    r.monitor
        .get(name)
        .unwrap_or_else(|| panic!("no quantity `{name}`"))
        .max_abs_error
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Euler–Poisson as Arnold writes them: `IΩ' = IΩ × Ω + m g l Γ × χ`,
/// `Γ' = Γ × Ω`, with `χ = e3`; state `(Γ, Ω)`.
fn euler_poisson(inertia: [f64; 3], mgl: f64) -> impl Fn(&[f64]) -> Vec<f64> {
    move |y: &[f64]| {
        let gamma = [y[0], y[1], y[2]];
        let om = [y[3], y[4], y[5]];
        let iom = [inertia[0] * om[0], inertia[1] * om[1], inertia[2] * om[2]];
        let gyro = cross(iom, om);
        let grav = cross(gamma, [0.0, 0.0, 1.0]);
        let dg = cross(gamma, om);
        let mut d = dg.to_vec();
        d.extend((0..3).map(|i| (gyro[i] + mgl * grav[i]) / inertia[i]));
        d
    }
}

/// Errors of `Γ(t)` at steps `h` and `h/2`, and the observed order.
fn gamma_errors(sys: &System, init: &str, h: f64, t: f64, want: &[f64]) -> ([f64; 2], f64, hamel_load::Run) {
    let coarse = simulate(sys, init, h, (t / h).round() as u64);
    let fine = simulate(sys, init, h / 2.0, (2.0 * t / h).round() as u64);
    let e = [
        max_diff(&coarse.q.last().unwrap()[..3], &want[..3]),
        max_diff(&fine.q.last().unwrap()[..3], &want[..3]),
    ];
    (e, (e[0] / e[1]).log2(), fine)
}

#[test]
fn heavy_top_in_euler_poisson_form_follows_rk4_and_keeps_its_casimirs() {
    // models/gallery/heavy_top.hamel: I = diag(1, 1, 0.5), m g l = 9.81 · 0.4.
    let (inertia, mgl) = ([1.0, 1.0, 0.5], 9.81 * 0.4);
    let y0 = [0.0, 0.5f64.sin(), 0.5f64.cos(), 0.3, -0.2, 12.0];
    let t = 2.0;
    let want = rk4(autonomous(euler_poisson(inertia, mgl)), &y0, t, 40_000);
    let (e0, l0) = {
        let iom = [inertia[0] * y0[3], inertia[1] * y0[4], inertia[2] * y0[5]];
        (
            0.5 * (iom[0] * y0[3] + iom[1] * y0[4] + iom[2] * y0[5]) + mgl * y0[2],
            iom[0] * y0[0] + iom[1] * y0[1] + iom[2] * y0[2],
        )
    };
    for (label, sys) in systems("heavy_top", &KINEMATICS) {
        let (e, order, r) = gamma_errors(&sys, "tilted", 0.004, t, &want);
        let (energy, length, vertical, spin) = (
            drift(&r, "energy"),
            drift(&r, "length"),
            drift(&r, "vertical_momentum"),
            drift(&r, "spin"),
        );
        eprintln!(
            "{label}: |Γ − Γ_rk4| {:.2e} (h = 0.004), {:.2e} (h = 0.002), order {order:.2}; drifts at h = 0.002: energy {energy:.1e}, |Γ| {length:.1e}, ⟨IΩ, Γ⟩ {vertical:.1e}, Ω₃ {spin:.1e}",
            e[0], e[1]
        );
        // The model's own energy and momentum agree with the hand-written ones
        // at the start, so the Lagrangian is the top's.
        let rep = |n: &str| r.monitor.get(n).unwrap().initial;
        assert!((rep("energy") - e0).abs() < 1e-12 && (rep("vertical_momentum") - l0).abs() < 1e-12);
        assert!(
            e[1] < 2e-3 && (order - 2.0).abs() < 0.15,
            "{label}: {e:?}, order {order}"
        );
        // Both kinematics keep the Casimirs, the energy and (I1 = I2) the spin to round-off.
        assert!(length < 1e-13 && vertical < 1e-12 && spin < 1e-12, "{label}");
        assert!(energy < 1e-12 * e0.abs(), "{label}: energy drift {energy:e}");
    }
}

#[test]
fn free_rigid_body_in_reduced_form_follows_eulers_equations() {
    // models/gallery/free_rigid_body.hamel: I = diag(1, 2, 3), tumbling near
    // the middle axis; Γ along the initial angular momentum.
    let inertia = [1.0, 2.0, 3.0];
    let om0 = [0.1, 1.0, 0.1];
    let im: [f64; 3] = [0.1, 2.0, 0.3];
    let norm = (im[0] * im[0] + im[1] * im[1] + im[2] * im[2]).sqrt();
    let y0 = [im[0] / norm, im[1] / norm, im[2] / norm, om0[0], om0[1], om0[2]];
    let t = 4.0;
    let want = rk4(autonomous(euler_poisson(inertia, 0.0)), &y0, t, 40_000);
    for (label, sys) in systems("free_rigid_body", &KINEMATICS) {
        let (e, order, r) = gamma_errors(&sys, "tumbling", 0.01, t, &want);
        let om = r.v.last().unwrap();
        let e_om = max_diff(om, &want[3..]);
        let (energy, body, length, spatial) = (
            r.monitor.get("energy").unwrap().max_rel_error,
            drift(&r, "body_momentum"),
            drift(&r, "length"),
            drift(&r, "spatial_momentum"),
        );
        eprintln!(
            "{label}: |Γ − Γ_rk4| {:.2e} (h = 0.01), {:.2e} (h = 0.005), order {order:.2}, |Ω − Ω_rk4| {e_om:.2e}; drifts at h = 0.005: energy (rel) {energy:.1e}, |IΩ| {body:.1e}, |Γ| {length:.1e}, ⟨IΩ, Γ⟩ {spatial:.1e}",
            e[0], e[1]
        );
        assert!(
            e[1] < 1e-3 && (order - 2.0).abs() < 0.15,
            "{label}: {e:?}, order {order}"
        );
        assert!(e_om < 1e-3, "{label}: {e_om:e}");
        assert!(length < 1e-13, "{label}");
        if label.contains("hamel_midpoint") {
            // Midpoint kinematics on a coordinate-free quadratic Lagrangian:
            // the implicit midpoint rule, which keeps quadratic invariants.
            assert!(energy < 1e-13 && body < 1e-13 && spatial < 1e-13, "{label}");
        } else {
            // Averaged kinematics: O(h²), measured 2.4e-7 at h = 0.005.
            assert!(energy < 2e-6 && body < 4e-6 && spatial < 4e-6, "{label}");
        }
    }
}

/// Cart (mass M, horizontal plane) with a spherical pendulum (bob m, rod r)
/// in Cartesian coordinates with a multiplier, derived by hand: with
/// `d = P − (x, y, 0)` the rod, `M (x, y)'' = λ (d_x, d_y)`,
/// `m P'' = −m g e3 − λ d`, and `λ` from `(|d|²)'' = 0`. State
/// `(x, y, x', y', P, P')`.
fn cart_pendulum(big_m: f64, m: f64, r: f64, g: f64) -> impl Fn(&[f64]) -> Vec<f64> {
    move |s: &[f64]| {
        let d = [s[4] - s[0], s[5] - s[1], s[6]];
        let dd = [s[7] - s[2], s[8] - s[3], s[9]];
        let vv = dd[0] * dd[0] + dd[1] * dd[1] + dd[2] * dd[2];
        let lambda = (vv - g * d[2]) / (r * r / m + (d[0] * d[0] + d[1] * d[1]) / big_m);
        vec![
            s[2],
            s[3],
            lambda * d[0] / big_m,
            lambda * d[1] / big_m,
            s[7],
            s[8],
            s[9],
            -lambda * d[0] / m,
            -lambda * d[1] / m,
            -g - lambda * d[2] / m,
        ]
    }
}

#[test]
fn cart_with_spherical_pendulum_follows_cartesian_rk4_and_keeps_its_momenta() {
    // models/gallery/cart_spherical_pendulum.hamel, state `swinging`.
    let (big_m, m, r, g) = (2.0, 0.5, 1.0, 9.81);
    let (x0, e0, w0, v0) = ([0.2, -0.1], [0.6, 0.0, -0.8], [0.5, 1.2, 0.375], [0.3, 0.1]);
    let we = cross(w0, e0);
    let s0 = [
        x0[0],
        x0[1],
        v0[0],
        v0[1],
        x0[0] + r * e0[0],
        x0[1] + r * e0[1],
        r * e0[2],
        v0[0] + r * we[0],
        v0[1] + r * we[1],
        r * we[2],
    ];
    let t = 3.0;
    let s = rk4(autonomous(cart_pendulum(big_m, m, r, g)), &s0, t, 60_000);
    // hamel's coordinates (x, y, e) from the Cartesian state.
    let want = [s[0], s[1], (s[4] - s[0]) / r, (s[5] - s[1]) / r, s[6] / r];
    for (label, sys) in systems("cart_spherical_pendulum", &KINEMATICS) {
        let errs: Vec<f64> = [0.01, 0.005]
            .iter()
            .map(|&h| {
                max_diff(
                    simulate(&sys, "swinging", h, (t / h).round() as u64).q.last().unwrap(),
                    &want,
                )
            })
            .collect();
        let order = (errs[0] / errs[1]).log2();
        let r = simulate(&sys, "swinging", 0.005, 600);
        let (px, py, jz, energy, length) = (
            drift(&r, "px"),
            drift(&r, "py"),
            drift(&r, "Jz"),
            r.monitor.get("energy").unwrap().max_rel_error,
            drift(&r, "length"),
        );
        eprintln!(
            "{label}: |(x, y, e) − rk4| {:.2e} (h = 0.01), {:.2e} (h = 0.005), order {order:.2}; drifts at h = 0.005: p_x {px:.1e}, p_y {py:.1e}, J_z {jz:.1e}, energy (rel) {energy:.1e}, |e| {length:.1e}",
            errs[0], errs[1]
        );
        assert!(
            errs[1] < 5e-3 && (order - 2.0).abs() < 0.2,
            "{label}: {errs:?}, order {order}"
        );
        // Translations are a symmetry of each step: the horizontal momentum
        // is kept to round-off by both kinematics.
        assert!(px < 1e-12 && py < 1e-12 && length < 1e-13, "{label}");
        // The rotation about the vertical and the energy: O(h²) at most
        // (measured at h = 0.005: J_z 6e-12 averaged, 2e-6 midpoint; energy 2e-6, 8e-6).
        assert!(jz < 1e-5 && energy < 3e-5, "{label}: J_z {jz:e}, energy {energy:e}");
    }
}

#[test]
fn planar_body_in_se2_throws_its_centre_of_mass_on_a_parabola() {
    // models/gallery/planar_body.hamel: the centre of mass, a ahead of (x, y)
    // along the body axis, falls freely; the body turns at a constant rate.
    let (a, g) = (0.4, 9.81);
    let (th0, u0, v0, om0) = (0.3f64, 2.0, 3.0, 4.0);
    let c0 = [a * th0.cos(), a * th0.sin()];
    let vc = [
        th0.cos() * u0 - th0.sin() * (v0 + a * om0),
        th0.sin() * u0 + th0.cos() * (v0 + a * om0),
    ];
    let t = 2.0;
    let want = [c0[0] + vc[0] * t, c0[1] + vc[1] * t - 0.5 * g * t * t, th0 + om0 * t];
    let centre = |q: &[f64]| [q[0] + a * q[2].cos(), q[1] + a * q[2].sin(), q[2]];
    for (label, sys) in systems("planar_body", &KINEMATICS) {
        let errs: Vec<f64> = [0.004, 0.002]
            .iter()
            .map(|&h| {
                let r = simulate(&sys, "thrown", h, (t / h).round() as u64);
                max_diff(&centre(r.q.last().unwrap()), &want)
            })
            .collect();
        let order = (errs[0] / errs[1]).log2();
        let r = simulate(&sys, "thrown", 0.002, 1000);
        let (spin, energy) = (drift(&r, "spin"), r.monitor.get("energy").unwrap().max_rel_error);
        eprintln!(
            "{label}: |centre − parabola| {:.2e} (h = 0.004), {:.2e} (h = 0.002), order {order:.2}; drifts at h = 0.002: ω {spin:.1e}, energy (rel) {energy:.1e}",
            errs[0], errs[1]
        );
        assert!(
            errs[1] < 1e-3 && (order - 2.0).abs() < 0.2,
            "{label}: {errs:?}, order {order}"
        );
        assert!(spin < 1e-12, "{label}: {spin:e}");
        // O(h²): measured 5e-5 averaged, 9e-7 midpoint at h = 0.002.
        assert!(energy < 2e-4, "{label}: {energy:e}");
    }
}
