//! A scheme rejects a model it cannot handle, saying why.

use hamel_compiler::scheme::Scheme;

fn derive_err(scheme: &str, kin: Option<&str>, src: &str) -> String {
    let model = hamel_compiler::load("models/x.hamel", src).unwrap();
    Scheme::from_names(scheme, kin).unwrap().derive(&model).unwrap_err().0
}

const BODY: &str = "model s { parameters { m = 1 } coordinates { gamma: vec3 } velocities { xi: vec3 }
    frame { gamma' = cross(gamma, xi) } lagrangian = 0.5 * m * dot(xi, xi) - gamma[2] }";
const ANGLES_WITH_CONSTRAINT: &str = "model a { coordinates { th, ph } lagrangian = th'^2 + sin(th)^2 * ph'^2
    holonomic th^2 + ph^2 = 1 }";
const FREE: &str = "model f { coordinates { x: vec3 } lagrangian = 0.5 * dot(x', x') - x[2] }";
const GYRO: &str =
    "model y { coordinates { x: vec3 } lagrangian = 0.5 * dot(x', x') + x[0] * x'[1] holonomic norm2(x) = 1 }";

#[test]
fn rattle_and_stormer_verlet_need_generalized_coordinates() {
    let e = derive_err("rattle", None, BODY);
    assert!(
        e.contains("rattle needs a model in generalized coordinates") && e.contains("models/x.hamel"),
        "{e}"
    );
    let e = derive_err("stormer_verlet", None, BODY);
    assert!(
        e.contains("stormer_verlet needs a model in generalized coordinates"),
        "{e}"
    );
}

#[test]
fn rattle_and_energy_momentum_take_free_models_and_energy_momentum_needs_a_constant_mass_matrix() {
    // Without constraints they are velocity Verlet and a discrete-gradient
    // method: explicit for a linear force.
    let model = hamel_compiler::load("models/x.hamel", FREE).unwrap();
    for s in ["rattle", "energy_momentum"] {
        let sys = Scheme::from_names(s, None).unwrap().derive(&model).unwrap();
        assert_eq!((sys.state.len(), sys.unknowns.len()), (6, 0), "{s}");
    }
    let e = derive_err("energy_momentum", None, ANGLES_WITH_CONSTRAINT);
    assert!(
        e.contains("energy_momentum needs a constant mass matrix; the mass matrix of models/x.hamel depends on the coordinates"),
        "{e}"
    );
    let e = derive_err("energy_momentum", None, GYRO);
    assert!(e.contains("linear in the velocities"), "{e}");
}

#[test]
fn rattle_takes_any_regular_lagrangian_with_holonomic_constraints() {
    // A mass matrix that depends on the coordinates, or a term linear in the
    // velocities (once refused: "rattle needs L = ½ q̇ᵀ M q̇ − V(q)"), takes
    // RATTLE's general form: stage velocities, both multipliers and the end
    // velocity are unknowns (5n + 2c), the state is (q, p).
    for (src, n) in [(ANGLES_WITH_CONSTRAINT, 2), (GYRO, 3)] {
        let model = hamel_compiler::load("models/x.hamel", src).unwrap();
        let sys = Scheme::from_names("rattle", None).unwrap().derive(&model).unwrap();
        assert_eq!(sys.state.len(), 2 * n, "{src}");
        assert!(!sys.unknowns.is_empty() && sys.unknowns.len() <= 5 * n + 2, "{src}");
    }
}

#[test]
fn unknown_names_are_listed() {
    let e = Scheme::from_names("rk4", None).unwrap_err().0;
    assert!(
        e.contains("available: hamel (= hamel_midpoint), hamel_midpoint, hamel_averaged, stormer_verlet, rattle, energy_momentum"),
        "{e}"
    );
    let e = Scheme::from_names("hamel", Some("leapfrog")).unwrap_err().0;
    assert!(e.contains("`midpoint` or `averaged`"), "{e}");
    let e = Scheme::from_names("rattle", Some("midpoint")).unwrap_err().0;
    assert!(e.contains("hamel scheme only"), "{e}");
}
