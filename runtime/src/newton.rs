//! Newton's method with the analytic Jacobian, for every generated step.
//!
//! Stopping rule (Hairer–Wanner): with the contraction estimate
//! `θ = ‖Δx_j‖/‖Δx_{j−1}‖`, stop when `θ/(1−θ) ‖Δx_j‖ ≤ ε ‖x‖`, when the update
//! is exactly zero, or when it stops decreasing at the round-off floor. A plain
//! `‖Δx‖ ≤ c ε ‖x‖` test sits below the floor of `Δx` and wastes iterations.

use nalgebra::allocator::Allocator;
use nalgebra::{Const, DefaultAllocator, Dim, OMatrix, OVector};

use crate::error::StepError;
use crate::lu::Lu;
use crate::system::StepSystem;

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

/// The equations of one implicit step at any storage size: what the Newton
/// driver and the stepping logic need. Every derived [`StepSystem`] is one (with
/// fixed sizes `Const<NZ>`, `Const<NX>`); the run-time tape back-end is one with
/// sizes `Dyn`. Method names differ from [`StepSystem`]'s so that both traits
/// can be in scope.
pub trait StepEquations<Z: Dim, X: Dim>
where
    DefaultAllocator: Allocator<Z> + Allocator<X> + Allocator<X, X>,
{
    /// `R(x; z)`.
    fn step_residual(&self, h: f64, z: &OVector<f64, Z>, x: &OVector<f64, X>) -> OVector<f64, X>;
    /// `∂R/∂x`.
    fn step_jacobian(&self, h: f64, z: &OVector<f64, Z>, x: &OVector<f64, X>) -> OMatrix<f64, X, X>;
    /// `z' − z`.
    fn step_increment(&self, h: f64, z: &OVector<f64, Z>, x: &OVector<f64, X>) -> OVector<f64, Z>;
    /// Starting guess from the state and the previous solution.
    fn step_predict(&self, h: f64, z: &OVector<f64, Z>, previous: &OVector<f64, X>) -> OVector<f64, X>;
    /// Residual at `z + lo` in double-double, where available.
    fn step_residual_compensated(
        &self,
        _h: f64,
        _z: &OVector<f64, Z>,
        _lo: &OVector<f64, Z>,
        _x: &OVector<f64, X>,
    ) -> Option<OVector<f64, X>> {
        None
    }
    /// Increment at `z + lo` in double-double, where available.
    fn step_increment_compensated(
        &self,
        _h: f64,
        _z: &OVector<f64, Z>,
        _lo: &OVector<f64, Z>,
        _x: &OVector<f64, X>,
    ) -> Option<OVector<f64, Z>> {
        None
    }
}

impl<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize> StepEquations<Const<NZ>, Const<NX>> for S {
    #[inline]
    fn step_residual(
        &self,
        h: f64,
        z: &OVector<f64, Const<NZ>>,
        x: &OVector<f64, Const<NX>>,
    ) -> OVector<f64, Const<NX>> {
        self.residual(h, z, x)
    }
    #[inline]
    fn step_jacobian(
        &self,
        h: f64,
        z: &OVector<f64, Const<NZ>>,
        x: &OVector<f64, Const<NX>>,
    ) -> OMatrix<f64, Const<NX>, Const<NX>> {
        self.jacobian(h, z, x)
    }
    #[inline]
    fn step_increment(
        &self,
        h: f64,
        z: &OVector<f64, Const<NZ>>,
        x: &OVector<f64, Const<NX>>,
    ) -> OVector<f64, Const<NZ>> {
        self.increment(h, z, x)
    }
    #[inline]
    fn step_predict(
        &self,
        h: f64,
        z: &OVector<f64, Const<NZ>>,
        w: &OVector<f64, Const<NX>>,
    ) -> OVector<f64, Const<NX>> {
        self.predict(h, z, w)
    }
    #[inline]
    fn step_residual_compensated(
        &self,
        h: f64,
        z: &OVector<f64, Const<NZ>>,
        lo: &OVector<f64, Const<NZ>>,
        x: &OVector<f64, Const<NX>>,
    ) -> Option<OVector<f64, Const<NX>>> {
        self.residual_compensated(h, z, lo, x)
    }
    #[inline]
    fn step_increment_compensated(
        &self,
        h: f64,
        z: &OVector<f64, Const<NZ>>,
        lo: &OVector<f64, Const<NZ>>,
        x: &OVector<f64, Const<NX>>,
    ) -> Option<OVector<f64, Const<NZ>>> {
        self.increment_compensated(h, z, lo, x)
    }
}

