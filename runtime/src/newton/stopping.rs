//! When a solve is done: the rules of the Newton loop, as pure functions of
//! the update norms, so that each can be tested on sequences of known
//! contraction. All compare squares, which spares square roots and divisions
//! on the step's critical path; the expressions are the loop's own, operation
//! for operation, so the loop's results do not depend on their being here.

use super::options::NewtonOptions;

/// Where a solve stops on a predicted error that has a sign and a direction
/// (not round-off noise, which averages out), that error must be this
/// fraction of the tolerance, where a Newton iterate's is: otherwise it would
/// add up over a run, as simplified Newton's does.
pub(crate) const STRICT: f64 = 1e-2;

/// How many ulps of the state a residual may keep when it stops falling
/// (see [`Tolerance::residual_at_floor`]).
pub(crate) const RESIDUAL_FLOOR: f64 = 64.0;

/// `STRICT²`.
const STRICT2: f64 = STRICT * STRICT;

/// The squared tolerances of one solve.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tolerance {
    /// `ε²`, of the relative tolerance `ε`
    tol2: f64,
    /// the stall tolerance, squared
    stall2: f64,
}

impl Tolerance {
    #[inline(always)]
    pub(crate) fn new(opt: &NewtonOptions) -> Self {
        Self {
            tol2: opt.tolerance * opt.tolerance,
            stall2: opt.stall_tolerance * opt.stall_tolerance,
        }
    }

    /// The contraction test (Hairer–Wanner): with `θ = ‖Δx_j‖/‖Δx_{j−1}‖`,
    /// the error left is about `θ/(1−θ) ‖Δx_j‖`; done when that is at most
    /// `ε‖x‖`. In squares: `dn² ≤ ε‖x‖(last − dn)`, only while the updates
    /// shrink. `dn2 = dn²`, `x2 = ‖x‖²`.
    #[inline(always)]
    pub(crate) fn contracted(&self, dn2: f64, dn: f64, last: f64, x2: f64) -> bool {
        let gap = last - dn;
        gap > 0.0 && dn2 * dn2 <= self.tol2 * x2 * gap * gap
    }

    /// The stall rule: an update that no longer shrinks counts as converged
    /// when it is below `stall_tolerance · max(‖x‖, ‖z‖)`, the round-off floor
    /// of badly scaled unknowns (multipliers at small step sizes), which lies
    /// well above `ε‖x‖`. The caller decides that the update did not shrink.
    #[inline(always)]
    pub(crate) fn stalled(&self, dn2: f64, x2: f64, z2: f64) -> bool {
        dn2 <= self.stall2 * x2.max(z2)
    }

    /// The residual-floor rule: a residual at the round-off of the state
    /// (`RESIDUAL_FLOOR · ε_machine · max(‖z‖, 1)`) that no longer falls
    /// cannot be improved by iterating. Unknowns whose residual coefficient
    /// is tiny (RATTLE's multipliers enter as `h² Gᵀλ`) then keep moving by
    /// that noise over `h²`, above any update test, and the solve would fail
    /// at a solution already as good as the arithmetic allows.
    #[inline(always)]
    pub(crate) fn residual_at_floor(&self, rn2: f64, last_rn2: f64, z2: f64) -> bool {
        rn2 > 0.25 * last_rn2 && rn2 <= residual_floor2(z2)
    }

    /// Whether a residual (norm² `rn2`) is below its round-off floor
    /// ([`RESIDUAL_FLOOR`] ulps of the state, of norm² `z2`): what an update
    /// solved from it measures is round-off, not the iteration's error.
    #[inline(always)]
    pub(crate) fn residual_below_floor(&self, rn2: f64, z2: f64) -> bool {
        rn2 <= residual_floor2(z2)
    }

    /// The first-iteration rule: a first guess good to round-off leaves no
    /// contraction to measure (the next update is noise), so the last step's
    /// constant `c` judges it: Newton's error after this update is about
    /// `c ‖Δx_1‖²`, and at `STRICT` times the tolerance the solve is done.
    #[inline(always)]
    pub(crate) fn first_update_suffices(&self, c: f64, dn2: f64, x2: f64) -> bool {
        let err = c * dn2;
        err * err <= STRICT2 * self.tol2 * x2
    }

