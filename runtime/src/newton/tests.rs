//! The loop on problems of known Newton behaviour, through a test double of
//! [`Kernels`]: scalar and 2×2 residuals written as closures.

use std::cell::Cell;

use nalgebra::{Const, SMatrix, SVector, Vector1, U1};

use super::chord::IterationCosts;
use super::iterate::{iterate, Store};
use super::linear_prediction::Groups;
use super::options::Solved;
use super::*;
use crate::error::StepError;
use crate::kernels::{InvariantKind, Kernels, NameList};
use crate::lu::Lu;
use crate::state::StateOf;
use crate::NewtonMemory;

type Residual<const N: usize> = Box<dyn Fn(&SVector<f64, N>, usize) -> SVector<f64, N>>;
type Jacobian<const N: usize> = Box<dyn Fn(&SVector<f64, N>) -> SMatrix<f64, N, N>>;

/// `R(x)` and `∂R/∂x` of `N` unknowns, the predictor's guess, and a count of
/// residual evaluations (handed to `R`, so that it can add scripted noise).
struct Double<const N: usize> {
    residual: Residual<N>,
    jacobian: Jacobian<N>,
    guess: SVector<f64, N>,
    calls: Cell<usize>,
}

impl<const N: usize> Double<N> {
    fn new(
        residual: impl Fn(&SVector<f64, N>, usize) -> SVector<f64, N> + 'static,
        jacobian: impl Fn(&SVector<f64, N>) -> SMatrix<f64, N, N> + 'static,
        guess: SVector<f64, N>,
    ) -> Self {
        Self {
            residual: Box::new(residual),
            jacobian: Box::new(jacobian),
            guess,
            calls: Cell::new(0),
        }
    }
}

/// A scalar problem `r(x) = 0` with derivative `j`, from the guess `x0`.
fn scalar(r: impl Fn(f64) -> f64 + 'static, j: impl Fn(f64) -> f64 + 'static, x0: f64) -> Double<1> {
    Double::new(
        move |x, _| Vector1::new(r(x[0])),
        move |x| SMatrix::<f64, 1, 1>::new(j(x[0])),
        Vector1::new(x0),
    )
}

impl<const N: usize> Kernels<U1, Const<N>> for Double<N> {
    fn model(&self) -> &str {
        "double"
    }
    fn scheme(&self) -> &str {
        "test"
    }
    fn dims(&self) -> (U1, Const<N>) {
        (U1, Const::<N>)
    }
    fn names(&self, _: NameList) -> Vec<&str> {
        Vec::new()
    }
    fn invariant_info(&self) -> Vec<(&str, InvariantKind)> {
        Vec::new()
    }
    fn parameters(&self) -> Vec<f64> {
        Vec::new()
    }
    fn residual(&self, _: f64, _: &[f64], _: &Vector1<f64>, x: &SVector<f64, N>, out: &mut SVector<f64, N>) {
        let k = self.calls.get();
        self.calls.set(k + 1);
        *out = (self.residual)(x, k);
    }
    fn jacobian(&self, _: f64, _: &[f64], _: &Vector1<f64>, x: &SVector<f64, N>, out: &mut SMatrix<f64, N, N>) {
        *out = (self.jacobian)(x);
    }
    /// `z' − z`: the sum of the unknowns, so that a step's result shows.
    fn increment(&self, _: f64, _: &[f64], _: &Vector1<f64>, x: &SVector<f64, N>, out: &mut Vector1<f64>) {
        out[0] = x.sum();
    }
    fn predict(&self, _: f64, _: &[f64], _: &Vector1<f64>, _: &SVector<f64, N>, out: &mut SVector<f64, N>) {
        *out = self.guess;
    }
    fn observe_size(&self) -> usize {
        0
    }
    fn state_of(&self, _: &[f64], _: &[f64], _: &mut [f64], _: &mut [f64]) {}
    fn observe(&self, _: &[f64], _: &mut [f64]) -> bool {
        true
    }
    fn physical_of(&self, _: &[f64], _: &[f64], _: &mut [f64], _: &mut [f64]) {}
    fn invariants_of(&self, _: f64, _: &[f64], _: &[f64], _: &mut [f64]) {}
    fn initial_data(&self, _: &str, _: &mut [f64], _: &mut [f64]) -> bool {
        false
    }
}

