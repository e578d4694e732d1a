//! The predictor's error, extrapolated from the last steps' and added to its
//! guess.

use nalgebra::allocator::Allocator;
use nalgebra::{DefaultAllocator, Dim, OVector};

use crate::memory::{NewtonMemory, OLDER};

/// Systems with at least this many unknowns may extrapolate the
/// predictor's error by a rule of higher degree than the quadratic (see
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
const RULES: [&[f64]; 4] = [
    &[3.0, -3.0, 1.0],
    &[2.0, 1.0, -4.0, 1.0, 2.0, -1.0],
    &[4.0, -6.0, 4.0, -1.0],
    &[5.0, -10.0, 10.0, -5.0, 1.0],
];

/// The errors a wide system keeps: the last one, `error`, `error2` and the
/// ring `older`. Every rule reads one fewer than it is judged on.
const DEPTH: usize = 3 + OLDER;

/// [`RULES`] with zero weights on the errors a rule does not read: one
/// width for every rule, which the choice's loop computes side by side.
const PADDED: [[f64; DEPTH - 1]; RULES.len()] = {
    let mut out = [[0.0; DEPTH - 1]; RULES.len()];
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
        assert!(
            RULES[r].len() < DEPTH,
            "a rule is judged on one error more than it reads"
        );
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

/// A wide system's weights of the errors newest first: the rule chosen
/// (see [`choose`]) once three errors are known.
#[inline(always)]
fn wide_weights<X: Dim>(memory: &NewtonMemory<X>, previous: &OVector<f64, X>) -> [f64; DEPTH - 1]
where
    DefaultAllocator: Allocator<X>,
{
    let mut w = [0.0; DEPTH - 1];
    match memory.known {
        0 => {}
        1 => w[0] = 1.0,
        2 => w[..2].copy_from_slice(&[2.0, -1.0]),
        _ => w = PADDED[choose(memory, previous)],
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
/// (RATTLE on the double pendulum at h = 0.01: 2.0 → 3.8). The choice is a
/// function of the state's memory alone, so every back-end makes the same
/// one.
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
) where
    DefaultAllocator: Allocator<X>,
{
    let n = x.len();
    let wide = n >= CUBIC_MIN;
    let head = memory.head as usize;
    let ring = |j: usize| &memory.older[(head + j) % OLDER].as_slice()[..n];
    let w = if wide {
        wide_weights(memory, previous)
    } else {
        [0.0; DEPTH - 1]
    };
    let (previous, g) = (&previous.as_slice()[..n], &memory.guess.as_slice()[..n]);
    let (e1, e2) = (&memory.error.as_slice()[..n], &memory.error2.as_slice()[..n]);
    let x = &mut x.as_mut_slice()[..n];
    let (fg, fe) = (
        &mut fresh.guess.as_mut_slice()[..n],
        &mut fresh.error.as_mut_slice()[..n],
    );
    if wide {
        let (a3, a4, a5) = (ring(0), ring(1), ring(2));
        for i in 0..n {
            let p = x[i];
            let err = previous[i] - g[i];
            x[i] = p + (w[0] * err + w[1] * e1[i] + w[2] * e2[i] + w[3] * a3[i] + w[4] * a4[i] + w[5] * a5[i]);
            fe[i] = err;
            fg[i] = p;
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

/// The rule of [`RULES`] (its index) that would have predicted the last
/// error (`previous` minus the guess) from the ones before it best, in the
/// 2-norm, among the rules judged on errors known; ties go to the earlier.
/// The quadratic where no other can be judged.
#[inline(always)]
fn choose<X: Dim>(memory: &NewtonMemory<X>, previous: &OVector<f64, X>) -> usize
where
    DefaultAllocator: Allocator<X>,
{
    let known = memory.known as usize;
    // A rule is judged on one error more than it reads.
    let judged = |r: usize| RULES[r].len() < known;
    if !(1..RULES.len()).any(judged) {
        return 0;
    }
    let n = previous.len();
    let head = memory.head as usize;
    let ring = |j: usize| &memory.older[(head + j) % OLDER].as_slice()[..n];
    let (previous, g) = (&previous.as_slice()[..n], &memory.guess.as_slice()[..n]);
    let (e1, e2) = (&memory.error.as_slice()[..n], &memory.error2.as_slice()[..n]);
    let (a3, a4, a5, a6) = (ring(0), ring(1), ring(2), ring(3));
    let mut miss = [0.0f64; RULES.len()];
    for i in 0..n {
        let d = misses([previous[i] - g[i], e1[i], e2[i], a3[i], a4[i], a5[i], a6[i]]);
        for (m, d) in miss.iter_mut().zip(d) {
            *m += d * d;
        }
    }
    let mut best = 0;
    for r in 1..RULES.len() {
        if judged(r) && miss[r] < miss[best] {
            best = r;
        }
    }
    best
}

/// What each rule of [`RULES`] misses an error `s[0]` by, from the errors
/// before it, `s[1..]` newest first: its characteristic polynomial applied
/// to `s`. `(z − 1)ʲ` is the j-th backward difference and `(z − 1)⁴(z + 1)²`
/// the fourth's differences weighted 1, 2, 1; shared, the differences cost
/// 22 operations where the rules' weights cost 52 (a twelfth of the
/// 16-link chains' step went to this choice).
#[inline(always)]
fn misses(s: [f64; DEPTH]) -> [f64; RULES.len()] {
    let d1: [f64; 6] = std::array::from_fn(|k| s[k] - s[k + 1]);
    let d2: [f64; 5] = std::array::from_fn(|k| d1[k] - d1[k + 1]);
    let d3: [f64; 4] = std::array::from_fn(|k| d2[k] - d2[k + 1]);
    let d4: [f64; 3] = std::array::from_fn(|k| d3[k] - d3[k + 1]);
    [d3[0], d4[0] + 2.0 * d4[1] + d4[2], d4[0], d4[0] - d4[1]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_misses_by_differences_are_the_rules() {
        // Small integers: every operation either way is exact, so the two
        // forms must agree to the bit.
        let mut next = {
            let mut x = 0x2545_f491_4f6c_dd1du64;
            move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2001) as f64 - 1000.0
            }
        };
        for _ in 0..1000 {
            let s: [f64; DEPTH] = std::array::from_fn(|_| next());
            let by_weights: Vec<f64> = PADDED
                .iter()
                .map(|w| s[0] - w.iter().zip(&s[1..]).map(|(w, b)| w * b).sum::<f64>())
                .collect();
            assert_eq!(misses(s).to_vec(), by_weights, "{s:?}");
        }
    }
    use nalgebra::{Vector1, U1};

    /// One step's extrapolation of `x`, its memory committed as after a
    /// successful solve.
    fn extrapolate_and_commit<X: Dim>(memory: &mut NewtonMemory<X>, previous: &OVector<f64, X>, x: &mut OVector<f64, X>)
    where
        DefaultAllocator: Allocator<X>,
    {
        let mut fresh = memory.clone();
        extrapolate(memory, previous, x, &mut fresh);
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
        assert_eq!(known as usize, DEPTH);
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
            for step in 0..12 {
                let previous: Vec<f64> = (0..N).map(|_| next()).collect();
                let guess: Vec<f64> = (0..N).map(|_| next()).collect();
                let (mut a, mut b) = (DVector::from_vec(guess.clone()), SVector::<f64, N>::from_vec(guess));
                extrapolate(&traded, &DVector::from_vec(previous.clone()), &mut a, &mut fresh);
                traded.commit(&mut fresh);
                extrapolate(
                    &copied,
                    &SVector::<f64, N>::from_vec(previous),
                    &mut b,
                    &mut fresh_copied,
                );
                copied.commit(&mut fresh_copied);
                assert_eq!(a.as_slice(), b.as_slice(), "{N} unknowns, step {step}");
                assert_eq!((traded.known, traded.head), (copied.known, copied.head));
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
}
