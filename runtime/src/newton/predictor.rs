//! The predictor's error, extrapolated from the last steps' and added to its
//! guess.

use nalgebra::allocator::Allocator;
use nalgebra::{DefaultAllocator, Dim, OVector};

use super::linear_prediction::{fit, miss, Gram, Groups, LAGS, ORDER, REFIT, SPAN};
use crate::memory::{NewtonMemory, KEPT, OLDER};

/// Systems with at least this many unknowns may extrapolate the
/// predictor's error by a rule of higher degree than the quadratic, or by a
/// fitted recurrence (see
/// [`extrapolate`]). Below it the choice changed no iteration count of the
/// models in `models/` (h = 1e-3 to 0.05, every scheme; the 8-link chains
/// excepted), while the vectors it reads and writes would cost the smallest
/// steps, whose fixed-size drivers hold at most 8 unknowns, a share of
/// their time.
pub(crate) const CUBIC_MIN: usize = 16;

const _: () = assert!(
    CUBIC_MIN > crate::native::MAX_DIRECT_UNKNOWNS,
    "fixed-size drivers carry no older errors"
);

/// The extrapolations a wide system chooses from, each the weights of the
/// errors 0, 1, 2, … steps back, in the order a tie is settled (the one
/// that amplifies round-off least first: the sum of the weights'
/// magnitudes, 7, 11, 15, 31). Each is exact on the sequences its
/// characteristic polynomial annihilates:
///
/// - the quadratic, `(z − 1)³`;
/// - the quadratic-times-alternating rule `(z − 1)⁴(z + 1)²`: a cubic plus a
///   linear multiple of `(−1)ᵏ`. Energy–momentum's momenta and multipliers
///   carry such a period-two part (the midpoint relation `p_{k+1} + p_k =
///   2M(x_{k+1} − x_k)/h` passes any inconsistency of the momenta on with
///   its sign flipped, docs/schemes.md), which no polynomial follows: on the
///   16-link chain at h = 0.01 the quadratic misses by 1.4 (‖λ‖ ≈ 190),
///   this rule by 7e-3;
/// - the cubic, `(z − 1)⁴`, and the quartic, `(z − 1)⁵`: on smooth motions
///   of long chains each errs by a further `O(hω)` less (the 16-link
///   director chain at h = 0.01: 4.6e-4, 1.2e-4, 4.3e-5).
const RULES: [&[f64]; 4] = [&QUADRATIC, &ALTERNATING, &CUBIC, &QUARTIC];

/// `(z − 1)³`.
const QUADRATIC: [f64; 3] = [3.0, -3.0, 1.0];
/// `(z − 1)⁴(z + 1)²`.
const ALTERNATING: [f64; 6] = [2.0, 1.0, -4.0, 1.0, 2.0, -1.0];
/// `(z − 1)⁴`.
const CUBIC: [f64; 4] = [4.0, -6.0, 4.0, -1.0];
/// `(z − 1)⁵`.
const QUARTIC: [f64; 5] = [5.0, -10.0, 10.0, -5.0, 1.0];

/// [`RULES`] with zero weights on the errors a rule does not read: one
/// width for every rule and the fitted recurrence, which the correction's
/// loop weighs alike.
const PADDED: [[f64; ORDER]; RULES.len()] = {
    let mut out = [[0.0; ORDER]; RULES.len()];
    let mut r = 0;
    while r < RULES.len() {
        let mut j = 0;
        while j < RULES[r].len() {
            out[r][j] = RULES[r][j];
            j += 1;
        }
        r += 1;
    }
    out
};

const _: () = {
    let mut r = 0;
    while r < RULES.len() {
        assert!(RULES[r].len() <= ORDER, "a rule is weighed in the fit's width");
        r += 1;
    }
};

/// The narrow rule's weights `(a, b, c)` in `a·e₀ − b·e₁ + c·e₂`, by the
/// errors known.
#[inline(always)]
fn narrow_weights(known: u8) -> (f64, f64, f64) {
    match known {
        0 => (0.0, 0.0, 0.0),
        1 => (1.0, 0.0, 0.0),
        2 => (2.0, 1.0, 0.0),
        _ => (3.0, 3.0, 1.0),
    }
}

