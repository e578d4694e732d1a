//! Hostile-campaign findings 3 and 4 at the compiler: `0/0` is NaN (not 0)
//! and a component given twice in an initial state is refused with its place.

fn pendulum(initial: &str) -> String {
    format!(
        "model pend {{\n    parameters {{ m = 1.0, g = 9.81 }}\n    coordinates {{ th }}\n    lagrangian = 0.5 * m * th'^2 + m * g * cos(th)\n    initial released {{ {initial} }}\n}}\n"
    )
}

#[test]
fn a_component_given_twice_in_an_initial_state_is_refused() {
    let e = hamel_compiler::load("dup.hamel", &pendulum("th = 2.0, th = 1.0, th' = 0")).unwrap_err();
    let d = &e.0[0];
    assert!(
        d.message
            .contains("`th` is given twice in initial state `released` (first at line 5, column 24)"),
        "{d}"
    );
    assert!(d.to_string().contains("--> dup.hamel:5:34"), "{d}");
    // a coordinate and its velocity are different components
    hamel_compiler::load("ok.hamel", &pendulum("th = 2.0, th' = 0")).unwrap();
}

#[test]
fn zero_over_zero_in_an_initial_state_is_nan() {
    let m = hamel_compiler::load("nan.hamel", &pendulum("th = 0/0, th' = 0")).unwrap();
    let th = m.initials[0].q[0];
    assert!(m.graph.eval(th, &|_| 1.0).is_nan());
}