    /// The round-off rule of a Newton update: solved (with this solve's
    /// factors) from a residual below its round-off floor (norm² `rn2`, see
    /// [`Self::residual_below_floor`]), it leaves Newton's error `C ‖Δx‖²`,
    /// and where that is below `STRICT` times the tolerance the iterate is
    /// as good as the arithmetic allows. The update itself may be far larger
    /// than the tolerance: unknowns scaled by `1/h²` (multipliers) turn the
    /// residual's round-off into updates of 1e-12 ‖x‖ (the 32-link
    /// energy–momentum chain at h = 0.01), which the contraction test then
    /// waited out for one or two more iterations, each re-noising them
    /// (that chain from `sway`, 1000 steps: 3.19 → 3.00 iterations a step).
    /// Where the update was solved with this solve's factors (a Newton
    /// iteration, or the last factors reused at round-off) that error is
    /// corrected; chord iterations have their own rule.
    #[inline(always)]
    pub(crate) fn newton_at_floor(
        &self,
        contraction: Option<f64>,
        dn2: f64,
        rn2: f64,
        x2: f64,
        z2: impl FnOnce() -> f64,
    ) -> bool {
        let Some(c) = contraction else {
            return false;
        };
        let err = c * dn2;
        err * err <= STRICT2 * self.tol2 * x2 && rn2 <= residual_floor2(z2())
    }

    /// Whether the next Newton update is at round-off, so that it may reuse
    /// this iteration's factors. Quadratic convergence, `dn ≈ C last²`,
    /// predicts the next update `C dn²`; taken with the Jacobian at this
    /// iterate instead of the next (which differ by `dn`), it errs by
    /// `C dn · C dn² = θ⁴ dn`. When that is below `STRICT` times the
    /// tolerance, the result is the full Newton one to well below an ulp, and
    /// the convergence test still decides the end.
    #[inline(always)]
    pub(crate) fn at_roundoff(&self, dn2: f64, last: f64, x2: f64) -> bool {
        let theta2 = dn2 / (last * last);
        theta2 * theta2 * theta2 * theta2 * dn2 <= STRICT2 * self.tol2 * x2
    }

    /// The chord iteration's stop: its error left is `bias` (see
    /// [`chord_bias`]) at the linear rate `rate`; one of sign and direction,
    /// not noise, which would add up over a run, so it must fall to `STRICT`
    /// times the tolerance, with the margin `1 − rate` of a linear iteration.
    #[inline(always)]
    pub(crate) fn chord_converged(&self, bias: f64, rate: f64, x2: f64) -> bool {
        let margin = 1.0 - rate;
        bias * bias <= STRICT2 * self.tol2 * x2 * margin * margin
    }

    /// The chord's stop at the round-off floor: the update a next iteration
    /// would take, `rate` times this one, is what `J⁻¹` makes of the
    /// residual left, about `rate` times this iteration's residual (`rn2`,
    /// its norm²). Where that residual is below `STRICT` times the
    /// residual's own round-off ([`RESIDUAL_FLOOR`] ulps of the state), no
    /// iteration can see the error: it is below what round-off in the
    /// residual moves the iterate by. Unknowns scaled by `h` (multipliers)
    /// meet this floor above `ε‖x‖`: on the 16-link energy–momentum chain
    /// at h = 0.01 updates stall near 1e-10 with ‖x‖ ≈ 130, and a third
    /// iteration was spent on seeing the stall.
    #[inline(always)]
    pub(crate) fn chord_below_floor(&self, rate: f64, rn2: f64, z2: f64) -> bool {
        rate * rate * rn2 <= STRICT2 * residual_floor2(z2)
    }
}

/// The residual's round-off, squared: [`RESIDUAL_FLOOR`] ulps of the state
/// (of norm² `z2`; a state below 1 counts as 1).
#[inline(always)]
fn residual_floor2(z2: f64) -> f64 {
    const FLOOR: f64 = RESIDUAL_FLOOR * f64::EPSILON;
    FLOOR * FLOOR * z2.max(1.0)
}

/// The error a chord iteration leaves, after an update of norm `dn`: `rate`
/// times the true part of the update, itself at most the error predicted
/// before it, `bias` (the rest of a larger update is round-off).
#[inline(always)]
pub(crate) fn chord_bias(rate: f64, dn: f64, bias: f64) -> f64 {
    rate * dn.min(bias)
}

