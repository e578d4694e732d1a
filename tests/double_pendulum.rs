//! Double spherical pendulum, Hamel director form (docs/schemes.md §2), Pattern I of
//! W95 (docs/schemes.md §8). Exercises multipliers, non-vanishing bracket terms and
//! generated functions split into bounded parts.

#[macro_use]
mod common;

use hamel::{simulate, simulate_with, NewtonStats, State, StepSystem, Stepper};

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

struct Errors {
    energy: f64,
    momentum: f64,
    lengths: f64,
    constraints: f64,
    max_nu: f64,
}

fn errors<M, const NX: usize>(model: &M, state: State<12, NX>, h: f64, t_end: f64) -> Errors
where
    M: hamel::StepSystem<12, NX>,
{
    let mut s = state;
    let mut max_nu: f64 = 0.0;
    let unknowns = model.names(hamel::NameList::Unknowns);
    let nu: Vec<usize> = (0..NX).filter(|&i| unknowns[i].starts_with("nu")).collect();
    assert_eq!(nu.len(), 2, "{unknowns:?}");
    let run = simulate(model, &mut s, h, (t_end / h).round() as u64, |st| {
        if st.step > 0 {
            max_nu = max_nu.max(st.warm[nu[0]].abs()).max(st.warm[nu[1]].abs());
        }
    })
    .unwrap();
    let m = &run.monitor;
    Errors {
        energy: m.get("energy").unwrap().max_rel_error,
        momentum: m.get("J").unwrap().max_rel_error,
        lengths: ["length1", "length2"]
            .iter()
            .map(|n| m.get(n).unwrap().max_abs_error)
            .fold(0.0, f64::max),
        constraints: ["constraint 1", "constraint 2"]
            .iter()
            .map(|n| m.get(n).unwrap().max_abs_error)
            .fold(0.0, f64::max),
        max_nu,
    }
}

/// Errors at h = 0.02 and 0.01 over 10 s from the model's `pattern_I`, with the
/// properties both kinematics share asserted.
fn coarse_and_fine<M: StepSystem<12, NX>, const NX: usize>(
    label: &str,
    start: State<12, NX>,
    m: &M,
) -> (Errors, Errors) {
    let coarse = errors(m, start, 0.02, 10.0);
    let fine = errors(m, start, 0.01, 10.0);
    println!(
        "{label} h=0.02/0.01: energy {:.2e}/{:.2e}, J {:.2e}/{:.2e}, |e|-1 {:.1e}, <w,e> {:.1e}, max|ν| {:.2e}/{:.2e}",
        coarse.energy,
        fine.energy,
        coarse.momentum,
        fine.momentum,
        fine.lengths,
        fine.constraints,
        coarse.max_nu,
        fine.max_nu
    );
    assert!(fine.lengths < 1e-13 && fine.constraints < 1e-12);
    let re = coarse.energy / fine.energy;
    assert!((3.0..=5.0).contains(&re), "energy ratio {re}");
    (coarse, fine)
}

#[test]
fn pattern_one_averaged() {
    let m = DspAveraged::with_defaults();
    let (_, fine) = coarse_and_fine("averaged", m.initial("pattern_I").unwrap(), &m);
    assert!(fine.energy < 2e-3 && fine.momentum < 1e-3);
}

#[test]
fn pattern_one_midpoint_multiplier_is_second_order() {
    let m = DspMidpoint::with_defaults();
    let (coarse, fine) = coarse_and_fine("midpoint", m.initial("pattern_I").unwrap(), &m);
    let rn = coarse.max_nu / fine.max_nu;
    assert!((3.0..=5.0).contains(&rn), "max|ν| ratio {rn} (O(h²): 4)");
}

// Chord iterations (docs/schemes.md §6): Newton keeps the first factorization
// of a step when the contraction predicted from the previous step pays. The
// result must be Newton's to round-off, with no drift in what the scheme
// keeps to round-off (the link lengths).

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

fn run_with<M: StepSystem<12, NX>, const NX: usize>(model: &M, solver: Solver, steps: u64) -> Run<NX> {
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

fn check_chord<M: StepSystem<12, NX>, const NX: usize>(model: &M, label: &str) {
    // 30 s of Pattern I.
    let steps = 3000;
    let newton = run_with(model, Solver::Newton, steps);
    let chord = run_with(model, Solver::Chord, steps);
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
    let (a, b) = (
        run_with(model, Solver::Newton, 300).end,
        run_with(model, Solver::Chord, 300).end,
    );
    let gap = (a.z - b.z).amax() / a.z.amax();
    assert!(gap <= 1e-13, "{label}: trajectories part by {gap:e} in 300 steps");
}

#[test]
fn chord_iterations_are_newton_to_round_off_averaged() {
    check_chord(&DspAveraged::with_defaults(), "averaged");
}

#[test]
fn chord_iterations_are_newton_to_round_off_midpoint() {
    check_chord(&DspMidpoint::with_defaults(), "midpoint");
}
