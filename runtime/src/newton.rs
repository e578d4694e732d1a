//! Newton's method with the analytic Jacobian, for every generated step.
//!
//! Stopping rule (Hairer–Wanner): with the contraction estimate
//! `θ = ‖Δx_j‖/‖Δx_{j−1}‖`, stop when `θ/(1−θ) ‖Δx_j‖ ≤ ε ‖x‖`, when the update
//! is exactly zero, or when it stops decreasing at the round-off floor. A plain
//! `‖Δx‖ ≤ c ε ‖x‖` test sits below the floor of `Δx` and wastes iterations.

use nalgebra::SVector;

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

/// Solves `R(x; z) = 0` from the predictor; returns the solution and the iteration count.
/// With `lo`, the state is `z + lo` (compensated summation).
pub fn solve<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    h: f64,
    z: &SVector<f64, NZ>,
    lo: Option<&SVector<f64, NZ>>,
    previous: &SVector<f64, NX>,
    step: u64,
    opt: &NewtonOptions,
) -> Result<(SVector<f64, NX>, usize), StepError> {
    // Compensated runs: the residual at z + lo, in double-double where generated.
    let residual = |x: &SVector<f64, NX>| {
        lo.and_then(|lo| sys.residual_compensated(h, z, lo, x))
            .unwrap_or_else(|| sys.residual(h, z, x))
    };
    let mut x = sys.predict(h, z, previous);
    let mut last = f64::INFINITY;
    let mut lu: Option<Lu<NX>> = None;
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
            let j = sys.jacobian(h, z, &x);
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
        x -= dx;
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
