//! Störmer–Verlet (general and index-reduced) and RATTLE, derived from the same
//! model files as the Hamel integrator (docs/schemes.md §3, §4).

#[macro_use]
mod common;

use hamel::{simulate, State, StepSystem};

pendulum!(
    Rattle,
    model = "models/spherical_pendulum_cartesian.hamel",
    scheme = "rattle"
);

pendulum!(
    SvCartesian,
    model = "models/spherical_pendulum_cartesian.hamel",
    scheme = "stormer_verlet"
);

pendulum!(
    SvAngles,
    model = "models/spherical_pendulum_angles.hamel",
    scheme = "stormer_verlet"
);

pendulum!(
    Hamel,
    model = "models/spherical_pendulum.hamel",
    kinematics = "averaged"
);

// No scheme named on a model hamel does not apply to: the derive takes the
// first that does (RATTLE), as the CLI and Python do.
pendulum!(DefaultCartesian, model = "models/spherical_pendulum_cartesian.hamel");
pendulum!(DefaultDirector, model = "models/spherical_pendulum.hamel");

#[test]
fn a_derive_without_a_scheme_on_a_cartesian_model_is_rattle_and_keeps_length_and_momentum() {
    use hamel::Kernels;
    let m = DefaultCartesian::with_defaults();
    assert_eq!(Kernels::scheme(&m), "rattle");
    let mut s = m.initial("published").unwrap();
    let mut worst: f64 = 0.0;
    let run = simulate(&m, &mut s, 0.2, 2_000, |st| {
        let len = (st.z[0] * st.z[0] + st.z[1] * st.z[1] + st.z[2] * st.z[2]).sqrt();
        worst = worst.max((len - 9.8).abs() / 9.8);
    })
    .unwrap();
    // What RATTLE keeps exactly: the length and the vertical angular momentum.
    assert!(worst <= 1e-14, "{worst:e}");
    let j = run.monitor.get("J").unwrap().max_rel_error;
    assert!(j <= 1e-12, "{j:e}");
    // A model hamel applies to keeps it.
    assert_eq!(Kernels::scheme(&DefaultDirector::with_defaults()), "hamel_midpoint");
}

#[test]
fn rattle_keeps_the_length_at_round_off() {
    let m = Rattle::with_defaults();
    let mut s = m.initial("published").unwrap();
    let mut worst: f64 = 0.0;
    let run = simulate(&m, &mut s, 0.2, 10_000, |st| {
        let len = (st.z[0] * st.z[0] + st.z[1] * st.z[1] + st.z[2] * st.z[2]).sqrt();
        worst = worst.max((len - 9.8).abs() / 9.8);
    })
    .unwrap();
    let e = run.monitor.get("energy").unwrap().max_rel_error;
    let j = run.monitor.get("J").unwrap().max_rel_error;
    println!(
        "rattle: max | ‖x‖ − r |/r = {worst:.2e}, energy rel {e:.2e}, J rel {j:.2e}, Newton {:.2}",
        run.newton.mean()
    );
    assert!(worst <= 1e-14, "{worst:e}");
    assert!(e < 1e-2, "energy bounded: {e:e}");
}

#[test]
fn index_reduced_stormer_verlet_reports_its_drift() {
    let m = SvCartesian::with_defaults();
    let mut s = m.initial("published").unwrap();
    let run = simulate(&m, &mut s, 0.2, 10_000, |_| {}).unwrap();
    let drift = run.monitor.get("holonomic 1").unwrap().max_abs_error;
    let e = run.monitor.get("energy").unwrap().max_rel_error;
    println!("stormer_verlet (index-reduced): constraint drift max |‖x‖² − r²| = {drift:.2e}, energy rel {e:.2e}");
    assert!(drift > 0.0 && drift < 1e-6, "drift is reported and small: {drift:e}");
    assert!(e < 1e-2);
}

#[test]
fn hamel_beats_both_on_energy() {
    let (hm, rm, sm) = (
        Hamel::with_defaults(),
        Rattle::with_defaults(),
        SvCartesian::with_defaults(),
    );
    let err = |r: hamel::RunSummary| r.monitor.get("energy").unwrap().max_rel_error;
    let eh = err(simulate(&hm, &mut hm.initial("published").unwrap(), 0.2, 10_000, |_| {}).unwrap());
    let er = err(simulate(&rm, &mut rm.initial("published").unwrap(), 0.2, 10_000, |_| {}).unwrap());
    let es = err(simulate(&sm, &mut sm.initial("published").unwrap(), 0.2, 10_000, |_| {}).unwrap());
    println!("energy rel error at h = 0.2: hamel {eh:.2e}, rattle {er:.2e}, stormer_verlet {es:.2e}");
    assert!(eh < er && eh < es);
}

