//! Hostile-campaign findings 3 and 4 at the compiler: `0/0` is NaN (not 0)
//! and a component given twice in an initial state is refused with its place;
//! a parameter default no step can use (non-finite, subnormal) is refused once.

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

/// A pendulum whose mass default is `mass`.
fn pendulum_of_mass(mass: &str) -> String {
    pendulum("th = 1.0, th' = 0").replacen("m = 1.0", &format!("m = {mass}"), 1)
}

#[test]
fn a_subnormal_parameter_default_is_refused_once_with_its_place() {
    // 1e-320 is a subnormal double: 1/m overflows and m² is 0, so a step
    // either fails non-finite or drops the term. One error, at the value.
    let e = hamel_compiler::load("tiny.hamel", &pendulum_of_mass("1e-320")).unwrap_err();
    assert_eq!(e.0.len(), 1, "the uses of `m` add no 'unknown name': {e:?}");
    let d = &e.0[0];
    assert!(d.message.starts_with("parameter `m` = 1e-320 is subnormal"), "{d}");
    assert!(d.to_string().contains("--> tiny.hamel:2:22"), "{d}");
    // So is a non-finite default, also once.
    let e = hamel_compiler::load("nan.hamel", &pendulum_of_mass("0/0")).unwrap_err();
    assert_eq!(e.0.len(), 1, "{e:?}");
    assert!(e.0[0].message.contains("must be a finite number"), "{}", e.0[0]);
    // The smallest normal double and 0 are values a parameter may hold.
    hamel_compiler::load("min.hamel", &pendulum_of_mass("2.3e-308")).unwrap();
    hamel_compiler::load("zero.hamel", &pendulum_of_mass("0")).unwrap();
}
