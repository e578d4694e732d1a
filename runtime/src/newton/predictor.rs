//! The predictor's error, extrapolated from the last steps' and added to its
//! guess.

use nalgebra::allocator::Allocator;
use nalgebra::{DefaultAllocator, Dim, OVector};

use crate::memory::NewtonMemory;

/// Systems with at least this many unknowns may extrapolate the
/// predictor's error by a cubic (see [`extrapolate`]). Below it the choice
/// changed no iteration count of the models in `models/` (h = 1e-3 to
/// 0.05, every scheme; the 8-link chains excepted), while the two more
/// vectors it reads and writes would cost the smallest steps, whose
/// fixed-size drivers hold at most 8 unknowns, a share of their time.
pub(crate) const CUBIC_MIN: usize = 16;

const _: () = assert!(
    CUBIC_MIN > crate::native::MAX_DIRECT_UNKNOWNS,
    "fixed-size drivers carry no error3, error4"
);

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
/// With [`CUBIC_MIN`] unknowns or more and five errors known, the cubic
/// through four (`4e_k − 6e_{k−1} + 4e_{k−2} − e_{k−3}`) is taken instead
/// where it would have missed the last step's error by less than the
/// quadratic did (its fourth difference against the quadratic's third).
/// Always taken, the cubic amplifies round-off (weights 15 against 7):
/// small systems, whose errors are at that floor, took up to twice the
/// iterations (RATTLE on the double pendulum at h = 0.01: 2.0 → 3.8). On a
/// smooth motion of a long chain it errs by `O(hω)` less: the 32-link
/// director chain at h = 0.01 from `tilted` starts Newton 5× closer and
/// takes 2.2 iterations per step instead of 3.0. The choice is a function
/// of the state's memory alone, so every back-end makes the same one.
#[inline(always)]
pub(crate) fn extrapolate<X: Dim>(memory: &mut NewtonMemory<X>, previous: &OVector<f64, X>, x: &mut OVector<f64, X>)
where
    DefaultAllocator: Allocator<X>,
{
    let (a, b, c, d) = match memory.known {
        0 => (0.0, 0.0, 0.0, 0.0),
        1 => (1.0, 0.0, 0.0, 0.0),
        2 => (2.0, 1.0, 0.0, 0.0),
        3 | 4 => (3.0, 3.0, 1.0, 0.0),
        _ if cubic_predicts_better(memory, previous) => (4.0, 6.0, 4.0, 1.0),
        _ => (3.0, 3.0, 1.0, 0.0),
    };
    let n = x.len();
    let cubic = n >= CUBIC_MIN;
    // Slices of one length up front: indexing the vectors in the loop
    // reloaded each one's pointer and checked its bounds at every element
    // (the stores might have moved them), about 10 ns an unknown.
    let NewtonMemory {
        guess,
        error,
        error2,
        error3,
        error4,
        known,
        ..
    } = memory;
    let (x, previous) = (&mut x.as_mut_slice()[..n], &previous.as_slice()[..n]);
    let (g, e1, e2) = (
        &mut guess.as_mut_slice()[..n],
        &mut error.as_mut_slice()[..n],
        &mut error2.as_mut_slice()[..n],
    );
    if cubic {
        let (e3, e4) = (&mut error3.as_mut_slice()[..n], &mut error4.as_mut_slice()[..n]);
        for i in 0..n {
            let p = x[i];
            let err = previous[i] - g[i];
            x[i] = p + (a * err - b * e1[i] + c * e2[i] - d * e3[i]);
            e4[i] = e3[i];
            e3[i] = e2[i];
            e2[i] = e1[i];
            e1[i] = err;
            g[i] = p;
        }
    } else {
        for i in 0..n {
            let p = x[i];
            let err = previous[i] - g[i];
            x[i] = p + (a * err - b * e1[i] + c * e2[i]);
            e2[i] = e1[i];
            e1[i] = err;
            g[i] = p;
        }
    }
    *known = (*known + 1).min(if cubic { 5 } else { 3 });
}

