//! Newton's method with the analytic Jacobian, for every generated step.
//!
//! Stopping rule (Hairer–Wanner): with the contraction estimate
//! `θ = ‖Δx_j‖/‖Δx_{j−1}‖`, stop when `θ/(1−θ) ‖Δx_j‖ ≤ ε ‖x‖`, when the update
//! is exactly zero, or when it stops decreasing at the round-off floor. A plain
//! `‖Δx‖ ≤ c ε ‖x‖` test sits below the floor of `Δx` and wastes iterations.

use nalgebra::allocator::Allocator;
use nalgebra::{DefaultAllocator, Dim, OVector, U1};

use crate::error::StepError;
use crate::kernels::{Alloc, Kernels};
use crate::lu::{FactorError, Lu};

/// Settings of the Newton solve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewtonOptions {
    /// iteration bound; past it the step fails
    pub max_iterations: usize,
    /// relative tolerance of the stopping rule (machine epsilon by default)
    pub tolerance: f64,
    /// a stalled iteration (updates no longer decreasing) counts as converged when its
    /// update is below `stall_tolerance · max(‖x‖, ‖z‖)`: the round-off floor of badly
    /// scaled unknowns, such as multipliers at small step sizes, lies well above `ε‖x‖`
    pub stall_tolerance: f64,
    /// simplified Newton: factor the Jacobian once per step (at the predictor) and
    /// reuse it, refreshing it only when the iteration contracts slowly; cheaper
    /// iterations, linear instead of quadratic convergence
    pub simplified: bool,
}

impl Default for NewtonOptions {
    fn default() -> Self {
        Self {
            max_iterations: 30,
            tolerance: f64::EPSILON,
            stall_tolerance: 1e-8,
            simplified: false,
        }
    }
}

/// Iteration counts over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NewtonStats {
    /// steps solved
    pub steps: u64,
    /// iterations over all steps
    pub iterations: u64,
    /// largest iteration count of one step
    pub max_iterations: usize,
}

impl NewtonStats {
    #[inline]
    pub(crate) fn record(&mut self, iters: usize) {
        self.steps += 1;
        self.iterations += iters as u64;
        self.max_iterations = self.max_iterations.max(iters);
    }

    /// Mean iterations per step.
    pub fn mean(&self) -> f64 {
        if self.steps == 0 {
            0.0
        } else {
            self.iterations as f64 / self.steps as f64
        }
    }
}

/// What one Newton solve needs besides the state: allocated once per stepper,
/// so that a step allocates nothing, at fixed and at run-time sizes alike.
pub struct Workspace<Z: Dim, X: Dim>
where
    DefaultAllocator: Alloc<Z, X>,
{
    /// the iterate
    x: OVector<f64, X>,
    /// residual, then the Newton update
    r: OVector<f64, X>,
    /// Jacobian, factored in place
    lu: Lu<X>,
    /// the increment
    dz: OVector<f64, Z>,
}

impl<Z: Dim, X: Dim> Workspace<Z, X>
where
    DefaultAllocator: Alloc<Z, X>,
{
    /// Workspace for a state of size `z` and `x` unknowns.
    pub fn new(z: Z, x: X) -> Self {
        Self::with_band(z, x, None)
    }

    /// Workspace for a step whose Jacobian has the band `(kl, ku)` (see
    /// [`Kernels::jacobian_band`]).
    pub fn with_band(z: Z, x: X, band: Option<(usize, usize)>) -> Self {
        Self {
            x: OVector::zeros_generic(x, U1),
            r: OVector::zeros_generic(x, U1),
            lu: match band {
                Some((kl, ku)) => Lu::banded(x, kl, ku),
                None => Lu::new(x),
            },
            dz: OVector::zeros_generic(z, U1),
        }
    }

    /// The solution of the last successful solve.
    pub fn solution(&self) -> &OVector<f64, X> {
        &self.x
    }
}

impl<Z: Dim, X: Dim> Clone for Workspace<Z, X>
where
    DefaultAllocator: Alloc<Z, X>,
{
    fn clone(&self) -> Self {
        Self {
            x: self.x.clone(),
            r: self.r.clone(),
            lu: self.lu.clone(),
            dz: self.dz.clone(),
        }
    }
}

