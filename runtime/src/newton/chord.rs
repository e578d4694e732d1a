//! The chord cost model: whether to keep a step's first factorization for
//! its later iterations (chord iterations, linear convergence) instead of
//! taking new factors each iteration (Newton, quadratic).

use super::options::NewtonOptions;
use super::stopping::STRICT;

/// A factorization is kept for the next iteration (a chord iteration) when
/// the predicted contraction is at most this: the iteration then still
/// converges to round-off in about as many residuals as a Newton one would
/// take Jacobians, each far cheaper. (It was 1e-4 until a chord could stop at
/// the residual's round-off, `stopping::Tolerance::chord_below_floor`: with
/// that stop, 1e-3 took the 16-link energy–momentum chain at h = 0.01 from
/// 1.33 to 1.10 factorizations per step and 6.6 to 5.9 µs, the 128-link one
/// from 1.97 to 1.55, and left RATTLE's counts as they were. It was 1e-3
/// until 2026-11-29: 1e-2 took the energy–momentum chain from `sway` at
/// h = 0.01 from 1.82 to 1.64 factorizations per step at 64 links and from
/// 2.18 to 1.94 at 128, where its step fell from 97 to 84–87 µs, fastest
/// rounds of `chain_profile`; the director, RATTLE and Störmer–Verlet
/// chains' counts barely moved: 1.53 to 1.47 for the averaged director
/// chain at 128 links.)
pub(crate) const CHORD_CONTRACTION: f64 = 1e-2;

/// Predicting the iterations each way ([`chord_pays`]) costs about as much
/// as this many kernel operations: systems whose Jacobian and factorization
/// cost less than that (a sphere's 3×3 step) do not weigh chord iterations.
const DECISION_OPS: f64 = 100.0;

/// What a chord iteration (residual, solve) and a Newton iteration (residual
/// and Jacobian, factorization, solve) cost, in operations; `None` where the
/// kernels do not say.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct IterationCosts(pub(crate) Option<(f64, f64)>);

impl IterationCosts {
    /// The costs for `n` unknowns, a Jacobian of band `(kl, ku)` (`None`:
    /// dense), and kernels of `(residual, residual and Jacobian)` operations.
    pub(crate) fn new(n: usize, band: Option<(usize, usize)>, kernel_ops: Option<(usize, usize)>) -> Self {
        let n = n as f64;
        // A banded solve: `kl` multipliers forward, `kl + ku` entries of U
        // and a reciprocal pivot back, per row.
        let (factor, solve) = match band {
            Some((kl, ku)) => (
                2.0 * n * kl as f64 * (kl + ku + 1) as f64,
                2.0 * n * (2 * kl + ku + 1) as f64,
            ),
            None => (2.0 * n * n * n / 3.0, 2.0 * n * n),
        };
        IterationCosts(kernel_ops.map(|(r, rj)| (r as f64 + solve, rj as f64 + factor + solve)))
    }

    /// Whether chord iterations could save more than deciding on them costs.
    #[inline(always)]
    pub(crate) fn worth_deciding(&self) -> bool {
        self.0.is_none_or(|(chord, newton)| newton - chord >= DECISION_OPS)
    }
}

/// Whether a step keeps its first factors, after a first update of norm `dn`,
/// with the last step's Newton constant `contraction`: the chord's rate
/// `C ‖Δx_1‖` must be fast ([`CHORD_CONTRACTION`]) and the chord must pay
/// ([`chord_pays`], at the tolerance `ε‖x‖`, `x_norm` evaluated only then).
#[inline(always)]
pub(crate) fn keep_factors(
    opt: &NewtonOptions,
    costs: IterationCosts,
    contraction: Option<f64>,
    dn: f64,
    x_norm: impl FnOnce() -> f64,
) -> bool {
    // No closure here: with one, the optimizer left the decision out of line
    // in the loop at run-time sizes.
    let Some(c) = contraction else {
        return false;
    };
    opt.chord
        && costs.worth_deciding()
        && !opt.simplified
        && c * dn <= CHORD_CONTRACTION
        && chord_pays(c, dn, opt.tolerance * x_norm(), costs)
}

/// Whether keeping the first factorization pays, from Newton's constant `c`
/// (the last step's) and the first update `d1`: the iterations each way are
/// predicted from `c` (Newton: `d ← c d²`, stopped when `θ d ≤ tol`; chord:
/// `d ← c d1 · d`, stopped when its error is 1 % of that), and the chord's
/// extra residuals must cost at most the Jacobians and factorizations it
/// saves. Without costs, only when it takes no more iterations.
pub(crate) fn chord_pays(c: f64, d1: f64, tol: f64, costs: IterationCosts) -> bool {
    let newton = newton_iterations(c, d1, tol);
    let chord = chord_iterations(c * d1, d1, tol);
    // Beyond the first iteration: Newton takes new factors in all but its
    // last, which reuses them at round-off from the third on; the chord in
    // none.
    match costs.0 {
        Some((chord_cost, newton_cost)) => {
            let newton_rest = if newton <= 2.0 {
                newton_cost
            } else {
                (newton - 2.0) * newton_cost + chord_cost
            };
            (chord - 1.0) * chord_cost <= newton_rest
        }
        None => chord <= newton,
    }
}

