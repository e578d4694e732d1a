//! Midpoint or averaged kinematics on a Lagrangian that does not depend on
//! the coordinates (the Chaplygin sleigh): midpoint keeps the energy to
//! round-off, averaged to O(h²) — the study behind the recommendation of
//! `hamel check` and docs/schemes.md.

use hamel_load::{compile, initial, read_model, run, Backend, RunOptions};

fn energy_error(scheme: &str, h: f64) -> f64 {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/chaplygin_sleigh.hamel");
    let model = read_model(path.as_ref(), &[]).unwrap();
    let sys = compile(&model, scheme.parse().unwrap(), Backend::Interpreter).unwrap();
    let (state, label) = initial(&sys, None, &[]).unwrap();
    let opt = RunOptions {
        h,
        steps: (50.0 / h) as u64,
        compensated: false,
        record_every: 0,
        inputs: None,
        newton: Default::default(),
    };
    run(&sys, state, label, &opt).unwrap().monitor.reports()[0].max_rel_error
}

#[test]
fn sleigh_energy_midpoint_exact_averaged_second_order() {
    for h in [0.01, 0.05] {
        let mid = energy_error("hamel_midpoint", h);
        assert!(mid < 1e-13, "midpoint, h = {h}: {mid:e}");
    }
    let (a1, a5) = (
        energy_error("hamel_averaged", 0.01),
        energy_error("hamel_averaged", 0.05),
    );
    // Measured: 1.389e-5 and 3.472e-4, a ratio of 25.0 = (0.05 / 0.01)².
    assert!(a1 > 1e-6 && a1 < 1e-4, "{a1:e}");
    let order = (a5 / a1).ln() / 5f64.ln();
    assert!((order - 2.0).abs() < 0.05, "averaged energy error order {order}");
}
