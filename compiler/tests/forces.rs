//! The model language's forces: each way of stating a force gives the covector
//! it should (virtual power), and misuse is a located error.

use hamel_compiler::sym::Graph;

/// Evaluates the model's force at symbol values given by name.
fn force(src: &str, at: &[(&str, f64)]) -> Vec<f64> {
    let m = hamel_compiler::load("f.hamel", src).unwrap_or_else(|e| panic!("{e}"));
    let f = m.force.as_ref().expect("a force");
    let g: &Graph = &m.graph;
    let val = |s: u32| {
        let n = g.symbol_name(s);
        at.iter().find(|(k, _)| *k == n).map_or(f64::NAN, |(_, v)| *v)
    };
    f.iter().map(|&e| g.eval(e, &val)).collect()
}

const PENDULUM: &str = "model p {
    parameters { m = 1, r = 2, g = 9.8, c = 0.5 }
    INPUTS
    coordinates { gamma: vec3 }
    velocities { xi: vec3 }
    frame { gamma' = cross(gamma, xi) }
    constraint xi[2] = 0
    lagrangian = 0.5 * m * r^2 * dot(xi, xi) - m * g * r * gamma[2]
    FORCE
}";

/// The pendulum with `force_items`, declaring the inputs they use (a
/// declared input no force uses is an error).
fn pendulum(force_items: &str) -> String {
    let uses = |name: &str| {
        force_items
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|w| w == name)
    };
    let inputs: Vec<&str> = [("tau", "tau"), ("u", "u: vec3")]
        .into_iter()
        .filter(|(n, _)| uses(n))
        .map(|(_, d)| d)
        .collect();
    let decl = if inputs.is_empty() {
        String::new()
    } else {
        format!("inputs {{ {} }}", inputs.join(", "))
    };
    PENDULUM.replace("FORCE", force_items).replace("INPUTS", &decl)
}

#[test]
fn each_statement_gives_its_covector() {
    let at = [
        ("gamma[0]", 0.3),
        ("gamma[1]", -0.4),
        ("gamma[2]", 0.5),
        ("xi[0]", 0.7),
        ("xi[1]", -0.2),
        ("xi[2]", 0.1),
        ("tau", 1.5),
        ("u[0]", 0.25),
        ("u[1]", -1.0),
        ("u[2]", 2.0),
        ("m", 1.0),
        ("r", 2.0),
        ("g", 9.8),
        ("c", 0.5),
        ("__t", 3.0),
    ];
    // Generalized: as written; `t` is time.
    let f = force(&pendulum("force xi = (tau, t * u[1], 0)"), &at);
    assert_eq!(f, vec![1.5, -3.0, 0.0]);
    // Rayleigh: F = −∂R/∂ξ.
    let f = force(&pendulum("dissipation = 0.5 * c * dot(xi, xi)"), &at);
    assert_eq!(f, vec![-0.35, 0.1, -0.05]);
    // A spatial force f on the bob, whose velocity in the body frame is ξ × a:
    // F = a × f (docs/schemes.md §8).
    let f = force(&pendulum("force at velocity cross(xi, (0, 0, r)) = u"), &at);
    let (a, u) = ([0.0, 0.0, 2.0], [0.25, -1.0, 2.0]);
    let expect = [
        a[1] * u[2] - a[2] * u[1],
        a[2] * u[0] - a[0] * u[2],
        a[0] * u[1] - a[1] * u[0],
    ];
    for (x, y) in f.iter().zip(expect) {
        assert!((x - y).abs() < 1e-15, "{f:?} vs {expect:?}");
    }
    // Statements add up.
    let f = force(&pendulum("force xi = (tau, 0, 0)\n force xi = (tau, 0, 0)"), &at);
    assert_eq!(f[0], 3.0);
}