/// One solve of `sys` from nothing known (as [`solve`]), returning the solution too.
fn run<const N: usize>(sys: &Double<N>, opt: &NewtonOptions) -> Result<(usize, SVector<f64, N>), StepError> {
    let mut work = Workspace::new(U1, Const::<N>);
    let it = solve(
        sys,
        0.1,
        &[],
        &Vector1::zeros(),
        None,
        &SVector::zeros(),
        7,
        opt,
        &mut work,
    )?;
    Ok((it, *work.solution()))
}

/// One solve with what a last step told (`contraction`) and the costs given,
/// through the loop itself: what it took, and the solution.
fn iterate_with(sys: &Double<1>, contraction: Option<f64>, costs: IterationCosts) -> Result<(Solved, f64), StepError> {
    let mut memory = NewtonMemory::new(U1);
    memory.contraction = contraction;
    iterate_remembering(sys, &mut memory, costs)
}

/// [`iterate_with`], leaving in `memory` what the next step is told.
fn iterate_remembering(
    sys: &Double<1>,
    memory: &mut NewtonMemory<U1>,
    costs: IterationCosts,
) -> Result<(Solved, f64), StepError> {
    iterate_any(sys, memory, costs).map(|(solved, x)| (solved, x[0]))
}

/// One solve of `N` unknowns through the loop itself, from what `memory`
/// tells (and leaving in it what the next step is told): what it took, and
/// the solution.
fn iterate_any<const N: usize>(
    sys: &Double<N>,
    memory: &mut NewtonMemory<Const<N>>,
    costs: IterationCosts,
) -> Result<(Solved, SVector<f64, N>), StepError> {
    let (mut x, mut r, mut lu) = (SVector::zeros(), SVector::zeros(), Lu::new(Const::<N>));
    let old = *memory;
    let store = Store {
        x: &mut x,
        r: &mut r,
        lu: &mut lu,
        memory,
        old: &old,
        costs,
        groups: &Groups::default(),
        failed_at: &mut None,
    };
    let opt = NewtonOptions::default();
    let solved = iterate::<_, _, _, false>(
        sys,
        0.1,
        &[],
        &Vector1::zeros(),
        None,
        &SVector::zeros(),
        0,
        &opt,
        store,
    )?;
    Ok((solved, x))
}

#[test]
fn zero_unknowns_return_at_once_with_no_iteration() {
    let sys = Double::<0>::new(
        |_, _| panic!("no residual to evaluate"),
        |_| panic!("no Jacobian"),
        SVector::zeros(),
    );
    assert_eq!(run(&sys, &NewtonOptions::default()).unwrap().0, 0);
    // A whole step: the increment is evaluated, nothing is iterated.
    let mut state = StateOf::<U1, Const<0>>::zeros(U1, Const::<0>);
    state.z[0] = 2.5;
    let mut stepper = crate::StepperOf::new(&sys, 0.1).unwrap();
    stepper.step(&mut state).unwrap();
    assert_eq!((state.z[0], state.step), (2.5, 1));
    assert_eq!(
        (
            stepper.stats.steps,
            stepper.stats.iterations,
            stepper.stats.factorizations
        ),
        (1, 0, 0)
    );
}

#[test]
fn newton_on_the_square_root_of_two_stops_after_the_update_that_proves_it() {
    let sys = scalar(|x| x * x - 2.0, |x| 2.0 * x, 1.5);
    let (it, x) = run(&sys, &NewtonOptions::default()).unwrap();
    assert!((x[0] - 2f64.sqrt()).abs() <= f64::EPSILON, "{x}");
    // Errors 2.5e-3, 2.1e-6, 1.6e-12 after the first three updates; the
    // fourth (1.6e-12 after 2.1e-6) predicts round-off: four iterations.
    assert_eq!(it, 4);
    // Three residuals and Jacobians for four updates: after the third update
    // (θ⁴‖Δx‖ ≈ 1e-18) the next reuses the factors.
    assert_eq!(sys.calls.get(), 4);
}

