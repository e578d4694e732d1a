//! Newton's first guess on long chains: the predictor's error is
//! extrapolated by the rule that would have predicted the last step best
//! (runtime `newton::predictor`). Energy–momentum's momenta and multipliers
//! carry a part that flips sign every step, which only the rule built for
//! it follows: on this run (400 steps of the 16-link Cartesian chain at
//! h = 0.01 from `tilted`) Newton took 2.52 iterations per step, and 3.02
//! with the quadratic alone (measured with `CUBIC_MIN` raised past the
//! system's size). Since the recurrence fitted to the errors
//! (`newton::linear_prediction`) joined the rules, it takes 2.06.

use hamel_load::{compile, read_model, Backend, System};
use hamel_runtime::DynStepper;

fn chain(n: i64, scheme: &str) -> System {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/spherical_chain_cartesian.hamel");
    let model = read_model(path.as_ref(), &[("N".into(), n)]).unwrap();
    compile(&model, scheme.parse().unwrap(), Backend::Jit).unwrap()
}

fn energy(sys: &System, z: &hamel_runtime::nalgebra::DVector<f64>, step: u64) -> f64 {
    let names = sys.compiled().invariants.iter().map(|(n, _)| n.clone());
    let values = sys.invariants(z, step).unwrap();
    names
        .zip(values)
        .find(|(n, _)| n == "energy")
        .expect("an energy invariant")
        .1
}

#[test]
fn an_energy_momentum_chain_follows_its_alternating_multipliers() {
    let sys = chain(16, "energy_momentum");
    let mut s = sys.initial("tilted").unwrap();
    let e0 = energy(&sys, &s.z, 0);
    let mut st = DynStepper::new(&sys, 0.01).unwrap();
    let mut drift: f64 = 0.0;
    for k in 1..=400 {
        st.step(&mut s).unwrap();
        drift = drift.max((energy(&sys, &s.z, k) - e0).abs() / e0.abs());
    }
    let per_step = st.stats.iterations as f64 / st.stats.steps as f64;
    assert!(per_step <= 2.75, "{per_step:.3} iterations per step");
    // The faster guesses change where Newton starts, not where it ends:
    // energy–momentum keeps the energy to round-off.
    assert!(drift < 1e-12, "relative energy drift {drift:e}");
    eprintln!("{per_step:.3} iterations per step, energy drift {drift:.1e}");
}

/// Newton's iterations per step and the energy's largest relative drift
/// over `steps` steps of `model` with `n` links at h = 0.01 from `sway`.
fn iterations_and_drift(model: &str, scheme: &str, n: i64, steps: u64) -> (f64, f64) {
    let path = format!("{}/../models/{model}.hamel", env!("CARGO_MANIFEST_DIR"));
    let model = read_model(path.as_ref(), &[("N".into(), n)]).unwrap();
    let sys = compile(&model, scheme.parse().unwrap(), Backend::Jit).unwrap();
    let mut s = sys.initial("sway").unwrap();
    let e0 = energy(&sys, &s.z, 0);
    let mut st = DynStepper::new(&sys, 0.01).unwrap();
    let mut drift: f64 = 0.0;
    for k in 1..=steps {
        st.step(&mut s).unwrap();
        drift = drift.max((energy(&sys, &s.z, k) - e0).abs() / e0.abs());
    }
    (st.stats.iterations as f64 / st.stats.steps as f64, drift)
}

#[test]
fn long_chains_fit_a_recurrence_to_their_errors() {
    // A 64-link chain at h = 0.01 carries modes at hω up to about one,
    // which no polynomial rule follows; the recurrence fitted to the errors
    // (runtime `newton::linear_prediction`), its multipliers fitted apart
    // from its momenta, does. Over these 200 steps energy–momentum took
    // 3.27 iterations a step with the rules alone, 2.48 with the fit; the
    // averaged director chain 2.93 and 2.27.
    let (em, drift) = iterations_and_drift("spherical_chain_cartesian", "energy_momentum", 64, 200);
    assert!(em <= 2.8, "energy–momentum: {em:.3} iterations per step");
    assert!(drift < 1e-12, "energy–momentum: relative energy drift {drift:e}");
    let (director, _) = iterations_and_drift("spherical_chain", "hamel_averaged", 64, 200);
    assert!(director <= 2.4, "averaged director: {director:.3} iterations per step");
    eprintln!("{em:.3} and {director:.3} iterations per step, energy–momentum's drift {drift:.1e}");
}
