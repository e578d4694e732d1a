//! Rheonomic models (time `t` in the Lagrangian or a holonomic constraint)
//! as the textbooks write them are refused with a located message that says
//! what is missing and what to write instead (issue 26, item 6: not yet
//! integrated; see the message).

fn error_of(src: &str) -> String {
    hamel_compiler::load("r.hamel", src).unwrap_err().to_string()
}

#[test]
fn a_pendulum_with_a_driven_support_names_the_missing_pieces() {
    // Landau–Lifshitz §5 problem 3: the support moves as a cos(wt) vertically
    // (its kinetic term −m l a w sin(wt) sin θ θ'; the rest a total derivative
    // and a function of t alone).
    let e = error_of(
        "model driven {
            parameters { m = 1.0, l = 1.0, g = 9.81, a = 0.1, w = 20.0 }
            coordinates { th }
            lagrangian = 0.5 * m * l^2 * th'^2 - m * l * a * w * sin(w * t) * sin(th) * th' + m * g * l * cos(th)
            initial hanging { th = 0.1, th' = 0 }
        }",
    );
    assert!(
        e.contains("the Lagrangian depends on time `t` (a rheonomic system)"),
        "{e}"
    );
    assert!(e.contains("r.hamel:4:26"), "{e}");
    for what in [
        "recovery of velocities",
        "invariants",
        "−∂L/∂t",
        "moving frame",
        "rotating_hoop.hamel",
    ] {
        assert!(e.contains(what), "{what}: {e}");
    }
}

#[test]
fn a_bead_on_a_hoop_turned_at_a_prescribed_rate_is_refused_with_the_same_reason() {
    // Goldstein §2.6: the hoop's plane turns about the vertical at ω; the
    // bead's position x in space, two holonomic constraints, one with t.
    let e = error_of(
        "model hoop {
            parameters { m = 1.0, R = 0.5, g = 9.81, omega = 6.0 }
            coordinates { x: vec3 }
            lagrangian = 0.5 * m * dot(x', x') - m * g * x[2]
            holonomic norm2(x) = R^2
            holonomic -sin(omega * t) * x[0] + cos(omega * t) * x[1] = 0
            initial s { x = (R * sin(0.3), 0, -R * cos(0.3)), x' = (0, R * omega * sin(0.3), 0) }
        }",
    );
    assert!(
        e.contains("a constraint depends on time `t` (a rheonomic system)"),
        "{e}"
    );
    assert!(e.contains("r.hamel:6"), "{e}");
}