#[test]
fn a_linear_problem_is_solved_in_one_update_and_a_confirming_one() {
    // 2×2, known solution (1, −2): the second update is zero or round-off.
    let a = SMatrix::<f64, 2, 2>::new(4.0, 1.0, 2.0, 3.0);
    let b = a * SVector::<f64, 2>::new(1.0, -2.0);
    let sys = Double::new(move |x, _| a * x - b, move |_| a, SVector::<f64, 2>::new(10.0, 10.0));
    let (it, x) = run(&sys, &NewtonOptions::default()).unwrap();
    assert_eq!(it, 2);
    assert!(
        (x - SVector::<f64, 2>::new(1.0, -2.0)).amax() <= 4.0 * f64::EPSILON,
        "{x}"
    );
}

#[test]
fn a_non_converging_problem_returns_not_converged_with_its_step() {
    // Newton on ∛x doubles the iterate's magnitude each time: updates grow
    // but are never small, so the stall rule must not take them for round-off.
    let sys = scalar(f64::cbrt, |x| 1.0 / (3.0 * x.cbrt() * x.cbrt()), 1.0);
    let err = run(&sys, &NewtonOptions::default()).unwrap_err();
    assert!(
        matches!(err, StepError::NotConverged { step: 7, iterations: 30, residual } if residual > 1e2),
        "{err:?}"
    );
    // The bound is the option's.
    let opt = NewtonOptions {
        max_iterations: 1,
        ..Default::default()
    };
    let sqrt2 = scalar(|x| x * x - 2.0, |x| 2.0 * x, 1.5);
    let err = run(&sqrt2, &opt).unwrap_err();
    assert!(matches!(err, StepError::NotConverged { iterations: 1, .. }), "{err:?}");
    assert!(err
        .to_string()
        .starts_with("step 7: Newton did not converge in 1 iterations"));
}

/// `x − 1` plus noise `±δ` alternating with each evaluation, from the exact
/// guess: every update is noise, of constant size `2δ` after the first.
fn noisy(delta: f64) -> Double<1> {
    noisy_from(delta, 1.0)
}

/// [`noisy`] from the guess `x0`.
fn noisy_from(delta: f64, x0: f64) -> Double<1> {
    Double::new(
        move |x, k| Vector1::new(x[0] - 1.0 + if k % 2 == 0 { delta } else { -delta }),
        |_| SMatrix::<f64, 1, 1>::new(1.0),
        Vector1::new(x0),
    )
}

#[test]
fn the_stall_rule_ends_a_solve_at_round_off_only() {
    // Noise of 1e-12 (below the stall floor 1e-8 ‖x‖): the second update,
    // which does not shrink, ends the solve.
    let (it, x) = run(&noisy(1e-12), &NewtonOptions::default()).unwrap();
    assert_eq!(it, 2);
    assert!((x[0] - 1.0).abs() <= 2e-12);
    // Noise of 1e-6 is no round-off: the solve fails rather than stop there.
    let err = run(&noisy(1e-6), &NewtonOptions::default()).unwrap_err();
    assert!(matches!(err, StepError::NotConverged { iterations: 30, .. }), "{err:?}");
    // Unless the floor is raised to cover it.
    let opt = NewtonOptions {
        stall_tolerance: 1e-5,
        ..Default::default()
    };
    assert_eq!(run(&noisy(1e-6), &opt).unwrap().0, 2);
}