/// Solves `R(x; z) = 0` from the predictor into `work` (see
/// [`Workspace::solution`]); returns the iteration count. With `lo`, the state
/// is `z + lo` (compensated summation).
#[allow(clippy::too_many_arguments)]
pub fn solve<S, Z, X>(
    sys: &S,
    h: f64,
    e: &[f64],
    z: &OVector<f64, Z>,
    lo: Option<&OVector<f64, Z>>,
    previous: &OVector<f64, X>,
    step: u64,
    opt: &NewtonOptions,
    work: &mut Workspace<Z, X>,
) -> Result<usize, StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    let Workspace { x, r, lu, .. } = work;
    match lo {
        Some(_) => iterate::<S, Z, X, true>(sys, h, e, z, lo, previous, step, opt, x, r, lu),
        None => iterate::<S, Z, X, false>(sys, h, e, z, lo, previous, step, opt, x, r, lu),
    }
}

/// [`solve`]'s iteration, on the storage given.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn iterate<S, Z, X, const COMP: bool>(
    sys: &S,
    h: f64,
    e: &[f64],
    z: &OVector<f64, Z>,
    lo: Option<&OVector<f64, Z>>,
    previous: &OVector<f64, X>,
    step: u64,
    opt: &NewtonOptions,
    x: &mut OVector<f64, X>,
    r: &mut OVector<f64, X>,
    lu: &mut Lu<X>,
) -> Result<usize, StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    // Compensated runs: the residual at z + lo, in double-double where
    // compiled. `COMP` keeps that call out of plain runs' code, where it
    // would pin the iterate to memory.
    #[inline(always)]
    fn eval<S: Kernels<Z, X> + ?Sized, Z: Dim, X: Dim, const COMP: bool>(
        sys: &S,
        h: f64,
        e: &[f64],
        z: &OVector<f64, Z>,
        lo: Option<&OVector<f64, Z>>,
        x: &OVector<f64, X>,
        r: &mut OVector<f64, X>,
    ) where
        DefaultAllocator: Alloc<Z, X>,
    {
        match lo {
            Some(lo) if COMP && sys.residual_compensated(h, e, z, lo, x, r) => {}
            _ => sys.residual(h, e, z, x, r),
        }
    }
    let residual = |x: &OVector<f64, X>, r: &mut OVector<f64, X>| eval::<S, Z, X, COMP>(sys, h, e, z, lo, x, r);
    sys.predict(h, e, z, previous, x);
    let mut last = f64::INFINITY;
    let mut factored = false;
    // The iteration has reached the regime where the next update is at
    // round-off: its Jacobian may be the last one (see below).
    let mut at_roundoff = false;
    for it in 1..=opt.max_iterations {
        // Simplified Newton keeps the first factorization of the step; it is
        // refreshed if the iteration stops contracting fast.
        let refresh = !factored || !(opt.simplified || at_roundoff);
        if refresh && !COMP {
            sys.residual_jacobian(h, e, z, x, r, lu.matrix_mut());
        } else {
            residual(x, r);
            if refresh {
                sys.jacobian(h, e, z, x, lu.matrix_mut());
            }
        }
        // Needed only in an error; the test that the residual is finite is
        // the one on the update below: a non-finite residual (or iterate)
        // gives a non-finite update, and a sum of squares is finite exactly
        // when every entry is (short of overflow, itself a failure).
        let rn2 = r.norm_squared();
        let non_finite = || StepError::NonFinite {
            step,
            iterations: it,
            residual: rn2.sqrt(),
        };
        if refresh {
            lu.factor_in_place().map_err(|e| match e {
                FactorError::NonFinite => non_finite(),
                FactorError::Singular if !rn2.is_finite() => non_finite(),
                FactorError::Singular => StepError::Singular {
                    step,
                    iterations: it,
                    residual: rn2.sqrt(),
                },
            })?;
            factored = true;
        }
        lu.solve(r);
        *x -= &*r;
        let dn2 = r.norm_squared();
        if !dn2.is_finite() {
            return Err(non_finite());
        }
        if dn2 == 0.0 {
            return Ok(it);
        }
        let dn = dn2.sqrt();
        if it > 1 {
            // θ = dn/last; θ/(1−θ)·dn ≤ ε‖x‖ ⇔ dn² ≤ ε‖x‖(last − dn), squared
            // to spare the square root of ‖x‖ and both divisions.
            let gap = last - dn;
            let x2 = x.norm_squared().max(f64::MIN_POSITIVE);
            let tol2 = opt.tolerance * opt.tolerance;
            if gap > 0.0 && dn2 * dn2 <= tol2 * x2 * gap * gap {
                return Ok(it);
            }
            if gap <= 0.0 && dn2 <= opt.stall_tolerance * opt.stall_tolerance * x2.max(z.norm_squared()) {
                return Ok(it);
            }
            if opt.simplified && dn > 0.5 * last {
                factored = false;
            }
            // Quadratic convergence, `dn ≈ C last²`, predicts the next update
            // `C dn²`; taken with the Jacobian at this iterate instead of the
            // next (which differ by `dn`), it errs by `C dn · C dn² = θ⁴ dn`.
            // When that is below 1 % of the tolerance, the next iteration
            // reuses the factors: the result is the full Newton one to well
            // below an ulp, and the convergence test still decides the end.
            let theta2 = dn2 / (last * last);
            at_roundoff = theta2 * theta2 * theta2 * theta2 * dn2 <= 1e-4 * tol2 * x2;
        }
        last = dn;
    }
    residual(x, r);
    Err(StepError::NotConverged {
        step,
        iterations: opt.max_iterations,
        residual: r.norm(),
    })
}

