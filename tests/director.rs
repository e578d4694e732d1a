//! The spherical pendulum with a spatial director (docs/schemes.md §2, one link): a
//! velocity constraint ⟨w, e⟩ = 0 with a multiplier and a non-vanishing bracket
//! term. Averaged kinematics reproduces the body-frame model exactly; midpoint
//! agrees to O(h²).

#[macro_use]
mod common;

use hamel::simulate;

pendulum!(
    DirectorAveraged,
    model = "models/spherical_pendulum_director.hamel",
    kinematics = "averaged"
);

pendulum!(
    DirectorMidpoint,
    model = "models/spherical_pendulum_director.hamel",
    kinematics = "midpoint"
);

pendulum!(Body, model = "models/spherical_pendulum.hamel", kinematics = "averaged");

fn heights_body(steps: u64, h: f64) -> Vec<f64> {
    let m = Body::with_defaults();
    let mut s = m.initial("published").unwrap();
    let mut out = Vec::new();
    simulate(&m, &mut s, h, steps, |st| out.push(9.8 * st.z[2])).unwrap();
    out
}

#[test]
fn averaged_director_form_equals_the_body_frame_model() {
    let m = DirectorAveraged::with_defaults();
    let mut s = m.initial("published").unwrap();
    let mut heights = Vec::new();
    let run = simulate(&m, &mut s, 0.2, 2000, |st| heights.push(9.8 * st.z[2])).unwrap();
    let body = heights_body(2000, 0.2);
    let diff = heights
        .iter()
        .zip(&body)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    let mon = &run.monitor;
    println!(
        "director(averaged) vs body: max |Δheight| = {diff:.2e}; energy {:.2e}, J {:.2e}, |e| {:.2e}, <w,e> {:.2e}",
        mon.get("energy").unwrap().max_rel_error,
        mon.get("J").unwrap().max_rel_error,
        mon.get("length").unwrap().max_abs_error,
        mon.get("constraint 1").unwrap().max_abs_error
    );
    assert!(diff < 1e-12, "{diff:e}");
    assert!(mon.get("length").unwrap().max_abs_error < 1e-13);
    assert!(mon.get("constraint 1").unwrap().max_abs_error < 1e-13);
    assert!(mon.get("energy").unwrap().max_rel_error < 1e-13);
    assert!(mon.get("J").unwrap().max_rel_error < 1e-12);
}

#[test]
fn midpoint_director_form_agrees_to_second_order() {
    let m = DirectorMidpoint::with_defaults();
    let mut diffs = Vec::new();
    for h in [0.1, 0.05, 0.025] {
        let steps = (8.0 / h) as u64;
        let mut s = m.initial("published").unwrap();
        let mut heights = Vec::new();
        let run = simulate(&m, &mut s, h, steps, |st| heights.push(9.8 * st.z[2])).unwrap();
        assert!(run.monitor.get("length").unwrap().max_abs_error < 1e-13);
        assert!(run.monitor.get("constraint 1").unwrap().max_abs_error < 1e-13);
        // Reference: the body-frame model at a 16× finer step.
        let fine = heights_body(steps * 16, h / 16.0);
        let d = heights
            .iter()
            .enumerate()
            .map(|(k, y)| (y - fine[k * 16]).abs())
            .fold(0.0, f64::max);
        diffs.push(d);
    }
    println!("midpoint director vs fine body reference: {diffs:?}");
    for w in diffs.windows(2) {
        let ratio = w[0] / w[1];
        assert!((3.3..=4.7).contains(&ratio), "ratio {ratio}");
    }
}
