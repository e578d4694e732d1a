//! Chord iterations (docs/schemes.md §6): Newton keeps the first factorization
//! of a step when the contraction predicted from the previous step pays. The
//! result must be Newton's to round-off, with no drift in what the scheme
//! keeps to round-off (the link lengths).

#[macro_use]
mod common;

use hamel::{simulate_with, NewtonStats, State, StepSystem, Stepper};

double_pendulum!(
    DspAveraged,
    model = "models/double_spherical_pendulum.hamel",
    kinematics = "averaged"
);

double_pendulum!(
    DspMidpoint,
    model = "models/double_spherical_pendulum.hamel",
    kinematics = "midpoint"
);

#[derive(Clone, Copy, PartialEq)]
enum Solver {
    Newton,
    Chord,
}

struct Run<const NX: usize> {
    end: State<12, NX>,
    newton: NewtonStats,
    energy: f64,
    lengths: f64,
}

fn run<M: StepSystem<12, NX>, const NX: usize>(model: &M, solver: Solver, steps: u64) -> Run<NX> {
    let mut s = model.initial_named("pattern_I").unwrap();
    let mut stepper = Stepper::new(model, 0.01).unwrap();
    stepper.options.chord = solver == Solver::Chord;
    let run = simulate_with(stepper, &mut s, steps, |_| {}).unwrap();
    let m = &run.monitor;
    Run {
        end: s,
        newton: run.newton,
        energy: m.get("energy").unwrap().max_rel_error,
        lengths: ["length1", "length2"]
            .iter()
            .map(|n| m.get(n).unwrap().max_abs_error)
            .fold(0.0, f64::max),
    }
}

fn check<M: StepSystem<12, NX>, const NX: usize>(model: &M, label: &str) {
    // 30 s of Pattern I.
    let steps = 3000;
    let newton = run(model, Solver::Newton, steps);
    let chord = run(model, Solver::Chord, steps);
    let (fn_, fc) = (newton.newton.factorizations_mean(), chord.newton.factorizations_mean());
    eprintln!(
        "{label}: factorizations/step {fn_:.2} → {fc:.2}, iterations {:.2} → {:.2}; lengths {:.1e} / {:.1e}; energy {:.3e} / {:.3e}",
        newton.newton.mean(),
        chord.newton.mean(),
        newton.lengths,
        chord.lengths,
        newton.energy,
        chord.energy
    );
    assert!(
        fc < 0.6 * fn_,
        "{label}: chord iterations in use ({fn_:.2} → {fc:.2} factorizations per step)"
    );
    // What the scheme keeps to round-off stays there.
    assert!(chord.lengths <= 1e-14, "{label}: link lengths {:e}", chord.lengths);
    // The truncation error is the scheme's, not the solver's.
    assert!(
        (chord.energy - newton.energy).abs() <= 1e-9 * newton.energy,
        "{label}: energy error {:e} against Newton's {:e}",
        chord.energy,
        newton.energy
    );
    // Over a short run the trajectories agree to round-off.
    let (a, b) = (run(model, Solver::Newton, 300).end, run(model, Solver::Chord, 300).end);
    let gap = (a.z - b.z).amax() / a.z.amax();
    assert!(gap <= 1e-13, "{label}: trajectories part by {gap:e} in 300 steps");
}

#[test]
fn chord_iterations_are_newton_to_round_off_averaged() {
    check(&DspAveraged::with_defaults(), "averaged");
}

#[test]
fn chord_iterations_are_newton_to_round_off_midpoint() {
    check(&DspMidpoint::with_defaults(), "midpoint");
}