/// Newton's iterations predicted from its constant `c` and first update
/// `d1`, at most 8.
fn newton_iterations(c: f64, d1: f64, tol: f64) -> f64 {
    let (mut d, mut k) = (d1, 1.0);
    loop {
        let next = c * d * d;
        k += 1.0;
        if (c * d) * next <= tol || k >= 8.0 {
            return k;
        }
        d = next;
    }
}

/// The chord's iterations at the linear `rate` from a first update `d1`, at
/// most 12.
fn chord_iterations(rate: f64, d1: f64, tol: f64) -> f64 {
    let (mut d, mut k) = (d1, 1.0);
    loop {
        d *= rate;
        k += 1.0;
        if rate * d <= STRICT * tol * (1.0 - rate) || k >= 12.0 {
            return k;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterations_are_predicted_from_the_contraction() {
        // C = 1, ‖Δx₁‖ = 1e-6, tolerance 1e-16: Newton's second update is
        // 1e-12 and predicts an error of 1e-18; the chord at rate 1e-6 needs a
        // third residual to get below 1 % of the tolerance.
        assert_eq!(newton_iterations(1.0, 1e-6, 1e-16), 2.0);
        assert_eq!(chord_iterations(1e-6, 1e-6, 1e-16), 3.0);
        // A slow chord hits its bound; so does a Newton that cannot converge.
        assert_eq!(chord_iterations(0.5, 1.0, 1e-16), 12.0);
        assert_eq!(newton_iterations(10.0, 1.0, 1e-16), 8.0);
    }

    #[test]
    fn chord_iterations_are_chosen_only_when_they_pay() {
        let (c, d1, tol) = (1.0, 1e-6, 1e-16);
        // Without costs: only when the chord takes no more iterations (3 > 2).
        assert!(!chord_pays(c, d1, tol, IterationCosts(None)));
        // Two extra residuals of 10 against one Newton iteration of 100: pays.
        assert!(chord_pays(c, d1, tol, IterationCosts(Some((10.0, 100.0)))));
        // At 50 each they cost exactly what they save: still pays (ties keep factors).
        assert!(chord_pays(c, d1, tol, IterationCosts(Some((50.0, 100.0)))));
        // At 60 each they cost more.
        assert!(!chord_pays(c, d1, tol, IterationCosts(Some((60.0, 100.0)))));
        // A faster contraction: the chord is done in as many iterations as
        // Newton, so it pays even without costs.
        assert!(chord_pays(1.0, 1e-9, tol, IterationCosts(None)));
    }

    #[test]
    fn costs_count_kernels_factorization_and_solves() {
        // 3 unknowns, dense: solve 2·9 = 18, factorization 2·27/3 = 18.
        let c = IterationCosts::new(3, None, Some((40, 100)));
        assert_eq!(c, IterationCosts(Some((58.0, 136.0))));
        assert!(c.worth_deciding() == (136.0 - 58.0 >= DECISION_OPS));
        assert!(!c.worth_deciding());
        // Banded (1, 1), 10 unknowns: factorization 2·10·1·3 = 60, solve
        // 2·10·4 = 80 (not the dense 200).
        let b = IterationCosts::new(10, Some((1, 1)), Some((40, 400)));
        assert_eq!(b, IterationCosts(Some((120.0, 540.0))));
        assert!(b.worth_deciding());
        // Unknown costs: always weighed.
        assert!(IterationCosts::new(3, None, None).worth_deciding());
    }

    #[test]
    fn factors_are_kept_only_with_a_fast_predicted_contraction() {
        let opt = NewtonOptions::default();
        let cheap = IterationCosts(Some((10.0, 1000.0)));
        let x = || 1.0;
        assert!(keep_factors(&opt, cheap, Some(1.0), 1e-6, x));
        // Nothing known from a last step: no prediction, no chord.
        assert!(!keep_factors(&opt, cheap, None, 1e-6, x));
        // Predicted rate C ‖Δx₁‖ = 0.1 > 1e-2; 1e-2 itself is kept.
        assert!(!keep_factors(&opt, cheap, Some(1e5), 1e-6, x));
        assert!(keep_factors(&opt, cheap, Some(1e4), 1e-6, x));
        // Switched off, or simplified Newton (which keeps factors its own way).
        let off = NewtonOptions { chord: false, ..opt };
        assert!(!keep_factors(&off, cheap, Some(1.0), 1e-6, x));
        let simplified = NewtonOptions {
            simplified: true,
            ..opt
        };
        assert!(!keep_factors(&simplified, cheap, Some(1.0), 1e-6, x));
        // Too small a system to be worth the decision.
        let small = IterationCosts(Some((10.0, 50.0)));
        assert!(!keep_factors(&opt, small, Some(1.0), 1e-6, x));
    }
}
