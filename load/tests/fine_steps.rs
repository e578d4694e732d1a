//! Small steps on a long chain: Newton must accept a solution as good as
//! the arithmetic allows. RATTLE's multipliers enter its residual as
//! `h² Gᵀλ`, so at h = 6.25e-5 the residual's round-off moves them by
//! ~1e-6 per iteration, above every update test; the solve once failed at
//! step 0 with the residual at 1.6e-14 (found by the peer benchmark's ladder).

use hamel_load::{compile, read_model, run, Backend, RunOptions};

#[test]
fn a_long_chain_runs_at_fine_steps_under_every_cartesian_scheme() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/spherical_chain_cartesian.hamel");
    let model = read_model(path.as_ref(), &[("N".into(), 16)]).unwrap();
    for (scheme, h) in [("rattle", 6.25e-5), ("energy_momentum", 1.25e-4)] {
        let sys = compile(&model, scheme.parse().unwrap(), Backend::Jit).unwrap();
        let opt = RunOptions {
            h,
            steps: 200,
            compensated: false,
            record_every: 200,
            inputs: None,
            newton: Default::default(),
        };
        let r = run(&sys, sys.initial("tilted").unwrap(), None, &opt)
            .unwrap_or_else(|e| panic!("{scheme} at h = {h}: {e}"));
        let energy = r.monitor.get("energy").unwrap().max_rel_error;
        let constraint = r
            .monitor
            .reports()
            .iter()
            .filter(|x| x.kind == hamel_runtime::InvariantKind::Constraint)
            .map(|x| x.max_abs_error)
            .fold(0.0f64, f64::max);
        println!("{scheme} at h = {h}: energy {energy:.1e}, constraints {constraint:.1e}");
        assert!(
            energy < 1e-9 && constraint < 1e-12,
            "{scheme}: {energy:e} {constraint:e}"
        );
    }
}
