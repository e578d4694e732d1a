//! The predictor's error, extrapolated from the last steps' and added to its
//! guess.

use nalgebra::allocator::Allocator;
use nalgebra::{DefaultAllocator, Dim, OVector};

use crate::memory::NewtonMemory;

/// Corrects the predictor's guess `x` by its error extrapolated from the last
/// steps', and records the error of the step before (`previous`, that step's
/// solution, minus the guess it was started from).
///
/// The predictor's error changes smoothly from one step to the next: it is
/// extrapolated from the last three steps' by the quadratic through them
/// (`3e_k − 3e_{k−1} + e_{k−2}`; linearly from two after a second step, the
/// last one's alone after a first; none on a first step). A cubic through four
/// takes no fewer iterations and amplifies noise (RATTLE on the double
/// pendulum: up to 6). The entries are finite (memory is kept only from
/// successful steps), so a zero weight is a zero term. Element by element:
/// the guess was stored that way, and a wide load of narrow stores stalls.
#[inline(always)]
pub(crate) fn extrapolate<X: Dim>(memory: &mut NewtonMemory<X>, previous: &OVector<f64, X>, x: &mut OVector<f64, X>)
where
    DefaultAllocator: Allocator<X>,
{
    let (a, b, c) = match memory.known {
        0 => (0.0, 0.0, 0.0),
        1 => (1.0, 0.0, 0.0),
        2 => (2.0, 1.0, 0.0),
        _ => (3.0, 3.0, 1.0),
    };
    for i in 0..x.len() {
        let p = x[i];
        let err = previous[i] - memory.guess[i];
        x[i] = p + (a * err - b * memory.error[i] + c * memory.error2[i]);
        memory.error2[i] = memory.error[i];
        memory.error[i] = err;
        memory.guess[i] = p;
    }
    memory.known = (memory.known + 1).min(3);
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
}