#[test]
fn a_residual_at_the_round_off_of_the_state_ends_a_solve() {
    // A badly scaled unknown (coefficient 1e-9, as h² multiplies RATTLE's
    // multipliers at h ≈ 3e-5): residual noise of 2e-15, at the state's
    // round-off, moves it by 2e-6 per iteration, above the stall floor. The
    // residual no longer falls: the solve ends there instead of failing.
    let delta = 2e-15;
    let sys = Double::<1>::new(
        move |x, k| Vector1::new(1e-9 * (x[0] - 1.0) + if k % 2 == 0 { delta } else { -delta }),
        |_| SMatrix::<f64, 1, 1>::new(1e-9),
        Vector1::new(1.0),
    );
    let (it, x) = run(&sys, &NewtonOptions::default()).unwrap();
    assert!(it <= 4, "{it} iterations");
    assert!((x[0] - 1.0).abs() <= 5e-6, "{}", x[0]);
    // Residual noise well above round-off still fails (see the stall rule).
    let loud = Double::<1>::new(
        move |x, k| Vector1::new(1e-9 * (x[0] - 1.0) + if k % 2 == 0 { 1e-12 } else { -1e-12 }),
        |_| SMatrix::<f64, 1, 1>::new(1e-9),
        Vector1::new(1.0),
    );
    assert!(run(&loud, &NewtonOptions::default()).is_err());
}

#[test]
fn a_singular_jacobian_returns_singular() {
    // Two dependent rows: no regular solution near any iterate.
    let sys = Double::<2>::new(
        |x, _| SVector::<f64, 2>::new(x[0] + x[1] - 1.0, 2.0 * x[0] + 2.0 * x[1] - 2.5),
        |_| SMatrix::<f64, 2, 2>::new(1.0, 1.0, 2.0, 2.0),
        SVector::zeros(),
    );
    let err = run(&sys, &NewtonOptions::default()).unwrap_err();
    assert!(
        matches!(err, StepError::Singular { step: 7, iterations: 1, residual } if residual == 7.25f64.sqrt()),
        "{err:?}"
    );
    // x² + 1 has no real root; from 1, Newton's first update lands exactly
    // on 0, where the derivative vanishes: singular at the second iteration.
    let sys = scalar(|x| x * x + 1.0, |x| 2.0 * x, 1.0);
    let err = run(&sys, &NewtonOptions::default()).unwrap_err();
    assert_eq!(
        err,
        StepError::Singular {
            step: 7,
            iterations: 2,
            residual: 1.0
        }
    );
}

#[test]
fn a_nan_returns_non_finite() {
    // ln from 3: the first update lands at 3 − 3 ln 3 < 0, where ln is NaN.
    let sys = scalar(f64::ln, |x| 1.0 / x, 3.0);
    let err = run(&sys, &NewtonOptions::default()).unwrap_err();
    assert!(
        matches!(
            err,
            StepError::NonFinite {
                step: 7,
                iterations: 2,
                ..
            }
        ),
        "{err:?}"
    );
    // A NaN in the Jacobian: the factorization reports it.
    let sys = scalar(|x| x - 1.0, |_| f64::NAN, 3.0);
    let err = run(&sys, &NewtonOptions::default()).unwrap_err();
    assert!(matches!(err, StepError::NonFinite { iterations: 1, .. }), "{err:?}");
    // And at a singular matrix with a non-finite residual, the residual is the cause.
    let sys = scalar(|_| f64::INFINITY, |_| 0.0, 3.0);
    let err = run(&sys, &NewtonOptions::default()).unwrap_err();
    assert!(matches!(err, StepError::NonFinite { iterations: 1, .. }), "{err:?}");
}

#[test]
fn the_first_iteration_rule_needs_a_known_contraction() {
    // x − 1 from 1 + 1e-10: one update lands on 1. Newton's constant of the
    // last step (1) predicts an error of 1e-20 after it: done at once.
    let exact = || scalar(|x| x - 1.0, |_| 1.0, 1.0 + 1e-10);
    let none = IterationCosts(None);
    let (solved, x) = iterate_with(&exact(), Some(1.0), none).unwrap();
    assert_eq!((solved.iterations, x), (1, 1.0));
    // Nothing known: a second update is needed to see it.
    assert_eq!(iterate_with(&exact(), None, none).unwrap().0.iterations, 2);
    // A constant of 1e12 predicts 1e-8: not done.
    assert_eq!(iterate_with(&exact(), Some(1e12), none).unwrap().0.iterations, 2);
}