/// A wide system's weights of the errors newest first, from the Gram
/// matrix `d` of the newest error and those kept: once three errors are
/// known, the one of [`RULES`] and the fitted recurrence in use (`last`,
/// fitted before the newest error was known) that would have predicted the
/// newest error best (in the 2-norm, over all unknowns), among the rules
/// with an error more known than they read; ties go to the earlier, the
/// recurrence last. Where the recurrence wins, the one in use from now on
/// (`fitted`: refitted, or `last` again) is taken; where adding nothing
/// would have missed least, nothing is added.
#[inline(always)]
fn wide_weights(known: usize, last: Option<[f64; ORDER]>, d: &Gram, fitted: Option<[f64; ORDER]>) -> [f64; ORDER] {
    let mut w = [0.0; ORDER];
    match known {
        0 => {}
        1 => w[0] = 1.0,
        2 => w[..2].copy_from_slice(&[2.0, -1.0]),
        _ => {
            // A rule is judged on one error more than it reads.
            let judged = |r: usize| RULES[r].len() < known;
            let misses = [
                if judged(0) { miss(d, &QUADRATIC) } else { f64::INFINITY },
                if judged(1) {
                    miss(d, &ALTERNATING)
                } else {
                    f64::INFINITY
                },
                if judged(2) { miss(d, &CUBIC) } else { f64::INFINITY },
                if judged(3) { miss(d, &QUARTIC) } else { f64::INFINITY },
            ];
            let (mut best, mut least) = (0, misses[0]);
            for (r, &m) in misses.iter().enumerate().skip(1) {
                if m < least {
                    (best, least) = (r, m);
                }
            }
            w = PADDED[best];
            if let (Some(last), Some(now)) = (last, fitted) {
                let m = miss(d, &last);
                if m < least {
                    (w, least) = (now, m);
                }
            }
            // Where every extrapolation would have missed the newest error
            // by more than its own size, the motion has turned faster than
            // the last steps can tell (a chain's whip: the 64-link
            // energy–momentum chain at h = 0.01, step 9093 from `sway`,
            // whose multipliers' errors every candidate missed by 3–4 times
            // their size): the guess is left as the scheme predicts.
            if least.is_finite() && d[0][0] < least {
                w = [0.0; ORDER];
            }
        }
    }
    w
}