/// Newton's constant `C` in `‖Δx_2‖ ≈ C ‖Δx_1‖²`, measured from the first
/// two updates `last` and `dn` (whether the second used new factors or the
/// first ones: both estimate the error left by the first). Round-off in a
/// small second update can only inflate the estimate, and a solve that then
/// stops at the first iteration would never correct it: it may grow by at
/// most 2× a step from the `previous` estimate.
#[inline(always)]
pub(crate) fn contraction_estimate(previous: Option<f64>, dn: f64, last: f64) -> f64 {
    let measured = dn / (last * last);
    previous.map_or(measured, |c| measured.min(2.0 * c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chord_stops_where_its_error_is_below_the_residual_round_off() {
        let t = tolerance(f64::EPSILON);
        // The 16-link energy–momentum chain at h = 0.01: second update at
        // rate 1e-5 from a residual of 5.7e-12, state of norm 130. The error
        // left would leave a residual of 5.7e-17, below 1 % of 64 ulps of
        // the state (1.8e-14): done, though `rate × update` (2e-13) is far
        // above 1 % of ε‖x‖.
        assert!(t.chord_below_floor(1e-5, 5.7e-12 * 5.7e-12, 130.0 * 130.0));
        assert!(!t.chord_converged(1e-5 * 2e-8, 1e-5, 130.0 * 130.0));
        // A residual a thousand times larger, or a slower chord: not yet.
        assert!(!t.chord_below_floor(1e-5, 5.7e-9 * 5.7e-9, 130.0 * 130.0));
        assert!(!t.chord_below_floor(1e-2, 5.7e-12 * 5.7e-12, 130.0 * 130.0));
        // A state below 1 counts as 1.
        assert!(t.chord_below_floor(1e-4, 1e-13 * 1e-13, 1e-6));
        assert!(!t.chord_below_floor(1e-4, 1e-9 * 1e-9, 1e-6));
    }

    #[test]
    fn a_newton_update_from_a_residual_at_round_off_ends_the_solve() {
        let t = tolerance(f64::EPSILON);
        let z2 = || 108.0 * 108.0;
        // The 32-link energy–momentum chain at h = 0.01, third update: 3.2e-9
        // (5e-12 ‖x‖, ‖x‖ = 602) solved from a residual of 2.3e-14, below 64
        // ulps of the state (1.5e-12); Newton's constant 4.4e-3 leaves
        // 4.5e-20 after it. Done, though the update is far above ε‖x‖.
        let (c, dn, x2) = (Some(4.4e-3), 3.2e-9, 602.0 * 602.0);
        assert!(t.newton_at_floor(c, dn * dn, 2.3e-14 * 2.3e-14, x2, z2));
        assert!(!t.contracted(dn * dn, dn, 1.7e-5, x2));
        // The second update, solved from a residual of 3.2e-9: not yet.
        assert!(!t.newton_at_floor(c, 2.9e-5 * 2.9e-5, 3.2e-9 * 3.2e-9, x2, z2));
        // A residual at round-off but an update Newton leaves an error of
        // (4.4e-3 · 1e-5² = 4.4e-13 > 1 % of ε‖x‖): not yet either.
        assert!(!t.newton_at_floor(c, 1e-5 * 1e-5, 2.3e-14 * 2.3e-14, x2, z2));
        // Without a constant nothing is predicted.
        assert!(!t.newton_at_floor(None, dn * dn, 2.3e-14 * 2.3e-14, x2, z2));
    }

    fn tolerance(eps: f64) -> Tolerance {
        Tolerance::new(&NewtonOptions {
            tolerance: eps,
            ..Default::default()
        })
    }

    /// First iteration at which the contraction test stops a linearly
    /// convergent sequence `x_j = 1 + θ^j` (error `θ^j`, updates
    /// `θ^{j−1}(1 − θ)`), whose error the rule's `θ/(1−θ)‖Δx‖` is exactly.
    fn linear_stop(theta: f64, eps: f64) -> usize {
        let t = tolerance(eps);
        let mut last = f64::INFINITY;
        for j in 1..200 {
            let x = 1.0 + theta.powi(j);
            let dn = theta.powi(j - 1) * (1.0 - theta);
            if j > 1 && t.contracted(dn * dn, dn, last, x * x) {
                return j as usize;
            }
            last = dn;
        }
        panic!("never stopped")
    }

    #[test]
    fn the_contraction_test_stops_when_the_predicted_error_is_below_tolerance() {
        for (theta, eps) in [(0.5, 1e-6), (0.1, 1e-10), (0.9, 1e-4), (1e-3, 1e-14)] {
            let j = linear_stop(theta, eps);
            let x = 1.0 + theta.powi(j as i32);
            // The error at the stop is within tolerance, the one before not:
            // the test neither stops early nor wastes an iteration.
            assert!(
                theta.powi(j as i32) <= eps * x * (1.0 + 1e-12),
                "θ = {theta}: stop at {j}"
            );
            assert!(theta.powi(j as i32 - 1) > eps * x, "θ = {theta}: {j} is one too late");
        }
    }

    #[test]
    fn the_contraction_test_needs_shrinking_updates() {
        let t = tolerance(1e-3);
        // Tiny updates that do not shrink are not contraction.
        assert!(!t.contracted(1e-40, 1e-20, 1e-20, 1.0));
        assert!(!t.contracted(1e-40, 1e-20, 1e-21, 1.0));
        // The same update after a larger one is.
        assert!(t.contracted(1e-40, 1e-20, 1e-10, 1.0));
    }

    #[test]
    fn the_contraction_test_on_newton_for_the_square_root_of_two() {
        // Newton on x² − 2 from 1.5: quadratic, so θ falls each iteration.
        let t = tolerance(f64::EPSILON);
        let (mut x, mut last, mut stop) = (1.5f64, f64::INFINITY, 0);
        for j in 1..20 {
            let dx = (x * x - 2.0) / (2.0 * x);
            x -= dx;
            let dn = dx.abs();
            if dn == 0.0 || (j > 1 && t.contracted(dn * dn, dn, last, x * x)) {
                stop = j;
                break;
            }
            last = dn;
        }
        assert!((x - 2f64.sqrt()).abs() <= f64::EPSILON * 2f64.sqrt());
        // Errors 8.6e-2, 2.5e-3, 2.1e-6, 1.6e-12, then round-off: the
        // fourth update (1.6e-12 after 2.1e-6, θ ≈ 8e-7) predicts an error of
        // 1e-18, so no fifth iteration is spent confirming it.
        assert_eq!(stop, 4);
    }

    #[test]
    fn the_stall_rule_fires_only_at_round_off() {
        let t = Tolerance::new(&NewtonOptions::default()); // stall tolerance 1e-8
        let x2 = 4.0; // ‖x‖ = 2
        assert!(t.stalled((1e-12f64).powi(2), x2, 0.0), "round-off noise");
        assert!(t.stalled((1.9e-8f64).powi(2), x2, 0.0), "just below 1e-8 ‖x‖");
        assert!(!t.stalled((2.1e-8f64).powi(2), x2, 0.0), "just above");
        assert!(!t.stalled(1e-4, x2, 0.0), "a real update");
        // The floor is the larger of ‖x‖ and ‖z‖ (small multipliers in a large state).
        assert!(!t.stalled((1e-9f64).powi(2), 1e-4, 0.0));
        assert!(t.stalled((1e-9f64).powi(2), 1e-4, 1.0));
    }

    #[test]
    fn the_first_iteration_rule_uses_the_last_contraction_constant() {
        let t = tolerance(f64::EPSILON);
        // C = 1, ‖x‖ = 1: done when C ‖Δx₁‖² ≤ 1e-2 ε, i.e. ‖Δx₁‖ ≤ 1.49e-9.
        let limit = (STRICT * f64::EPSILON).sqrt();
        assert!(t.first_update_suffices(1.0, (0.99 * limit).powi(2), 1.0));
        assert!(!t.first_update_suffices(1.0, (1.01 * limit).powi(2), 1.0));
        // A larger constant (slower contraction) needs a smaller update.
        assert!(!t.first_update_suffices(100.0, (0.99 * limit).powi(2), 1.0));
        assert!(t.first_update_suffices(100.0, (0.099 * limit).powi(2), 1.0));
    }

    #[test]
    fn round_off_is_declared_when_theta_to_the_fourth_times_the_update_is_negligible() {
        let t = tolerance(f64::EPSILON);
        // θ = 1e-3, dn = 1e-6: θ⁴ dn = 1e-18, below 1e-2 ε = 2.2e-18.
        assert!(t.at_roundoff(1e-12, 1e-3, 1.0));
        // θ = 1e-2, dn = 1e-4: θ⁴ dn = 1e-12, far above.
        assert!(!t.at_roundoff(1e-8, 1e-2, 1.0));
    }

    #[test]
    fn the_chord_stop_asks_for_strict_times_the_tolerance() {
        let t = tolerance(1e-10);
        // rate 0.5: the margin halves what is allowed; 1e-2 · 1e-10 · 0.5 = 5e-13.
        assert!(t.chord_converged(4.9e-13, 0.5, 1.0));
        assert!(!t.chord_converged(5.1e-13, 0.5, 1.0));
        // The error left never exceeds the rate times the last prediction.
        assert_eq!(chord_bias(0.5, 1.0, 0.25), 0.125);
        assert_eq!(chord_bias(0.5, 0.125, 0.25), 0.0625);
    }

    #[test]
    fn the_contraction_estimate_grows_at_most_twofold() {
        // ‖Δx₂‖ = C ‖Δx₁‖² with C = 3.
        assert_eq!(contraction_estimate(None, 3e-6, 1e-3), 3e-6 / 1e-6);
        assert_eq!(contraction_estimate(Some(1.0), 3e-6, 1e-3), 2.0);
        assert_eq!(contraction_estimate(Some(10.0), 3e-6, 1e-3), 3e-6 / 1e-6);
    }
}