#[test]
fn a_second_update_at_round_off_does_not_raise_the_contraction() {
    // x − 1 ± 1e-15 (below the residual's round-off floor, 64 ulps) from
    // 1 + 1e-2: the first update lands within the noise, the second moves
    // by 2e-15, which measured as Newton's error would give c = 2e-11.
    let mut memory = NewtonMemory::new(U1);
    memory.contraction = Some(1e-12);
    let (solved, x) = iterate_remembering(&noisy_from(1e-15, 1.0 + 1e-2), &mut memory, IterationCosts(None)).unwrap();
    assert_eq!(solved.iterations, 2);
    assert!((x - 1.0).abs() <= 2e-15, "{x}");
    // Round-off says nothing of c: the last step's is kept (it was doubled,
    // step by step, up to the noise's 2e-11, holding every later step at
    // two iterations).
    assert_eq!(memory.contraction, Some(1e-12));
    // Noise above the floor is measured as before (at most doubling).
    let mut memory = NewtonMemory::new(U1);
    memory.contraction = Some(1e-12);
    iterate_remembering(&noisy_from(1e-12, 1.0 + 1e-2), &mut memory, IterationCosts(None)).unwrap();
    assert_eq!(memory.contraction, Some(2e-12));
}

#[test]
fn chord_iterations_are_taken_only_when_they_pay() {
    // x² − 4 near 2: Newton's constant f''/(2f') = 1/4. From 2 + 1e-5 the
    // chord needs 3 residuals, Newton 2 Jacobians (see chord::tests).
    let sys = || scalar(|x| x * x - 4.0, |x| 2.0 * x, 2.0 + 1e-5);
    let c = Some(0.25);
    // Residuals far cheaper than a Jacobian and factorization: one factorization.
    let (cheap, x) = iterate_with(&sys(), c, IterationCosts(Some((10.0, 1000.0)))).unwrap();
    assert_eq!((cheap.iterations, cheap.factorizations), (3, 1));
    assert!((x - 2.0).abs() <= 2.0 * f64::EPSILON);
    // Residuals at 60 % of a Newton iteration: two extra cost more than the
    // factorization saved; Newton it is.
    let (dear, x) = iterate_with(&sys(), c, IterationCosts(Some((600.0, 1000.0)))).unwrap();
    assert_eq!((dear.iterations, dear.factorizations), (2, 2));
    assert!((x - 2.0).abs() <= 2.0 * f64::EPSILON);
    // Nothing known from a last step: Newton.
    let (fresh, _) = iterate_with(&sys(), None, IterationCosts(Some((10.0, 1000.0)))).unwrap();
    assert_eq!(fresh.factorizations, fresh.iterations);
}

#[test]
fn a_failed_step_leaves_the_state_and_a_good_one_carries_the_contraction() {
    let sys = scalar(|x| x * x - 2.0, |x| 2.0 * x, 1.5);
    let mut state = StateOf::<U1, Const<1>>::zeros(U1, Const::<1>);
    let mut stepper = crate::StepperOf::new(&sys, 0.1).unwrap();
    stepper.options.max_iterations = 2;
    let before = state;
    assert!(stepper.step(&mut state).is_err());
    assert_eq!(state, before);
    stepper.options.max_iterations = 30;
    stepper.step(&mut state).unwrap();
    assert_eq!(state.step, 1);
    assert_eq!(state.z[0], state.warm[0]);
    assert!((state.warm[0] - 2f64.sqrt()).abs() <= f64::EPSILON);
    // ‖Δx₂‖/‖Δx₁‖² of Newton on x² − 2 from 1.5: about f''/(2f') = 1/(2√2).
    let c = state.newton.contraction.unwrap();
    assert!((c - 1.0 / 8f64.sqrt()).abs() < 0.05, "{c}");
}

/// Twelve equations, each `x_i = i` but the eighth, `x_7² + 1 = 0`, which
/// has no real root: Newton settles the others at once and wanders in `x_7`.
fn one_without_a_root(x7: f64) -> Double<12> {
    let mut guess = SVector::<f64, 12>::from_element(0.5);
    guess[7] = x7;
    Double::new(
        |x, _| SVector::<f64, 12>::from_fn(|i, _| if i == 7 { x[7] * x[7] + 1.0 } else { x[i] - i as f64 }),
        |x| {
            SMatrix::<f64, 12, 12>::from_fn(|i, j| {
                if i != j {
                    0.0
                } else if i == 7 {
                    2.0 * x[7]
                } else {
                    1.0
                }
            })
        },
        guess,
    )
}