/// Solves `R(x; z) = 0` from the predictor; returns the solution and the iteration count.
/// With `lo`, the state is `z + lo` (compensated summation).
pub fn solve<S, Z, X>(
    sys: &S,
    h: f64,
    z: &OVector<f64, Z>,
    lo: Option<&OVector<f64, Z>>,
    previous: &OVector<f64, X>,
    step: u64,
    opt: &NewtonOptions,
) -> Result<(OVector<f64, X>, usize), StepError>
where
    S: StepEquations<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Allocator<Z> + Allocator<X> + Allocator<X, X>,
{
    // Compensated runs: the residual at z + lo, in double-double where generated.
    let residual = |x: &OVector<f64, X>| {
        lo.and_then(|lo| sys.step_residual_compensated(h, z, lo, x))
            .unwrap_or_else(|| sys.step_residual(h, z, x))
    };
    let mut x = sys.step_predict(h, z, previous);
    let mut last = f64::INFINITY;
    let mut lu: Option<Lu<X>> = None;
    for it in 1..=opt.max_iterations {
        let r = residual(&x);
        let rn = r.norm();
        let non_finite = StepError::NonFinite {
            step,
            iterations: it,
            residual: rn,
        };
        if !rn.is_finite() || x.iter().any(|v| !v.is_finite()) {
            return Err(non_finite);
        }
        // Simplified Newton keeps the first factorization of the step; it is
        // refreshed if the iteration stops contracting fast.
        if lu.is_none() || !opt.simplified {
            let j = sys.step_jacobian(h, z, &x);
            if j.iter().any(|v| !v.is_finite()) {
                return Err(non_finite);
            }
            lu = Some(Lu::factor(&j).map_err(|_| StepError::Singular {
                step,
                iterations: it,
                residual: rn,
            })?);
        }
        let mut dx = r;
        lu.as_ref().expect("factored above").solve(&mut dx);
        x -= &dx;
        let dn = dx.norm();
        if !dn.is_finite() {
            return Err(non_finite);
        }
        let scale = opt.tolerance * x.norm().max(f64::MIN_POSITIVE);
        if dn == 0.0 {
            return Ok((x, it));
        }
        if it > 1 {
            let theta = dn / last;
            if theta < 1.0 && theta / (1.0 - theta) * dn <= scale {
                return Ok((x, it));
            }
            if theta >= 1.0 && dn <= opt.stall_tolerance * x.norm().max(z.norm()) {
                return Ok((x, it));
            }
            if opt.simplified && theta > 0.5 {
                lu = None;
            }
        }
        last = dn;
    }
    let rn = residual(&x).norm();
    Err(StepError::NotConverged {
        step,
        iterations: opt.max_iterations,
        residual: rn,
    })
}

/// The parts of a state one step changes, at any storage size.
pub struct StepState<'s, Z: Dim, X: Dim>
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
pub fn advance<S, Z, X>(
    sys: &S,
    h: f64,
    opt: &NewtonOptions,
    compensated: bool,
    stats: &mut NewtonStats,
    st: StepState<'_, Z, X>,
) -> Result<(), StepError>
where
    S: StepEquations<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Allocator<Z> + Allocator<X> + Allocator<X, X>,
{
    let lo = compensated.then_some(&*st.lo);
    let (x, iters) = solve(sys, h, st.z, lo, st.warm, *st.step, opt)?;
    let dz = lo
        .and_then(|lo| sys.step_increment_compensated(h, st.z, lo, &x))
        .unwrap_or_else(|| sys.step_increment(h, st.z, &x));
    if dz.iter().any(|v| !v.is_finite()) {
        return Err(StepError::NonFinite {
            step: *st.step,
            iterations: iters,
            residual: f64::NAN,
        });
    }
    stats.record(iters);
    if compensated {
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
        *st.z += dz;
    }
    *st.warm = x;
    *st.step += 1;
    Ok(())
}
