//! The Newton loop: evaluate, factor or reuse the factors, update, judge.
//! What the loop knows between iterations is one value, [`Walk`], whose
//! methods apply the rules of [`super::stopping`] and [`super::chord`].

use nalgebra::allocator::Allocator;
use nalgebra::{DefaultAllocator, Dim, OVector};

use super::chord::{keep_factors, IterationCosts, CHORD_CONTRACTION};
use super::linear_prediction::Groups;
use super::options::{NewtonOptions, Solved};
use super::predictor::extrapolate;
use super::stopping::{chord_bias, contraction_estimate, Tolerance};
use crate::error::StepError;
use crate::kernels::{Alloc, Kernels};
use crate::lu::{FactorError, Lu};
use crate::memory::NewtonMemory;

/// The storage one solve iterates on.
pub(crate) struct Store<'a, X: Dim>
where
    DefaultAllocator: Allocator<X> + Allocator<X, X>,
{
    pub(crate) x: &'a mut OVector<f64, X>,
    pub(crate) r: &'a mut OVector<f64, X>,
    pub(crate) lu: &'a mut Lu<X>,
    /// what the solve tells the next step (see [`NewtonMemory::commit`])
    pub(crate) memory: &'a mut NewtonMemory<X>,
    /// what the last step told
    pub(crate) old: &'a NewtonMemory<X>,
    pub(crate) costs: IterationCosts,
    /// the unknowns whose errors the predictor fits apart
    pub(crate) groups: &'a Groups,
    /// where a failed solve's last update was largest (see [`peak`]), or
    /// `None` where it failed before one; written only when it fails (a
    /// store on every step costs the sphere's)
    pub(crate) failed_at: &'a mut Option<usize>,
}

/// Solves `R(x; z) = 0` from the predictor's guess, corrected by the
/// error extrapolated from `store.old`, into `store.x`. With `lo` (and
/// `COMP`), the state is `z + lo` (compensated summation).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn iterate<S, Z, X, const COMP: bool>(
    sys: &S,
    h: f64,
    e: &[f64],
    z: &OVector<f64, Z>,
    lo: Option<&OVector<f64, Z>>,
    previous: &OVector<f64, X>,
    step: u64,
    opt: &NewtonOptions,
    store: Store<'_, X>,
) -> Result<Solved, StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    let Store {
        x,
        r,
        lu,
        memory,
        old,
        costs,
        groups,
        failed_at,
    } = store;
    sys.predict(h, e, z, previous, x);
    // An explicit step (every unknown eliminated by the compiler: a
    // projectile, Störmer–Verlet with a constant mass matrix) has nothing to
    // solve; the increment is evaluated directly.
    if x.is_empty() {
        return Ok(Solved {
            iterations: 0,
            factorizations: 0,
        });
    }
    extrapolate(old, previous, x, memory, groups);
    memory.contraction = old.contraction;
    let contraction = &mut memory.contraction;
    let tol = Tolerance::new(opt);
    let mut walk = Walk::new();
    for it in 1..=opt.max_iterations {
        let refresh = walk.refresh(opt);
        evaluate::<S, Z, X, COMP>(sys, h, e, z, lo, x, r, lu, refresh);
        // Needed only in an error; the test that the residual is finite is
        // the one on the update below: a non-finite residual (or iterate)
        // gives a non-finite update, and a sum of squares is finite exactly
        // when every entry is (short of overflow, itself a failure).
        let rn2 = r.norm_squared();
        if refresh {
            if let Err(f) = lu.factor_solve_in_place(r) {
                *failed_at = None;
                return Err(factor_error(f, step, it, rn2));
            }
            walk.factored = true;
            walk.factorizations += 1;
        } else {
            lu.solve(r);
        }
        *x -= &*r;
        let dn2 = r.norm_squared();
        if !dn2.is_finite() {
            *failed_at = peak(r.as_slice());
            return Err(non_finite(step, it, rn2));
        }
        if walk.done(it, dn2, rn2, x, || z.norm_squared(), contraction, &tol, opt, costs)
            || (it > 2 && tol.residual_at_floor(rn2, walk.last_rn2, z.norm_squared()))
        {
            return Ok(Solved {
                iterations: it,
                factorizations: walk.factorizations,
            });
        }
        walk.last_rn2 = rn2;
    }
    *failed_at = peak(r.as_slice());
    residual::<S, Z, X, COMP>(sys, h, e, z, lo, x, r);
    Err(StepError::NotConverged {
        step,
        iterations: opt.max_iterations,
        residual: r.norm(),
    })
}

/// The entry of a failed solve's update that says where it failed: the
/// first non-finite one, or else the largest in magnitude; `None` where all
/// are zero.
#[cold]
fn peak(update: &[f64]) -> Option<usize> {
    if let Some(k) = update.iter().position(|u| !u.is_finite()) {
        return Some(k);
    }
    let (k, largest) = update.iter().enumerate().fold(
        (0, 0.0f64),
        |(k, m), (j, u)| if u.abs() > m { (j, u.abs()) } else { (k, m) },
    );
    (largest > 0.0).then_some(k)
}