/// A failed step names the unknown that resisted, and only one that did:
/// none after a singular matrix (no update was taken).
#[test]
fn a_failed_step_names_the_unknown_that_did_not_settle() {
    let step = |sys: &Double<12>| {
        let mut stepper = crate::StepperOf::new(sys, 0.1).unwrap();
        let mut state = StateOf::<U1, Const<12>>::zeros(U1, Const::<12>);
        let err = stepper.step(&mut state).unwrap_err();
        (err, stepper.failed_unknown())
    };
    let (err, at) = step(&one_without_a_root(0.5));
    assert!(matches!(err, StepError::NotConverged { .. }), "{err:?}");
    assert_eq!(at, Some(7));
    // x_7 = 0: the Jacobian is singular at the guess.
    let (err, at) = step(&one_without_a_root(0.0));
    assert!(matches!(err, StepError::Singular { .. }), "{err:?}");
    assert_eq!(at, None);
}

#[test]
fn a_chord_may_begin_after_a_second_newton_update_where_it_pays() {
    // x² − 4 from 2 + 0.3 (Newton's constant 1/4): the first update, 0.28,
    // predicts a chord rate C ‖Δx‖ = 0.07, too slow to keep its factors;
    // the second, 0.0195, predicts 4.9e-3 and is not at round-off. From
    // there the chord contracts about 200-fold a residual: six more
    // residuals to round-off, where Newton takes two more Jacobians and
    // factorizations and a residual at round-off.
    let sys = || scalar(|x| x * x - 4.0, |x| 2.0 * x, 2.0 + 3e-1);
    let c = Some(0.25);
    let (cheap, x) = iterate_with(&sys(), c, IterationCosts(Some((10.0, 1000.0)))).unwrap();
    assert_eq!((cheap.iterations, cheap.factorizations), (8, 2));
    assert!((x - 2.0).abs() <= 2.0 * f64::EPSILON);
    // Residuals at 60 % of a Newton iteration: six more cost more than the
    // factorizations saved, and Newton goes on to the end (its last update
    // reuses the factors, at round-off).
    let (dear, y) = iterate_with(&sys(), c, IterationCosts(Some((600.0, 1000.0)))).unwrap();
    assert_eq!((dear.iterations, dear.factorizations), (5, 3));
    assert!((y - 2.0).abs() <= 2.0 * f64::EPSILON);
}

#[test]
fn a_chord_that_contracts_slower_than_its_first_rate_takes_new_factors() {
    // Two equations apart: x₀ = 5 (linear, solved by the first update, which
    // is all of its size) and x₁² = 4 from 2.05, whose chord contracts about
    // 40-fold a residual. The first chord update measures the rate 2.5e-4
    // (x₀'s part gone, x₁'s small); a bias predicted from it stopped the
    // chord with x₁ still about 1e-9 off. Its later updates show the rate
    // the chord really has: new factors, and Newton to round-off.
    let sys = Double::new(
        |x: &SVector<f64, 2>, _| SVector::<f64, 2>::new(x[0] - 5.0, x[1] * x[1] - 4.0),
        |x| SMatrix::<f64, 2, 2>::new(1.0, 0.0, 0.0, 2.0 * x[1]),
        SVector::<f64, 2>::new(0.0, 2.05),
    );
    let mut memory = NewtonMemory::new(Const::<2>);
    memory.contraction = Some(1e-4);
    let (solved, x) = iterate_any(&sys, &mut memory, IterationCosts(Some((10.0, 1000.0)))).unwrap();
    assert!(solved.factorizations >= 2, "{solved:?}");
    assert_eq!(x[0], 5.0);
    assert!((x[1] - 2.0).abs() <= 2.0 * f64::EPSILON, "x₁ − 2 = {:e}", x[1] - 2.0);
}
