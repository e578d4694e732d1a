//! The derive's default scheme is the discrete Hamel scheme with midpoint
//! kinematics: without `scheme`, and with `scheme = "hamel"`.

use hamel::{simulate, Integrator, Kernels};

#[derive(Integrator)]
#[hamel(simd = false, model = "models/gallery/kepler.hamel")]
pub struct Unnamed {
    pub m: f64,
    pub k: f64,
}

#[derive(Integrator)]
#[hamel(simd = false, model = "models/gallery/kepler.hamel", scheme = "hamel")]
pub struct Named {
    pub m: f64,
    pub k: f64,
}

#[test]
fn derive_defaults_to_the_midpoint_form() {
    let (a, b) = (Unnamed::with_defaults(), Named::with_defaults());
    assert_eq!(a.scheme(), "hamel_midpoint");
    assert_eq!(b.scheme(), "hamel_midpoint");
    let mut s = a.initial("perihelion").unwrap();
    let run = simulate(&a, &mut s, 0.01, 1000, |_| {}).unwrap();
    // Angular momentum of the rotation symmetry: round-off (README "Schemes").
    let l = run.monitor.get("L").unwrap();
    assert!(l.max_abs_error < 1e-12 * l.initial.abs(), "{:e}", l.max_abs_error);
}
