//! A step whose Newton solve fails from the extrapolated guess is solved
//! again from the scheme's own predictor, with nothing remembered
//! (`newton::step::restart`): the 32-link director chain under the averaged
//! Hamel step at h = 0.01 from `tilted`, whose outer links whip, failed at
//! step 803 without it. The steps it rescues continue the same motion: the
//! links keep unit length and their spin constraint to round-off, and the
//! energy error stays within what it was before the first restart.

use hamel_load::{compile, read_model, Backend};
use hamel_runtime::DynStepper;

#[test]
fn a_failed_solve_is_restarted_from_the_plain_predictor() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/spherical_chain.hamel");
    let model = read_model(path.as_ref(), &[("N".into(), 32)]).unwrap();
    let sys = compile(&model, "hamel_averaged".parse().unwrap(), Backend::Jit).unwrap();
    let names: Vec<String> = sys.compiled().invariants.iter().map(|(n, _)| n.clone()).collect();
    let energy = names.iter().position(|n| n == "energy").expect("an energy");
    let mut s = sys.initial("tilted").unwrap();
    let e0 = sys.invariants(&s.z, 0).unwrap()[energy];
    let mut st = DynStepper::new(&sys, 0.01).unwrap();
    let (mut before, mut after) = (0.0f64, 0.0f64);
    for _ in 0..1000 {
        st.step(&mut s).unwrap();
        let values = sys.invariants(&s.z, s.step).unwrap();
        let de = ((values[energy] - e0) / e0).abs();
        if st.stats.restarts == 0 {
            before = before.max(de);
        } else {
            after = after.max(de);
        }
        for (name, v) in names.iter().zip(&values) {
            if name.starts_with("length") {
                assert!((v - 1.0).abs() < 1e-12, "step {}: {name} = {v}", s.step);
            } else if name != "energy" && name != "J" {
                assert!(v.abs() < 1e-12, "step {}: constraint {name} = {v:e}", s.step);
            }
        }
    }
    assert!(st.stats.restarts >= 1, "no step needed a restart: {:?}", st.stats);
    assert!(
        after <= 2.0 * before,
        "energy error {after:e} after the restart, {before:e} before"
    );
}