#[test]
fn a_force_at_a_point_is_its_virtual_power() {
    // Cartesian bob: a force at the bob is the generalized force itself; at
    // the midpoint of the rod, half of the lever... of a point x/2: F = f/2.
    let src = "model c {
        coordinates { x: vec3 }
        inputs { f: vec3 }
        lagrangian = 0.5 * dot(x', x')
        holonomic norm2(x) = 1
        force at 0.5 * x = f
    }";
    let at = [
        ("f[0]", 1.0),
        ("f[1]", -2.0),
        ("f[2]", 4.0),
        ("x[0]", 0.1),
        ("x[1]", 0.2),
        ("x[2]", 0.3),
    ];
    assert_eq!(force(src, &at), vec![0.5, -1.0, 2.0]);
    // With a frame: the point γ r in the body frame of the pendulum moves with
    // ẋ = r γ × ξ, so F = r (f × γ)... checked against ⟨f, ∂ẋ/∂ξ^a⟩ numerically.
    let src = pendulum("force at r * gamma = u");
    let at = [
        ("gamma[0]", 0.3),
        ("gamma[1]", -0.4),
        ("gamma[2]", 0.5),
        ("u[0]", 0.25),
        ("u[1]", -1.0),
        ("u[2]", 2.0),
        ("r", 2.0),
    ];
    let f = force(&src, &at);
    let (gm, u, r) = ([0.3, -0.4, 0.5], [0.25, -1.0, 2.0], 2.0);
    // ẋ = r γ × ξ: ∂ẋ/∂ξ^a = r γ × e_a, ⟨u, r γ × e_a⟩ = r (u × γ)_a.
    let expect = [
        r * (u[1] * gm[2] - u[2] * gm[1]),
        r * (u[2] * gm[0] - u[0] * gm[2]),
        r * (u[0] * gm[1] - u[1] * gm[0]),
    ];
    for (x, y) in f.iter().zip(expect) {
        assert!((x - y).abs() < 1e-14, "{f:?} vs {expect:?}");
    }
}

fn error_of(src: &str) -> String {
    hamel_compiler::load("e.hamel", src).unwrap_err().to_string()
}

#[test]
fn misuse_is_a_located_error() {
    let e = error_of(&pendulum("force omega = (1, 0, 0)"));
    assert!(
        e.contains("`omega` is not a declared velocity") && e.contains("e.hamel:9:11"),
        "{e}"
    );
    let e = error_of(&pendulum("force xi = tau"));
    assert!(e.contains("`xi` has 3 component(s) but the force has 1"), "{e}");
    let e = error_of(&pendulum("force at cross(gamma, xi) = u"));
    assert!(e.contains("must depend on the coordinates only"), "{e}");
    let e = error_of(&pendulum("force at velocity xi * dot(xi, xi) = u"));
    assert!(e.contains("linear and homogeneous"), "{e}");
    let e = error_of(&pendulum("force xi = tau * gamma").replace("- m * g * r * gamma[2]", "- tau * gamma[2]"));
    assert!(e.contains("the Lagrangian may not depend on the inputs"), "{e}");
    let e = error_of(&pendulum("invariant work = t * tau"));
    assert!(e.contains("an invariant may not depend on the inputs"), "{e}");
    let e = error_of(&pendulum("initial s { gamma = (0, 0, t), xi = (0, 0, 0) }"));
    assert!(
        e.contains("an initial state may not depend on the inputs or on time"),
        "{e}"
    );
}

#[test]
fn an_input_no_force_uses_is_a_located_error() {
    let src = pendulum("force xi = tau * gamma").replace("inputs { tau }", "inputs { tau, spare }");
    let e = error_of(&src);
    assert!(
        e.contains("input `spare` is declared but no `force` uses it") && e.contains("e.hamel:3:19"),
        "{e}"
    );
}

#[test]
fn a_parameter_named_t_is_not_time() {
    let src = pendulum("force xi = (t, 0, 0)").replace("c = 0.5", "t = 0.5");
    let f = force(&src, &[("t", 0.5), ("__t", 7.0)]);
    assert_eq!(f[0], 0.5);
}