/// Bob height at time t from each formulation.
fn height_at<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    start: State<NZ, NX>,
    h: f64,
    t: f64,
    height: impl Fn(&State<NZ, NX>) -> f64,
) -> f64 {
    let mut s = start;
    simulate(sys, &mut s, h, (t / h).round() as u64, |_| {}).unwrap();
    height(&s)
}

#[test]
fn all_schemes_converge_at_second_order_to_one_reference() {
    let t = 4.0;
    let hm = Hamel::with_defaults();
    let reference = height_at(&hm, hm.initial("published").unwrap(), 0.2 / 512.0, t, |s| 9.8 * s.z[2]);
    let rm = Rattle::with_defaults();
    let sm = SvCartesian::with_defaults();
    let hs = [0.1, 0.05, 0.025];
    let mut table = Vec::new();
    let fh = |h| height_at(&hm, hm.initial("published").unwrap(), h, t, |s| 9.8 * s.z[2]);
    let fr = |h| height_at(&rm, rm.initial("published").unwrap(), h, t, |s| s.z[2]);
    let fs = |h| height_at(&sm, sm.initial("published").unwrap(), h, t, |s| s.z[2]);
    let runs: [(&str, &dyn Fn(f64) -> f64); 3] = [("hamel_averaged", &fh), ("rattle", &fr), ("stormer_verlet", &fs)];
    for (name, f) in runs {
        let errs: Vec<f64> = hs.iter().map(|&h| (f(h) - reference).abs()).collect();
        let ratios: Vec<f64> = errs.windows(2).map(|w| w[0] / w[1]).collect();
        println!("{name}: height errors {errs:?}, ratios {ratios:?}");
        table.push(ratios);
    }
    for r in table.iter().flatten() {
        assert!((3.4..=4.6).contains(r), "ratio {r}");
    }
}

#[test]
fn stormer_verlet_in_angles_has_bounded_energy_error() {
    let m = SvAngles::with_defaults();
    let mut errs = Vec::new();
    for h in [0.02, 0.01] {
        let mut s = m.initial("swing").unwrap();
        let run = simulate(&m, &mut s, h, (20.0 / h) as u64, |_| {}).unwrap();
        errs.push(run.monitor.get("energy").unwrap().max_rel_error);
    }
    let ratio = errs[0] / errs[1];
    println!("stormer_verlet (angles) energy errors {errs:?}, ratio {ratio:.3}");
    assert!((3.5..=4.5).contains(&ratio));
}

/// Largest energy error in the first and in the last tenth of a run.
fn early_and_late_energy_error<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    start: State<NZ, NX>,
    h: f64,
    steps: u64,
) -> (f64, f64) {
    let mut s = start;
    let e0 = {
        let mut v = [0.0; 8];
        sys.invariants_into(&s.z, &mut v).unwrap();
        v[0]
    };
    let (mut early, mut late) = (0.0f64, 0.0f64);
    let mut v = [0.0; 8];
    simulate(sys, &mut s, h, steps, |st| {
        sys.invariants_into(&st.z, &mut v).unwrap();
        let e = ((v[0] - e0) / e0).abs();
        if st.step <= steps / 10 {
            early = early.max(e);
        } else if st.step >= steps - steps / 10 {
            late = late.max(e);
        }
    })
    .unwrap();
    (early, late)
}

#[test]
fn no_secular_energy_drift_over_100k_steps() {
    let sa = SvAngles::with_defaults();
    let sc = SvCartesian::with_defaults();
    let (ea, la) = early_and_late_energy_error(&sa, sa.initial("swing").unwrap(), 0.05, 100_000);
    let (ec, lc) = early_and_late_energy_error(&sc, sc.initial("published").unwrap(), 0.2, 100_000);
    println!(
        "energy error, first vs last 10^4 of 10^5 steps: angles {ea:.3e} / {la:.3e}; cartesian {ec:.3e} / {lc:.3e}"
    );
    assert!(la < 1.2 * ea && lc < 1.2 * ec, "bounded, oscillating: no growth");
}