/// What the loop knows between iterations.
struct Walk {
    /// the last update's norm
    last: f64,
    /// the last residual's norm², before its update
    last_rn2: f64,
    /// whether the factors in the workspace are this solve's
    factored: bool,
    /// factorizations so far
    factorizations: usize,
    /// the iteration has reached the regime where the next update is at
    /// round-off: its Jacobian may be the last one
    at_roundoff: bool,
    /// chord iterations: the factors are an earlier iterate's, kept because
    /// the iteration contracts fast enough with them
    chord: bool,
    /// this iteration is a chord iteration (it reuses the kept factors)
    chord_step: bool,
    /// whether chord iterations were taken up in this solve (once at most)
    chord_taken: bool,
    /// a chord iteration's rate (NaN until its first update measures it)
    rate: f64,
    /// and its prediction of the error left
    bias: f64,
}

impl Walk {
    #[inline(always)]
    fn new() -> Self {
        Self {
            last: f64::INFINITY,
            last_rn2: f64::INFINITY,
            factored: false,
            factorizations: 0,
            at_roundoff: false,
            chord: false,
            chord_step: false,
            chord_taken: false,
            rate: f64::NAN,
            bias: f64::INFINITY,
        }
    }

    /// Whether this iteration takes new factors. Simplified Newton keeps the
    /// first factorization of the step; it is refreshed if the iteration
    /// stops contracting fast.
    #[inline(always)]
    fn refresh(&mut self, opt: &NewtonOptions) -> bool {
        let refresh = !self.factored || !(opt.simplified || self.at_roundoff || self.chord);
        self.chord_step = self.chord && !refresh;
        refresh
    }

    /// Judges the update of iteration `it` (norm² `dn2`, iterate now `x`):
    /// whether the solve is done. Updates the contraction constant the next
    /// step will use at the second iteration.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn done<X: Dim>(
        &mut self,
        it: usize,
        dn2: f64,
        rn2: f64,
        x: &OVector<f64, X>,
        z2: impl Fn() -> f64,
        contraction: &mut Option<f64>,
        tol: &Tolerance,
        opt: &NewtonOptions,
        costs: IterationCosts,
    ) -> bool
    where
        DefaultAllocator: Allocator<X>,
    {
        if dn2 == 0.0 {
            return true;
        }
        let dn = dn2.sqrt();
        let done = if it == 1 {
            self.first(dn2, dn, x, *contraction, tol, opt, costs)
        } else {
            // A residual the first update left at its round-off floor makes
            // the second update round-off too, amplified in unknowns scaled
            // by 1/h² (multipliers) far above Newton's `c ‖Δx₁‖²`: measured
            // from it, `c` doubled every step and held every later step at
            // two iterations (the 128-link energy–momentum chain at h = 1e-3:
            // 2.0 iterations per step, against 1.02 at 64 links; 1.66 once
            // such a measurement keeps the last estimate).
            if it == 2 && (contraction.is_none() || !tol.residual_below_floor(rn2, z2())) {
                *contraction = Some(contraction_estimate(*contraction, dn, self.last));
            }
            let x2 = x.norm_squared().max(f64::MIN_POSITIVE);
            if self.chord_step {
                self.chord_iteration(dn2, dn, rn2, x2, z2, tol)
            } else {
                self.newton_iteration(dn2, dn, rn2, x2, z2, *contraction, tol, opt, costs)
            }
        };
        self.last = dn;
        done
    }

    /// The first update: done if the last step's constant says the guess
    /// was good to round-off; otherwise decides on chord iterations.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn first<X: Dim>(
        &mut self,
        dn2: f64,
        dn: f64,
        x: &OVector<f64, X>,
        contraction: Option<f64>,
        tol: &Tolerance,
        opt: &NewtonOptions,
        costs: IterationCosts,
    ) -> bool
    where
        DefaultAllocator: Allocator<X>,
    {
        if let Some(c) = contraction {
            if tol.first_update_suffices(c, dn2, x.norm_squared()) {
                return true;
            }
        }
        self.chord = keep_factors(opt, costs, contraction, dn, || x.norm());
        self.chord_taken = self.chord;
        false
    }

    /// A chord update: converges linearly, at the rate of the first (taken
    /// before round-off can blur it) as long as the later updates contract as
    /// fast as a chord must; done when its predicted error is 1 % of
    /// the tolerance, or leaves a residual below 1 % of the residual's
    /// round-off (which no further iteration could see).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn chord_iteration(&mut self, dn2: f64, dn: f64, rn2: f64, x2: f64, z2: impl Fn() -> f64, tol: &Tolerance) -> bool {
        let now = dn / self.last;
        if self.rate.is_nan() {
            self.rate = now;
        }
        // The rate measured first may be one component's: a later update
        // that contracts slower, from a residual above round-off, is the
        // iteration's own rate showing (the 64-link energy–momentum chain at
        // h = 0.01, after a first update of 1.5 ‖x‖: 7e-4 first, then 1e-2
        // to 6e-2, where the bias predicted from the first stopped the chord
        // at updates of 3e-9 ‖x‖ and left the energy 1e-12 off).
        let slower = now > CHORD_CONTRACTION && !tol.residual_below_floor(rn2, z2());
        if dn > self.last || self.rate > CHORD_CONTRACTION || slower {
            // An update that grows is round-off once it is small (the stall
            // rule; what the chord left is smaller still); otherwise the
            // iteration is not contracting as predicted: new factors next.
            if dn > self.last && tol.stalled(dn2, x2, z2()) {
                return true;
            }
            self.chord = false;
            false
        } else {
            self.bias = chord_bias(self.rate, dn, self.bias);
            tol.chord_converged(self.bias, self.rate, x2) || tol.chord_below_floor(self.rate, rn2, z2())
        }
    }

    /// A Newton update (new factors, or the last ones at round-off).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn newton_iteration(
        &mut self,
        dn2: f64,
        dn: f64,
        rn2: f64,
        x2: f64,
        z2: impl Fn() -> f64,
        contraction: Option<f64>,
        tol: &Tolerance,
        opt: &NewtonOptions,
        costs: IterationCosts,
    ) -> bool {
        if tol.contracted(dn2, dn, self.last, x2) {
            return true;
        }
        // Solved from a residual at round-off, this update corrected what
        // error the iterate had (Newton leaves `C ‖Δx‖²`) and added noise a
        // further iteration would only replace with its own.
        if !opt.simplified && tol.newton_at_floor(contraction, dn2, rn2, x2, &z2) {
            return true;
        }
        if self.last - dn <= 0.0 && tol.stalled(dn2, x2, z2()) {
            return true;
        }
        if opt.simplified && dn > 0.5 * self.last {
            self.factored = false;
        }
        self.at_roundoff = tol.at_roundoff(dn2, self.last, x2);
        // Not yet at round-off, but close: the chord from these factors may
        // finish in residuals cheaper than a new Jacobian and factorization
        // (the 64-link director chain at h = 0.01: second updates of 5e-8 ‖x‖
        // with C ‖Δx‖ ≈ 2e-5, where three factorizations a step were taken;
        // the 128-link one from `sway`, 300 steps: 2.12 → 1.81
        // factorizations per step, 242 → 229 µs a step).
        if !self.at_roundoff && !self.chord_taken {
            self.chord = keep_factors(opt, costs, contraction, dn, || x2.sqrt());
            self.chord_taken = self.chord;
        }
        false
    }
}

