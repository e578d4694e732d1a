//! Compensated summation on the published run (docs/schemes.md §2): plain float64 vs
//! TwoSum-compensated state updates, with residual and increment evaluated in
//! double-double at the compensated state.

use hamel::{simulate_with, Integrator, RunSummary};

#[derive(Integrator)]
#[hamel(simd = false, model = "models/spherical_pendulum.hamel", kinematics = "averaged")]
pub struct Pendulum {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

fn run(steps: u64, compensated: bool) -> RunSummary {
    let m = Pendulum::with_defaults();
    let mut s = m.initial("published").unwrap();
    let stepper = m.stepper(0.2).unwrap().with_compensation(compensated);
    simulate_with(stepper, &mut s, steps, |_| {}).unwrap()
}

fn errors(r: &RunSummary) -> (f64, f64, f64) {
    let m = &r.monitor;
    let len = m.get("length").unwrap();
    (
        m.get("energy").unwrap().max_rel_error,
        (len.max - 1.0).abs().max((len.min - 1.0).abs()),
        m.get("J").unwrap().max_rel_error,
    )
}

#[test]
fn compensation_lowers_round_off_drift() {
    let (ep, lp, jp) = errors(&run(10_000, false));
    let (ec, lc, jc) = errors(&run(10_000, true));
    println!("10^4 steps plain:       energy {ep:.2e}  |‖γ‖−1| {lp:.2e}  J {jp:.2e}");
    println!("10^4 steps compensated: energy {ec:.2e}  |‖γ‖−1| {lc:.2e}  J {jc:.2e}");
    assert!(ec < ep && lc < lp);
    assert!(ec <= 1e-15, "compensated energy error {ec:e}");
    assert!(lc <= 1e-15, "compensated length error {lc:e}");
}

#[test]
#[ignore = "long study: cargo test --release --test compensated -- --ignored --nocapture"]
fn compensation_study() {
    for steps in [10_000u64, 100_000, 1_000_000] {
        let (ep, lp, jp) = errors(&run(steps, false));
        let (ec, lc, jc) = errors(&run(steps, true));
        println!("{steps:>8} plain: energy {ep:.2e} |‖γ‖−1| {lp:.2e} J {jp:.2e} | compensated: energy {ec:.2e} |‖γ‖−1| {lc:.2e} J {jc:.2e}");
    }
}