/// Corrects the predictor's guess `x` by its error extrapolated from the last
/// steps', and records the error of the step before (`previous`, that step's
/// solution, minus the guess it was started from).
///
/// The predictor's error changes smoothly from one step to the next: it is
/// extrapolated from the last three steps' by the quadratic through them
/// (`3e_k − 3e_{k−1} + e_{k−2}`; linearly from two after a second step, the
/// last one's alone after a first; none on a first step). The entries are
/// finite (memory is kept only from successful steps), so a zero weight is a
/// zero term. Element by element: the guess was stored that way, and a wide
/// load of narrow stores stalls.
///
/// With [`CUBIC_MIN`] unknowns or more, the rule of [`RULES`] is taken that
/// would have predicted the last step's error best (in the 2-norm, over all
/// unknowns), among those with an error more known than they read. Always
/// taken, a rule of higher degree amplifies round-off: small systems, whose
/// errors are at that floor, took up to twice the iterations with the cubic
/// (RATTLE on the double pendulum at h = 0.01: 2.0 → 3.8). A recurrence
/// fitted to the errors (see [`super::linear_prediction`]) is a candidate
/// too, judged alike; unknowns that `groups` sets apart (multipliers)
/// choose and fit on their own. The choice is a function of the state's
/// memory alone, so every back-end makes the same one.
///
/// It reads `memory` and writes what changes into `fresh` (the guess and
/// the newest error), for [`NewtonMemory::commit`] to take once the step
/// has succeeded: the state's memory is neither copied before a solve (so
/// that a failed one leaves it as it was) nor shifted element by element
/// (copying it in took 2 % of the 16-link director chain's step).
#[inline(always)]
pub(crate) fn extrapolate<X: Dim>(
    memory: &NewtonMemory<X>,
    previous: &OVector<f64, X>,
    x: &mut OVector<f64, X>,
    fresh: &mut NewtonMemory<X>,
    groups: &Groups,
) where
    DefaultAllocator: Allocator<X>,
{
    let n = x.len();
    let (previous, g) = (&previous.as_slice()[..n], &memory.guess.as_slice()[..n]);
    let (e1, e2) = (&memory.error.as_slice()[..n], &memory.error2.as_slice()[..n]);
    let x = &mut x.as_mut_slice()[..n];
    let (fg, fe) = (
        &mut fresh.guess.as_mut_slice()[..n],
        &mut fresh.error.as_mut_slice()[..n],
    );
    if n >= CUBIC_MIN {
        // The newest error and the guess as predicted, recorded first: the
        // passes below read them whole.
        for i in 0..n {
            fe[i] = previous[i] - g[i];
            fg[i] = x[i];
        }
        let head = memory.head as usize;
        let kept: [&[f64]; KEPT] = std::array::from_fn(|j| match j {
            0 => e1,
            1 => e2,
            _ => &memory.older[(head + j - 2) % OLDER].as_slice()[..n],
        });
        // What the weights weigh: the newest error, then those kept.
        let errors: [&[f64]; ORDER] = std::array::from_fn(|j| if j == 0 { &*fe } else { kept[j - 1] });
        match groups.apart() {
            None => {
                let mut r = [0.0; LAGS];
                r[0] = dot(fe, fe);
                for j in 0..SPAN - 1 {
                    r[j + 1] = dot(fe, kept[j]);
                }
                let w = group_weights(
                    memory,
                    (&mut fresh.gram[0], &mut fresh.fit[0], &mut fresh.fit_age[0]),
                    0,
                    &r,
                );
                // One pass per weight: each is a loop the compiler
                // vectorizes, where one pass over all would gather.
                for (w, e) in w.iter().zip(errors) {
                    if *w != 0.0 {
                        for (x, e) in x.iter_mut().zip(e) {
                            *x += w * e;
                        }
                    }
                }
            }
            Some((apart, rest)) => {
                for (k, list) in [rest, apart].into_iter().enumerate() {
                    let mut r = [0.0; LAGS];
                    for &i in list {
                        let (i, e0) = (i as usize, errors[0][i as usize]);
                        r[0] += e0 * e0;
                        for j in 0..SPAN - 1 {
                            r[j + 1] += e0 * kept[j][i];
                        }
                    }
                    let w = group_weights(
                        memory,
                        (&mut fresh.gram[k], &mut fresh.fit[k], &mut fresh.fit_age[k]),
                        k,
                        &r,
                    );
                    for &i in list {
                        let i = i as usize;
                        let mut c = x[i];
                        for j in 0..ORDER {
                            c += w[j] * errors[j][i];
                        }
                        x[i] = c;
                    }
                }
            }
        }
    } else {
        let (a, b, c) = narrow_weights(memory.known);
        for i in 0..n {
            let p = x[i];
            let err = previous[i] - g[i];
            x[i] = p + (a * err - b * e1[i] + c * e2[i]);
            fe[i] = err;
            fg[i] = p;
        }
    }
}

