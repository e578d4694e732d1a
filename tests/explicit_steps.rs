//! Derived code for steps with no Newton unknowns (every unknown eliminated
//! by the compiler): the projectile in every scheme that applies, Kepler
//! under Störmer–Verlet. These once panicked in the LU on their first step.
//! Checked against the closed-form parabola and the conservation of angular
//! momentum, not against hamel's own output.

use hamel::{simulate, Integrator};

macro_rules! projectile {
    ($name:ident, $($key:ident = $val:literal),*) => {
        #[derive(Integrator)]
        #[hamel(simd = false, model = "models/gallery/projectile.hamel", $($key = $val),*)]
        pub struct $name {
            pub m: f64,
            pub g: f64,
        }
    };
}

projectile!(Averaged, scheme = "hamel", kinematics = "averaged");
projectile!(Midpoint, scheme = "hamel", kinematics = "midpoint");
projectile!(Verlet, scheme = "stormer_verlet");

#[derive(Integrator)]
#[hamel(simd = false, model = "models/gallery/kepler.hamel", scheme = "stormer_verlet")]
pub struct Kepler {
    pub m: f64,
    pub k: f64,
}

#[test]
fn derived_explicit_steps_follow_the_parabola() {
    let (g, h, steps) = (9.81, 0.01, 200u64);
    let t = h * steps as f64;
    let want = [3.0 * t, 1.0 + 4.0 * t - 0.5 * g * t * t, 3.0, 4.0 - g * t];
    macro_rules! check {
        ($ty:ident) => {{
            let m = $ty::with_defaults();
            let mut s = m.initial("throw").unwrap();
            let run = simulate(&m, &mut s, h, steps, |_| {}).unwrap();
            let (q, v) = m.physical(&s).unwrap();
            let got = [q[0], q[1], v[0], v[1]];
            let err = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            println!("{}: |error| {err:.2e}", stringify!($ty));
            assert!(err < 1e-11, "{}: {err:e}", stringify!($ty));
            assert_eq!(run.newton.mean(), 0.0);
        }};
    }
    check!(Averaged);
    check!(Midpoint);
    check!(Verlet);
}

#[test]
fn derived_explicit_kepler_keeps_its_angular_momentum() {
    let m = Kepler::with_defaults();
    let mut s = m.initial("perihelion").unwrap();
    let run = simulate(&m, &mut s, 0.001, 6283, |_| {}).unwrap();
    let l = run.monitor.get("L").unwrap().max_abs_error;
    let (q, _) = m.physical(&s).unwrap();
    println!(
        "kepler (derived, stormer_verlet): |ΔL| {l:.2e}, after one period at ({:.6}, {:.6})",
        q[0], q[1]
    );
    assert!(l < 1e-13, "{l:e}");
    // One period (2π) returns to perihelion (0.4, 0) up to O(h²).
    assert!((q[0] - 0.4).abs() < 1e-3 && q[1].abs() < 1e-3, "{q:?}");
}