/// The residual, and with `refresh` the Jacobian into `lu`'s matrix.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn evaluate<S, Z, X, const COMP: bool>(
    sys: &S,
    h: f64,
    e: &[f64],
    z: &OVector<f64, Z>,
    lo: Option<&OVector<f64, Z>>,
    x: &OVector<f64, X>,
    r: &mut OVector<f64, X>,
    lu: &mut Lu<X>,
    refresh: bool,
) where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    if refresh && !COMP {
        // Small derived steps (sizes known at compile time) write their
        // Jacobian whole, in registers: the branch folds away there.
        if X::try_to_usize().is_none_or(|n| n >= hamel_kernel::PATTERN_MIN) && lu.band().is_some() {
            let written = lu
                .pattern_values_mut()
                .is_some_and(|values| sys.residual_jacobian_pattern(h, e, z, x, r, values));
            if !written {
                sys.residual_jacobian_band(h, e, z, x, r, lu.matrix_mut());
            }
        } else {
            sys.residual_jacobian(h, e, z, x, r, lu.matrix_mut());
        }
    } else {
        residual::<S, Z, X, COMP>(sys, h, e, z, lo, x, r);
        if refresh {
            sys.jacobian(h, e, z, x, lu.matrix_mut());
        }
    }
}

/// The residual; in compensated runs at `z + lo`, in double-double where
/// compiled. `COMP` keeps that call out of plain runs' code, where it would
/// pin the iterate to memory.
#[inline(always)]
fn residual<S, Z, X, const COMP: bool>(
    sys: &S,
    h: f64,
    e: &[f64],
    z: &OVector<f64, Z>,
    lo: Option<&OVector<f64, Z>>,
    x: &OVector<f64, X>,
    r: &mut OVector<f64, X>,
) where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    match lo {
        Some(lo) if COMP && sys.residual_compensated(h, e, z, lo, x, r) => {}
        _ => sys.residual(h, e, z, x, r),
    }
}

/// The error of a failed factorization at iteration `it` (residual norm²
/// `rn2`): a singular matrix at a non-finite residual is the non-finite value's
/// failure.
#[cold]
fn factor_error(f: FactorError, step: u64, it: usize, rn2: f64) -> StepError {
    match f {
        FactorError::NonFinite => non_finite(step, it, rn2),
        FactorError::Singular if !rn2.is_finite() => non_finite(step, it, rn2),
        FactorError::Singular => StepError::Singular {
            step,
            iterations: it,
            residual: rn2.sqrt(),
        },
    }
}

#[cold]
fn non_finite(step: u64, it: usize, rn2: f64) -> StepError {
    StepError::NonFinite {
        step,
        iterations: it,
        residual: rn2.sqrt(),
    }
}