/// `Σ aᵢbᵢ` in four running sums (each a chain of its own, which the
/// compiler puts side by side in vector registers), added pairwise.
#[inline(always)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..4 {
            acc[l] += x[l] * y[l];
        }
    }
    for (x, y) in ra.iter().zip(rb) {
        acc[0] += x * y;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// The weights of group `k`, whose newest error's products with itself and
/// the errors kept are `r`; the group's Gram matrix, fit and the fit's age
/// go to `fresh` (the fresh memory's).
#[inline(always)]
fn group_weights<X: Dim>(
    memory: &NewtonMemory<X>,
    fresh: (&mut [[f64; KEPT]; KEPT], &mut Option<[f64; ORDER]>, &mut u8),
    k: usize,
    r: &[f64; LAGS],
) -> [f64; ORDER]
where
    DefaultAllocator: Allocator<X>,
{
    let mut d: Gram = [[0.0; LAGS]; LAGS];
    d[0] = *r;
    for i in 1..LAGS {
        d[i][0] = r[i];
        d[i][1..].copy_from_slice(&memory.gram[k][i - 1]);
    }
    for i in 0..KEPT {
        fresh.0[i].copy_from_slice(&d[i][..KEPT]);
    }
    let last = memory.fit[k];
    let known = memory.known as usize;
    let due = known >= LAGS && (last.is_none() || memory.fit_age[k] + 1 >= REFIT);
    let now = if due { fit(&d) } else { last };
    *fresh.1 = now;
    *fresh.2 = if due { 0 } else { memory.fit_age[k].saturating_add(1) };
    wide_weights(known, last, &d, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    use nalgebra::{Vector1, U1};

    /// One step's extrapolation of `x`, its memory committed as after a
    /// successful solve.
    fn extrapolate_and_commit<X: Dim>(memory: &mut NewtonMemory<X>, previous: &OVector<f64, X>, x: &mut OVector<f64, X>)
    where
        DefaultAllocator: Allocator<X>,
    {
        let mut fresh = memory.clone();
        extrapolate(memory, previous, x, &mut fresh, &Groups::default());
        memory.commit(&mut fresh);
    }

    /// Steps of a trajectory whose predictor errs by `error(k)` at step `k`:
    /// the solution is `guess + error`; returns the corrected guesses.
    fn corrected(error: impl Fn(f64) -> f64, steps: usize) -> Vec<(f64, f64)> {
        let mut memory = NewtonMemory::new(U1);
        let mut solution = Vector1::new(0.0);
        let mut out = Vec::new();
        for k in 0..steps {
            let guess = 10.0 + k as f64; // the raw predictor, any smooth sequence
            let mut x = Vector1::new(guess);
            extrapolate_and_commit(&mut memory, &solution, &mut x);
            let truth = guess + error(k as f64);
            out.push((x[0], truth));
            solution[0] = truth;
        }
        out
    }

    #[test]
    fn a_quadratic_error_sequence_is_predicted_exactly_once_three_errors_are_known() {
        // Small integers: every operation is exact, so exactness is equality.
        let out = corrected(|k| 2.0 * k * k - 3.0 * k + 5.0, 8);
        for (k, &(x, truth)) in out.iter().enumerate().skip(3) {
            assert_eq!(x, truth, "step {k}");
        }
        // With two errors known the extrapolation is linear: off by the
        // second difference.
        assert_eq!(out[2].1 - out[2].0, 4.0);
    }

    #[test]
    fn lower_orders_are_exact_as_soon_as_they_are_determined() {
        // A constant error from the second step on, a linear one from the third.
        let constant = corrected(|_| 0.25, 6);
        assert_ne!(constant[0].0, constant[0].1, "a first step has nothing to extrapolate");
        assert!(constant.iter().skip(1).all(|&(x, t)| x == t));
        let linear = corrected(|k| 1.5 * k - 2.0, 6);
        assert!(linear.iter().skip(2).all(|&(x, t)| x == t));
        assert_eq!(linear[1].1 - linear[1].0, 1.5);
    }

    #[test]
    fn a_cubic_error_is_not_exact_and_forget_restarts_the_extrapolation() {
        let cubic = corrected(|k| k * k * k, 8);
        // off by the third difference, 6
        assert!(cubic.iter().skip(3).all(|&(x, t)| t - x == 6.0));
        let mut memory = NewtonMemory::new(U1);
        let mut x = Vector1::new(1.0);
        extrapolate_and_commit(&mut memory, &Vector1::new(0.0), &mut x);
        extrapolate_and_commit(&mut memory, &Vector1::new(3.0), &mut x);
        assert_eq!(memory.known, 2);
        memory.forget();
        let mut x = Vector1::new(7.0);
        extrapolate_and_commit(&mut memory, &Vector1::new(100.0), &mut x);
        assert_eq!(x[0], 7.0, "a forgotten memory leaves the guess as predicted");
    }

    /// [`corrected`] for a system of [`CUBIC_MIN`] unknowns, every one
    /// erring by `error(k)` plus `noise(k, i)`: the corrected guesses of
    /// unknown 0, and the memory's count of known errors at the end.
    fn corrected_wide(
        error: impl Fn(f64) -> f64,
        noise: impl Fn(usize, usize) -> f64,
        steps: usize,
    ) -> (Vec<(f64, f64)>, u8) {
        use nalgebra::{Const, SVector};
        let mut memory = NewtonMemory::new(Const::<CUBIC_MIN>);
        let mut solution = SVector::<f64, CUBIC_MIN>::zeros();
        let mut out = Vec::new();
        for k in 0..steps {
            let guess = SVector::<f64, CUBIC_MIN>::from_fn(|i, _| 10.0 + (k + i) as f64);
            let mut x = guess;
            extrapolate_and_commit(&mut memory, &solution, &mut x);
            let truth = SVector::<f64, CUBIC_MIN>::from_fn(|i, _| guess[i] + error(k as f64) + noise(k, i));
            out.push((x[0], truth[0]));
            solution = truth;
        }
        (out, memory.known)
    }

    #[test]
    fn a_wide_system_predicts_a_cubic_error_exactly_once_five_errors_are_known() {
        // Twenty steps: the ring of older errors goes round four times.
        let (out, known) = corrected_wide(|k| k * k * k - 2.0 * k, |_, _| 0.0, 20);
        assert_eq!(known as usize, LAGS);
        // Steps 3 and 4 extrapolate by the quadratic (the cubic's choice
        // needs a fifth error): off by the third difference, 6.
        assert_eq!(out[3].1 - out[3].0, 6.0);
        assert_eq!(out[4].1 - out[4].0, 6.0);
        for (k, &(x, truth)) in out.iter().enumerate().skip(5) {
            assert_eq!(x, truth, "step {k}");
        }
    }

    #[test]
    fn a_wide_system_predicts_a_quartic_error_exactly_once_six_errors_are_known() {
        let (out, _) = corrected_wide(|k| k * k * k * k - 3.0 * k * k, |_, _| 0.0, 20);
        // Step 5 can judge the cubic at most: off by the fourth difference, 24.
        assert_eq!(out[5].1 - out[5].0, 24.0);
        for (k, &(x, truth)) in out.iter().enumerate().skip(6) {
            assert_eq!(x, truth, "step {k}");
        }
    }

    #[test]
    fn a_wide_system_follows_an_error_that_alternates_once_seven_errors_are_known() {
        // Energy–momentum's multipliers: a smooth part and one that flips
        // sign every step, growing linearly. No polynomial follows it.
        let sign = |k: f64| if k as u64 % 2 == 0 { 1.0 } else { -1.0 };
        let error = |k: f64| k * k + sign(k) * (3.0 + k);
        let (out, _) = corrected_wide(error, |_, _| 0.0, 20);
        for &(x, truth) in &out[3..7] {
            assert!((truth - x).abs() >= 8.0, "the quadratic misses the alternating part");
        }
        for (k, &(x, truth)) in out.iter().enumerate().skip(7) {
            assert_eq!(x, truth, "step {k}");
        }
    }

    #[test]
    fn a_wide_system_keeps_the_quadratic_where_it_predicts_as_well_or_better() {
        // A quadratic error is predicted exactly by every rule: the tie
        // keeps the quadratic, the guesses are the narrow system's.
        let quadratic = |k: f64| 2.0 * k * k - 3.0 * k + 5.0;
        let (wide, _) = corrected_wide(quadratic, |_, _| 0.0, 20);
        assert_eq!(wide, corrected(quadratic, 20));
        // Noise of period three, which no rule follows: each rule misses the
        // last error by its own multiple of it, and the one that missed least
        // there is taken, whose next miss may be larger. That is the price of
        // the choice at the round-off floor: here the guesses are off by 1.8
        // times the quadratic's alone on average (7.1 against 4.0 /64), which
        // is why systems below `CUBIC_MIN` unknowns (whose errors sit at that
        // floor) keep the quadratic. Never by more than the noisiest rule's
        // weights allow (1 + 31 times the noise).
        let noise = |k: usize, _| [1.0, -1.0, 0.0][k % 3] / 64.0;
        let mean = |v: &[(f64, f64)]| v[8..].iter().map(|&(x, t)| (t - x).abs()).sum::<f64>() / (v.len() - 8) as f64;
        let quadratic_only = corrected(|k| quadratic(k) + noise(k as usize, 0), 40);
        let (noisy, _) = corrected_wide(quadratic, noise, 40);
        assert!(mean(&noisy) <= 2.0 * mean(&quadratic_only));
        assert!(noisy[8..].iter().all(|&(x, t)| (t - x).abs() <= 32.0 / 64.0));
    }

    #[test]
    fn memory_of_run_time_size_trades_buffers_to_the_same_values_as_fixed_size_copies() {
        use nalgebra::{Const, DVector, Dyn, SVector};
        let mut next = {
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 20001) as f64 / 1000.0 - 10.0
            }
        };
        // A wide system (the ring of older errors in use) and a narrow one,
        // each at run-time size (`commit` swaps buffers) and fixed size (it
        // copies), for more steps than the ring holds.
        fn both<const N: usize>(next: &mut impl FnMut() -> f64) {
            let (mut traded, mut fresh) = (NewtonMemory::new(Dyn(N)), NewtonMemory::new(Dyn(N)));
            let (mut copied, mut fresh_copied) = (NewtonMemory::new(Const::<N>), NewtonMemory::new(Const::<N>));
            // Thirty steps: the fits begin once twelve errors are known.
            for step in 0..30 {
                let previous: Vec<f64> = (0..N).map(|_| next()).collect();
                let guess: Vec<f64> = (0..N).map(|_| next()).collect();
                let (mut a, mut b) = (DVector::from_vec(guess.clone()), SVector::<f64, N>::from_vec(guess));
                extrapolate(
                    &traded,
                    &DVector::from_vec(previous.clone()),
                    &mut a,
                    &mut fresh,
                    &Groups::default(),
                );
                traded.commit(&mut fresh);
                extrapolate(
                    &copied,
                    &SVector::<f64, N>::from_vec(previous),
                    &mut b,
                    &mut fresh_copied,
                    &Groups::default(),
                );
                copied.commit(&mut fresh_copied);
                assert_eq!(a.as_slice(), b.as_slice(), "{N} unknowns, step {step}");
                assert_eq!((traded.known, traded.head), (copied.known, copied.head));
                assert_eq!(
                    (traded.gram, traded.fit, traded.fit_age),
                    (copied.gram, copied.fit, copied.fit_age)
                );
                for (t, c) in [
                    (&traded.guess, &copied.guess),
                    (&traded.error, &copied.error),
                    (&traded.error2, &copied.error2),
                ]
                .into_iter()
                .chain(traded.older.iter().zip(&copied.older))
                {
                    assert_eq!(t.as_slice(), c.as_slice(), "{N} unknowns, step {step}");
                }
            }
        }
        both::<{ CUBIC_MIN + 3 }>(&mut next);
        both::<5>(&mut next);
    }

    /// Steps of a wide system of `N` unknowns whose predictor errs by
    /// `error(k, i)` at step `k` in unknown `i`, with `groups`: the largest
    /// miss of the corrected guesses over steps `from..steps`, over the
    /// unknowns of `which`, relative to the largest error there.
    fn worst_miss<const N: usize>(
        error: impl Fn(f64, usize) -> f64,
        groups: &Groups,
        which: impl Fn(usize) -> bool,
        from: usize,
        steps: usize,
    ) -> f64 {
        use nalgebra::{Const, SVector};
        let mut memory = NewtonMemory::new(Const::<N>);
        let mut solution = SVector::<f64, N>::zeros();
        let (mut worst, mut size) = (0.0f64, 0.0f64);
        for k in 0..steps {
            let guess = SVector::<f64, N>::from_fn(|i, _| 1.0 + 0.1 * (k + i) as f64);
            let mut x = guess;
            let mut fresh = memory;
            extrapolate(&memory, &solution, &mut x, &mut fresh, groups);
            memory.commit(&mut fresh);
            let truth = SVector::<f64, N>::from_fn(|i, _| guess[i] + error(k as f64, i));
            if k >= from {
                for i in (0..N).filter(|&i| which(i)) {
                    worst = worst.max((truth[i] - x[i]).abs());
                    size = size.max(error(k as f64, i).abs());
                }
            }
            solution = truth;
        }
        worst / size
    }

    #[test]
    fn a_wide_system_fits_a_recurrence_to_oscillating_errors() {
        // Every unknown mixes the same two oscillations (hω = 0.6 and 1.7,
        // as a long chain's multipliers do at h = 0.01) in its own
        // proportions. Polynomial rules miss them by a large part of their
        // size; the fitted recurrence, once twelve errors are known and its
        // first fit has been judged, follows them to round-off.
        let error = |k: f64, i: usize| {
            let i = i as f64;
            (0.6 * k + 0.1 * i).sin() + (0.3 + 0.05 * i) * (1.7 * k).cos()
        };
        let everyone = |_| true;
        let early = worst_miss::<CUBIC_MIN>(error, &Groups::default(), everyone, 6, 12);
        assert!(early > 0.05, "the rules alone miss by {early:e}");
        let fitted = worst_miss::<CUBIC_MIN>(error, &Groups::default(), everyone, 14, 60);
        assert!(fitted < 1e-8, "the fit misses by {fitted:e}");
    }

    #[test]
    fn groups_of_unknowns_are_fitted_apart() {
        // Unknowns 0, 4, 8, … are absent from their own equation (a
        // pattern without their diagonal): multipliers, here of errors a
        // thousand times larger than the others' and following another
        // oscillation. Fitted together, the large errors have the fit to
        // themselves and the small ones are followed poorly; apart, each
        // group is followed to round-off.
        const N: usize = 20;
        let apart = |i: usize| i % 4 == 0;
        let error = |k: f64, i: usize| {
            if apart(i) {
                1e3 * ((0.9 * k).sin() + 0.02 * i as f64 * (2.1 * k).cos())
            } else {
                (0.4 * k + 0.2 * i as f64).cos() + 0.1 * (1.3 * k).sin()
            }
        };
        let pattern: Vec<(u32, u32)> = (0..N as u32)
            .flat_map(|i| [(i, (i + 1) % N as u32), ((i + 1) % N as u32, i)])
            .chain((0..N as u32).filter(|&i| !apart(i as usize)).map(|i| (i, i)))
            .collect();
        let groups = Groups::of_pattern(N, &pattern);
        assert_eq!(groups.apart().map(|(a, r)| (a.len(), r.len())), Some((5, 15)));
        let small = |i| !apart(i);
        let together = worst_miss::<N>(error, &Groups::default(), small, 20, 60);
        let separate = worst_miss::<N>(error, &groups, small, 20, 60);
        assert!(separate < 1e-7, "apart: {separate:e}");
        assert!(together > 1e3 * separate, "together: {together:e}, apart: {separate:e}");
        assert!(worst_miss::<N>(error, &groups, apart, 20, 60) < 1e-7);
    }

    #[test]
    fn one_group_where_every_unknown_or_none_is_in_its_own_equation() {
        let full: Vec<(u32, u32)> = (0..4).flat_map(|i| (0..4).map(move |j| (i, j))).collect();
        assert_eq!(Groups::of_pattern(4, &full), Groups::default());
        let off: Vec<(u32, u32)> = full.iter().copied().filter(|(i, j)| i != j).collect();
        assert_eq!(Groups::of_pattern(4, &off), Groups::default());
    }

    #[test]
    fn errors_no_extrapolation_follows_are_not_amplified() {
        // White noise: every rule misses it by a multiple of its size (the
        // quadratic by about 4.5 times), and a recurrence fitted to it
        // predicts nothing. Adding nothing misses by the noise itself, and
        // the guesses must not be off by much more than that.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noise: Vec<f64> = (0..40 * CUBIC_MIN)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2001) as f64 / 1000.0 - 1.0
            })
            .collect();
        let error = |k: f64, i: usize| noise[k as usize * CUBIC_MIN + i];
        let everyone = |_| true;
        let worst = worst_miss::<CUBIC_MIN>(error, &Groups::default(), everyone, 8, 40);
        assert!(
            worst <= 2.0,
            "the corrected guesses miss by up to {worst:.2} times the noise"
        );
    }
}