/// The parts of a state one step changes, at any storage size.
pub struct StepParts<'s, Z: Dim, X: Dim>
where
    DefaultAllocator: Allocator<Z> + Allocator<X>,
{
    /// the scheme's state
    pub z: &'s mut OVector<f64, Z>,
    /// its compensation term
    pub lo: &'s mut OVector<f64, Z>,
    /// previous solution
    pub warm: &'s mut OVector<f64, X>,
    /// step counter
    pub step: &'s mut u64,
}

/// One step: Newton solve, increment, (compensated) update. On error nothing is changed.
#[allow(clippy::too_many_arguments)]
pub fn advance<S, Z, X>(
    sys: &S,
    h: f64,
    e: &[f64],
    opt: &NewtonOptions,
    compensated: bool,
    stats: &mut NewtonStats,
    work: &mut Workspace<Z, X>,
    st: StepParts<'_, Z, X>,
) -> Result<(), StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    if compensated {
        advance_on::<S, Z, X, true>(sys, h, e, opt, stats, work, st)
    } else {
        advance_on::<S, Z, X, false>(sys, h, e, opt, stats, work, st)
    }
}

/// [`advance`], with compensated summation or without.
#[inline(always)]
fn advance_on<S, Z, X, const COMP: bool>(
    sys: &S,
    h: f64,
    e: &[f64],
    opt: &NewtonOptions,
    stats: &mut NewtonStats,
    work: &mut Workspace<Z, X>,
    st: StepParts<'_, Z, X>,
) -> Result<(), StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    let lo = COMP.then_some(&*st.lo);
    // Small fixed sizes step on copies, which the optimizer keeps in
    // registers: through the workspace every iterate, residual, Jacobian and
    // increment makes a round trip through memory on the step's critical
    // path. Copies of run-time sizes would allocate, so those step in the
    // workspace.
    if X::try_to_usize().is_some_and(|n| n <= 8) && Z::try_to_usize().is_some() {
        let Workspace { x, r, lu, dz } = work;
        let (mut xl, mut rl, mut lul, mut dzl) = (x.clone(), r.clone(), lu.clone(), dz.clone());
        let iters = iterate::<S, Z, X, COMP>(sys, h, e, st.z, lo, st.warm, *st.step, opt, &mut xl, &mut rl, &mut lul)?;
        update::<S, Z, X, COMP>(sys, h, e, stats, iters, &xl, &mut dzl, st)?;
        x.copy_from(&xl);
        Ok(())
    } else {
        let Workspace { x, r, lu, dz } = work;
        let iters = iterate::<S, Z, X, COMP>(sys, h, e, st.z, lo, st.warm, *st.step, opt, x, r, lu)?;
        update::<S, Z, X, COMP>(sys, h, e, stats, iters, x, dz, st)
    }
}

/// The end of [`advance`]: increment from the solution `x`, checks, update.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn update<S, Z, X, const COMP: bool>(
    sys: &S,
    h: f64,
    e: &[f64],
    stats: &mut NewtonStats,
    iters: usize,
    x: &OVector<f64, X>,
    dz: &mut OVector<f64, Z>,
    st: StepParts<'_, Z, X>,
) -> Result<(), StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    if !(COMP && sys.increment_compensated(h, e, st.z, st.lo, x, dz)) {
        sys.increment(h, e, st.z, x, dz);
    }
    // Finite exactly when every entry is (short of overflow, a failure too).
    if !dz.norm_squared().is_finite() {
        return Err(StepError::NonFinite {
            step: *st.step,
            iterations: iters,
            residual: f64::NAN,
        });
    }
    stats.record(iters);
    if COMP {
        for j in 0..dz.len() {
            // TwoSum: s + e = z + t exactly.
            let t = dz[j] + st.lo[j];
            let s = st.z[j] + t;
            let bp = s - st.z[j];
            let e = (st.z[j] - (s - bp)) + (t - bp);
            st.z[j] = s;
            st.lo[j] = e;
        }
    } else {
        *st.z += &*dz;
    }
    st.warm.copy_from(x);
    *st.step += 1;
    Ok(())
}
