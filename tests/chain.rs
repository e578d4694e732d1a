//! n-link spherical chains from one model file with a size `N`.

#[macro_use]
mod common;

use hamel::{simulate, Integrator};

#[derive(Integrator)]
#[hamel(simd = false, model = "models/spherical_chain.hamel", N = 1)]
pub struct Chain1 {
    pub m: f64,
    pub l: f64,
    pub g: f64,
}

#[derive(Integrator)]
#[hamel(simd = false, model = "models/spherical_chain.hamel", N = 2, kinematics = "midpoint")]
pub struct Chain2 {
    pub m: f64,
    pub l: f64,
    pub g: f64,
}

#[derive(Integrator)]
#[hamel(simd = false, model = "models/spherical_chain.hamel", N = 8, sensitivity = false)]
pub struct Chain8 {
    pub m: f64,
    pub l: f64,
    pub g: f64,
}

pendulum!(Director, model = "models/spherical_pendulum_director.hamel");

double_pendulum!(
    Dsp,
    model = "models/double_spherical_pendulum.hamel",
    kinematics = "midpoint"
);

#[test]
fn one_link_chain_is_the_spherical_pendulum() {
    let c = Chain1 { m: 1.0, l: 9.8, g: 9.8 };
    let d = Director::with_defaults();
    let (q, v) = d.initial_conditions("published").unwrap();
    let (mut sc, mut sd) = (c.initial_state(q, v).unwrap(), d.initial_state(q, v).unwrap());
    simulate(&c, &mut sc, 0.2, 1000, |_| {}).unwrap();
    simulate(&d, &mut sd, 0.2, 1000, |_| {}).unwrap();
    let diff = (sc.z - sd.z).amax();
    println!("N = 1 chain vs director pendulum after 1000 steps: {diff:.2e}");
    assert!(diff < 1e-12);
}

#[test]
fn two_link_chain_is_the_double_pendulum_with_equal_links() {
    let c = Chain2 {
        m: 2.0,
        l: 3.0,
        g: 9.81,
    };
    let d = Dsp {
        m1: 2.0,
        m2: 2.0,
        l1: 3.0,
        l2: 3.0,
        g: 9.81,
    };
    let (q, v) = c.initial_conditions("tilted").unwrap();
    let (mut sc, mut sd) = (c.initial_state(q, v).unwrap(), d.initial_state(q, v).unwrap());
    simulate(&c, &mut sc, 0.01, 500, |_| {}).unwrap();
    simulate(&d, &mut sd, 0.01, 500, |_| {}).unwrap();
    let diff = (sc.z - sd.z).amax();
    println!("N = 2 chain vs double pendulum model after 500 steps: {diff:.2e}");
    assert!(diff < 1e-11);
}

#[test]
fn eight_link_chain_runs_and_keeps_its_constraints() {
    let c = Chain8::with_defaults();
    let mut s = c.initial("tilted").unwrap();
    let run = simulate(&c, &mut s, 0.005, 400, |_| {}).unwrap();
    let m = &run.monitor;
    let worst_len = (1..=8)
        .map(|i| m.get(&format!("length[{i}]")).unwrap().max_abs_error)
        .fold(0.0, f64::max);
    let worst_c = m
        .reports()
        .iter()
        .filter(|r| r.name.starts_with("constraint"))
        .map(|r| r.max_abs_error)
        .fold(0.0, f64::max);
    println!(
        "N = 8: |e_i| − 1 ≤ {worst_len:.1e}, <w_i, e_i> ≤ {worst_c:.1e}, energy rel {:.2e}, Newton {:.2}/step",
        m.get("energy").unwrap().max_rel_error,
        run.newton.mean()
    );
    assert!(worst_len < 1e-13 && worst_c < 1e-12);
    assert!(m.get("energy").unwrap().max_rel_error < 1e-2);
}

#[test]
fn sensitivity_can_be_left_out() {
    // `sensitivity = false` emits no step-map sensitivity (half the code for chains);
    // asking for it is an error, and the state is left as it was.
    let c = Chain8::with_defaults();
    let mut s = c.initial("tilted").unwrap();
    let before = s;
    let mut stepper = c.stepper(0.005).unwrap();
    let e = stepper.step_with_sensitivity(&mut s).unwrap_err().to_string();
    assert!(e.contains("provides no step-map sensitivities"), "{e}");
    assert_eq!(s, before);
}
