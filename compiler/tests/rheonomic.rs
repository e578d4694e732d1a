//! Rheonomic models (issue 26, item 6): time `t` in the Lagrangian or in a
//! holonomic constraint, as the textbooks write them, loads and derives
//! under every scheme whose form it has; time where hamel does not take it
//! (a frame, a velocity constraint, an invariant) is a located error.

use hamel_compiler::scheme::Scheme;

fn error_of(src: &str) -> String {
    hamel_compiler::load("r.hamel", src).unwrap_err().to_string()
}

/// Landau–Lifshitz §5 problem 3: the support moves as a cos(wt) vertically
/// (its kinetic term −m l a w sin(wt) sin θ θ'; the rest a total derivative
/// and a function of t alone).
const DRIVEN: &str = "model driven {
    parameters { m = 1.0, l = 1.0, g = 9.81, a = 0.1, w = 20.0 }
    coordinates { th }
    lagrangian = 0.5 * m * l^2 * th'^2 - m * l * a * w * sin(w * t) * sin(th) * th' + m * g * l * cos(th)
    initial hanging { th = 0.1, th' = 0 }
}";

/// Goldstein §2.6: the hoop's plane turns about the vertical at ω; the
/// bead's position x in space, two holonomic constraints, one with t.
const HOOP: &str = "model hoop {
    parameters { m = 1.0, R = 0.5, g = 9.81, omega = 6.0 }
    coordinates { x: vec3 }
    lagrangian = 0.5 * m * dot(x', x') - m * g * x[2]
    holonomic norm2(x) = R^2
    holonomic -sin(omega * t) * x[0] + cos(omega * t) * x[1] = 0
    initial s { x = (R * sin(0.3), 0, -R * cos(0.3)), x' = (0, R * omega * sin(0.3), 0) }
}";

/// The schemes that derive `src`, by name, and that each step carries its time.
fn derived(src: &str) -> Vec<&'static str> {
    let m = hamel_compiler::load("r.hamel", src).unwrap();
    assert!(m.is_rheonomic());
    Scheme::LIST
        .into_iter()
        .filter_map(|s| {
            let sys = s.derive(&m).ok()?;
            let (slot, _) = sys.time.expect("a rheonomic step carries its time");
            assert_eq!(sys.state[slot].name, "t");
            // The energy balance has the power of the time dependence.
            assert!(sys.work.is_some(), "{s}");
            Some(s.name())
        })
        .collect()
}

#[test]
fn a_pendulum_with_a_driven_support_derives_under_every_scheme_of_its_form() {
    // Terms linear in the velocities: not energy–momentum's form.
    assert_eq!(
        derived(DRIVEN),
        ["hamel_midpoint", "hamel_averaged", "stormer_verlet", "rattle"]
    );
}

#[test]
fn a_bead_on_a_hoop_turned_at_a_prescribed_rate_derives_under_the_constrained_schemes() {
    assert_eq!(derived(HOOP), ["stormer_verlet", "rattle", "energy_momentum"]);
}

#[test]
fn time_where_hamel_does_not_take_it_is_a_located_error() {
    let frame = "model f {
    coordinates { gamma: vec3 }
    velocities { xi: vec3 }
    frame { gamma' = cross(gamma, xi) * cos(t) }
    lagrangian = 0.5 * dot(xi, xi)
}";
    let e = error_of(frame);
    assert!(e.contains("a frame equation depends on time `t`"), "{e}");
    assert!(e.contains("r.hamel:4:22"), "{e}");
    let e = error_of(&DRIVEN.replace("initial", "constraint th' = t * th'\n    initial"));
    assert!(e.contains("a velocity constraint depends on time `t`"), "{e}");
    assert!(e.contains("r.hamel:5:"), "{e}");
    let e = error_of(&DRIVEN.replace("initial", "invariant k = t * th'\n    initial"));
    assert!(e.contains("an invariant depends on time `t`"), "{e}");
    for what in ["Lagrangian", "holonomic", "force"] {
        assert!(e.contains(what), "{what}: {e}");
    }
}
