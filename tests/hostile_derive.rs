//! The hostile campaign's inputs through the derive, refused as the other
//! hosts refuse them: an initial value that is NaN, a subnormal parameter, a
//! start where a non-quadratic kinetic term's Hessian vanishes.

use hamel::Integrator;

#[derive(Integrator)]
#[hamel(model = "tests/models/nan_start.hamel")]
pub struct NanStart {
    pub m: f64,
    pub l: f64,
    pub g: f64,
}

#[derive(Integrator)]
#[hamel(model = "tests/models/quartic_at_rest.hamel", scheme = "hamel_averaged")]
pub struct Quartic {
    pub m: f64,
    pub l: f64,
    pub g: f64,
}

#[derive(Integrator)]
#[hamel(model = "models/gallery/planar_pendulum.hamel")]
pub struct Planar {
    pub m: f64,
    pub l: f64,
    pub g: f64,
}

#[test]
fn an_initial_value_that_is_nan_compiles_and_is_refused_by_name() {
    let e = NanStart::with_defaults().initial("released").err().unwrap().to_string();
    assert!(e.contains("initial value of `th` is not finite"), "{e}");
}

#[test]
fn a_subnormal_parameter_is_refused_by_name() {
    let p = Planar {
        m: 1e-320,
        l: 1.0,
        g: 9.81,
    };
    let e = p.initial_state([0.3], [0.0]).err().unwrap().to_string();
    assert!(e.starts_with("parameter `m` = 1e-320 is subnormal"), "{e}");
    let p = Planar {
        m: 1.0,
        l: 1.0,
        g: 2.3e-308,
    };
    assert!(
        p.initial_state([0.3], [0.0]).is_ok(),
        "the smallest normal double is a value"
    );
}

#[test]
fn a_kinetic_term_whose_hessian_vanishes_is_refused_as_the_cli_refuses_it() {
    // hamel_averaged formed a state from th' = 0 and ran; the CLI and Python
    // refuse the start. One rule: refused, with the cause.
    let q = Quartic::with_defaults();
    let e = q.initial("released").err().unwrap().to_string();
    assert!(e.contains("kinetic term in th' is not quadratic"), "{e}");
    assert!(e.contains("vanishes at this state (th' = 0)"), "{e}");
    // where it does not vanish, it starts
    assert!(q.initial_state([2.0], [0.5]).is_ok());
}
