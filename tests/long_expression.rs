//! The derive on a Lagrangian of 14 000 chained operators (hostile campaign,
//! finding 1): it crashed rustc ("rustc unexpectedly overflowed its stack");
//! it now compiles, and the chain, which cancels, leaves the plain pendulum.

use hamel::{simulate, Integrator};

#[derive(Integrator)]
#[hamel(model = "tests/models/long_sum.hamel", scheme = "energy_momentum")]
pub struct LongSum {
    pub m: f64,
    pub g: f64,
}

#[test]
fn a_long_chain_derives_and_steps_as_the_pendulum() {
    let model = LongSum::with_defaults();
    let mut s = model.initial("released").unwrap();
    let run = simulate(&model, &mut s, 0.01, 100, |_| {}).unwrap();
    // E = th'^2/2 - g cos(th), conserved by energy_momentum to round-off
    let e = run.monitor.get("energy").unwrap();
    assert!((e.initial + 9.81 * 0.3f64.cos()).abs() < 1e-12, "{}", e.initial);
    assert!(e.max_abs_error < 1e-10, "{:e}", e.max_abs_error);
}
