//! The body-frame spherical pendulum (theory §2.3): the published run and its
//! exactly conserved quantities, in both kinematics.

use hamel::{Integrator, Monitor, StepSystem};

#[derive(Integrator)]
#[hamel(
    model = "models/spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "averaged"
)]
pub struct Averaged {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

#[derive(Integrator)]
#[hamel(
    model = "models/spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
)]
pub struct Midpoint {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

#[test]
fn smoke() {
    let model = Averaged::with_defaults();
    let mut state = model.initial("published").unwrap();
    let mut stepper = model.stepper(0.2).unwrap();
    let mut mon = Monitor::new(model.invariant_info());
    mon.observe(&model.invariants(&state).unwrap());
    for _ in 0..10_000 {
        stepper.step(&mut state).unwrap();
        mon.observe(&model.invariants(&state).unwrap());
    }
    for r in mon.reports() {
        println!("{r:?}");
    }
    println!("{}", stepper.stats.mean());
    let m2 = Midpoint::with_defaults();
    let mut s2 = m2.initial("published").unwrap();
    let mut st2 = m2.stepper(0.2).unwrap();
    let mut mon2 = Monitor::new(m2.invariant_info());
    mon2.observe(&m2.invariants(&s2).unwrap());
    for _ in 0..10_000 {
        st2.step(&mut s2).unwrap();
        mon2.observe(&m2.invariants(&s2).unwrap());
    }
    for r in mon2.reports() {
        println!("{r:?}");
    }
    println!("{}", st2.stats.mean());
}