/// Whether the cubic through the last four errors would have predicted the
/// last one (`previous` minus the guess) better than the quadratic through
/// three did: the fourth difference of the last five errors against the
/// third of the last four, in the 2-norm. Needs five errors known with the
/// last (`known ≥ 5`: `error4` is a step's), and [`CUBIC_MIN`] unknowns.
#[inline(always)]
fn cubic_predicts_better<X: Dim>(memory: &NewtonMemory<X>, previous: &OVector<f64, X>) -> bool
where
    DefaultAllocator: Allocator<X>,
{
    if previous.len() < CUBIC_MIN {
        return false;
    }
    let n = previous.len();
    let (previous, g) = (&previous.as_slice()[..n], &memory.guess.as_slice()[..n]);
    let (e1, e2) = (&memory.error.as_slice()[..n], &memory.error2.as_slice()[..n]);
    let (e3, e4) = (&memory.error3.as_slice()[..n], &memory.error4.as_slice()[..n]);
    let (mut quadratic, mut cubic) = (0.0, 0.0);
    for i in 0..n {
        let e = previous[i] - g[i];
        let third = e - 3.0 * e1[i] + 3.0 * e2[i] - e3[i];
        let fourth = third - (e1[i] - 3.0 * e2[i] + 3.0 * e3[i] - e4[i]);
        quadratic += third * third;
        cubic += fourth * fourth;
    }
    cubic < quadratic
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Vector1, U1};

    /// Steps of a trajectory whose predictor errs by `error(k)` at step `k`:
    /// the solution is `guess + error`; returns the corrected guesses.
    fn corrected(error: impl Fn(f64) -> f64, steps: usize) -> Vec<(f64, f64)> {
        let mut memory = NewtonMemory::new(U1);
        let mut solution = Vector1::new(0.0);
        let mut out = Vec::new();
        for k in 0..steps {
            let guess = 10.0 + k as f64; // the raw predictor, any smooth sequence
            let mut x = Vector1::new(guess);
            extrapolate(&mut memory, &solution, &mut x);
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
        extrapolate(&mut memory, &Vector1::new(0.0), &mut x);
        extrapolate(&mut memory, &Vector1::new(3.0), &mut x);
        assert_eq!(memory.known, 2);
        memory.forget();
        let mut x = Vector1::new(7.0);
        extrapolate(&mut memory, &Vector1::new(100.0), &mut x);
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
            extrapolate(&mut memory, &solution, &mut x);
            let truth = SVector::<f64, CUBIC_MIN>::from_fn(|i, _| guess[i] + error(k as f64) + noise(k, i));
            out.push((x[0], truth[0]));
            solution = truth;
        }
        (out, memory.known)
    }

    #[test]
    fn a_wide_system_predicts_a_cubic_error_exactly_once_five_errors_are_known() {
        let (out, known) = corrected_wide(|k| k * k * k - 2.0 * k, |_, _| 0.0, 10);
        assert_eq!(known, 5);
        // Steps 3 and 4 extrapolate by the quadratic (the cubic's choice
        // needs a fifth error): off by the third difference, 6.
        assert_eq!(out[3].1 - out[3].0, 6.0);
        assert_eq!(out[4].1 - out[4].0, 6.0);
        for (k, &(x, truth)) in out.iter().enumerate().skip(5) {
            assert_eq!(x, truth, "step {k}");
        }
    }

    #[test]
    fn a_wide_system_keeps_the_quadratic_where_it_predicts_as_well_or_better() {
        // A quadratic error is predicted exactly by both: the tie keeps the
        // quadratic, the guesses are the narrow system's.
        let quadratic = |k: f64| 2.0 * k * k - 3.0 * k + 5.0;
        let (wide, _) = corrected_wide(quadratic, |_, _| 0.0, 10);
        assert_eq!(wide, corrected(quadratic, 10));
        // Noise that alternates in sign, as round-off at the floor does:
        // the cubic's fourth difference doubles it against the quadratic's
        // third, so the quadratic stays; the guesses are off by 8 times the
        // noise (1 + 3 + 3 + 1), not the cubic's 16.
        let noise = |k: usize, _| if k % 2 == 0 { 1.0 / 64.0 } else { -1.0 / 64.0 };
        let (noisy, _) = corrected_wide(quadratic, noise, 12);
        for (k, &(x, truth)) in noisy.iter().enumerate().skip(5) {
            assert_eq!((truth - x).abs(), 8.0 / 64.0, "step {k}");
        }
    }
}
