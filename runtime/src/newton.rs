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
    /// chord iterations: keep the first factorization of a step when the
    /// contraction predicted from the previous step is fast and the residuals
    /// it costs are cheaper than the factorizations it saves (the decision
    /// weighs the kernels' operation counts, so two models whose kernels
    /// compute the same values at different costs may round differently)
    pub chord: bool,
}

impl Default for NewtonOptions {
    fn default() -> Self {
        Self {
            max_iterations: 30,
            tolerance: f64::EPSILON,
            stall_tolerance: 1e-8,
            simplified: false,
            chord: true,
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
    /// Jacobian factorizations over all steps (fewer than iterations where
    /// Newton keeps factors: at round-off, in chord iterations, simplified)
    pub factorizations: u64,
}

impl NewtonStats {
    #[inline]
    pub(crate) fn record(&mut self, solved: Solved) {
        self.steps += 1;
        self.iterations += solved.iterations as u64;
        self.factorizations += solved.factorizations as u64;
        self.max_iterations = self.max_iterations.max(solved.iterations);
    }

    /// Mean factorizations per step.
    pub fn factorizations_mean(&self) -> f64 {
        if self.steps == 0 {
            0.0
        } else {
            self.factorizations as f64 / self.steps as f64
        }
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

/// What a successful solve took.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Solved {
    iterations: usize,
    factorizations: usize,
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
    /// scratch for the state's [`NewtonMemory`] during a step (so that a
    /// failed step leaves the state unchanged)
    memory: NewtonMemory<X>,
    /// relative costs of a chord and of a Newton iteration (see [`chord_pays`])
    costs: IterationCosts,
}

/// What one Newton solve tells the next of the same trajectory: how far off
/// the predictor was in the last three steps, and how fast Newton contracted.
/// It is part of the state ([`crate::StateOf::newton`]), so that a step is a
/// function of the state it is handed, whichever stepper takes it.
#[derive(Debug, PartialEq)]
pub struct NewtonMemory<X: Dim>
where
    DefaultAllocator: Allocator<X>,
{
    /// the last step's predictor's guess
    guess: OVector<f64, X>,
    /// the predictor's error (solution minus guess) the step before
    error: OVector<f64, X>,
    /// and the step before that
    error2: OVector<f64, X>,
    /// how many of the last steps' errors are known (0 to 3)
    known: u8,
    /// the last estimate of Newton's constant `C` in `‖Δx_{j+1}‖ ≈ C ‖Δx_j‖²`,
    /// which predicts how fast the first factorization of the next step
    /// will contract
    contraction: Option<f64>,
}

impl<X: Dim> NewtonMemory<X>
where
    DefaultAllocator: Allocator<X>,
{
    /// Nothing known yet, for `x` unknowns (a first step).
    pub fn new(x: X) -> Self {
        Self {
            guess: OVector::zeros_generic(x, U1),
            error: OVector::zeros_generic(x, U1),
            error2: OVector::zeros_generic(x, U1),
            known: 0,
            contraction: None,
        }
    }

    /// Forgets what earlier steps told (the next step is as a first one).
    pub fn forget(&mut self) {
        self.known = 0;
        self.contraction = None;
    }

    /// Overwrites `self` with `other`, allocating nothing.
    fn copy_from(&mut self, other: &Self) {
        self.guess.copy_from(&other.guess);
        self.error.copy_from(&other.error);
        self.error2.copy_from(&other.error2);
        self.known = other.known;
        self.contraction = other.contraction;
    }
}

impl<X: Dim> Clone for NewtonMemory<X>
where
    DefaultAllocator: Allocator<X>,
{
    fn clone(&self) -> Self {
        Self {
            guess: self.guess.clone(),
            error: self.error.clone(),
            error2: self.error2.clone(),
            known: self.known,
            contraction: self.contraction,
        }
    }
}

impl<const N: usize> Copy for NewtonMemory<nalgebra::Const<N>> {}

impl<const N: usize> Default for NewtonMemory<nalgebra::Const<N>> {
    fn default() -> Self {
        Self::new(nalgebra::Const::<N>)
    }
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
        Self::with_costs(z, x, band, None)
    }

    /// Workspace for a step whose Jacobian has the band `(kl, ku)` and whose
    /// residual and fused residual-and-Jacobian kernels cost `kernel_ops`
    /// operations (see [`Kernels::kernel_ops`]).
    pub fn with_costs(z: Z, x: X, band: Option<(usize, usize)>, kernel_ops: Option<(usize, usize)>) -> Self {
        Self {
            costs: IterationCosts::new(x.value(), band, kernel_ops),
            memory: NewtonMemory::new(x),
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
            memory: self.memory.clone(),
            costs: self.costs,
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
    let Workspace {
        x,
        r,
        lu,
        memory,
        costs,
        ..
    } = work;
    // A solve on its own: nothing carries over from an earlier one.
    memory.forget();
    let store = Store {
        x,
        r,
        lu,
        memory,
        costs: *costs,
    };
    match lo {
        Some(_) => iterate::<S, Z, X, true>(sys, h, e, z, lo, previous, step, opt, store),
        None => iterate::<S, Z, X, false>(sys, h, e, z, lo, previous, step, opt, store),
    }
    .map(|s| s.iterations)
}

/// The storage one solve iterates on.
struct Store<'a, X: Dim>
where
    DefaultAllocator: Allocator<X> + Allocator<X, X>,
{
    x: &'a mut OVector<f64, X>,
    r: &'a mut OVector<f64, X>,
    lu: &'a mut Lu<X>,
    memory: &'a mut NewtonMemory<X>,
    costs: IterationCosts,
}

/// What a chord iteration (residual, solve) and a Newton iteration (residual
/// and Jacobian, factorization, solve) cost, in operations; `None` where the
/// kernels do not say.
#[derive(Clone, Copy, Debug)]
struct IterationCosts(Option<(f64, f64)>);

/// Predicting the iterations each way ([`chord_pays`]) costs about as much
/// as this many kernel operations: systems whose Jacobian and factorization
/// cost less than that (a sphere's 3×3 step) do not weigh chord iterations.
const DECISION_OPS: f64 = 100.0;

impl IterationCosts {
    /// Whether chord iterations could save more than deciding on them costs.
    fn worth_deciding(&self) -> bool {
        self.0.is_none_or(|(chord, newton)| newton - chord >= DECISION_OPS)
    }

    fn new(n: usize, band: Option<(usize, usize)>, kernel_ops: Option<(usize, usize)>) -> Self {
        let n = n as f64;
        let solve = 2.0 * n * n;
        let factor = match band {
            Some((kl, ku)) => 2.0 * n * kl as f64 * (kl + ku + 1) as f64,
            None => 2.0 * n * n * n / 3.0,
        };
        IterationCosts(kernel_ops.map(|(r, rj)| (r as f64 + solve, rj as f64 + factor + solve)))
    }
}

/// Whether keeping the first factorization pays, from Newton's constant `c`
/// (the last step's) and the first update `d1`: the iterations each way are
/// predicted from `c` (Newton: `d ← c d²`, stopped when `θ d ≤ tol`; chord:
/// `d ← c d1 · d`, stopped when its error is 1 % of that), and the chord's
/// extra residuals must cost at most the Jacobians and factorizations it
/// saves. Without costs, only when it takes no more iterations.
fn chord_pays(c: f64, d1: f64, tol: f64, costs: IterationCosts) -> bool {
    let newton = {
        let (mut d, mut k) = (d1, 1.0);
        loop {
            let next = c * d * d;
            k += 1.0;
            if (c * d) * next <= tol || k >= 8.0 {
                break k;
            }
            d = next;
        }
    };
    let rate = c * d1;
    let chord = {
        let (mut d, mut k) = (d1, 1.0);
        loop {
            d *= rate;
            k += 1.0;
            if rate * d <= STRICT * tol * (1.0 - rate) || k >= 12.0 {
                break k;
            }
        }
    };
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

/// Where a solve stops on a predicted error that has a sign and a direction
/// (not round-off noise, which averages out), that error must be this
/// fraction of the tolerance, where a Newton iterate's is: otherwise it would
/// add up over a run, as simplified Newton's does.
const STRICT: f64 = 1e-2;

/// A factorization is kept for the next iteration (a chord iteration) when
/// the predicted contraction is at most this: the iteration then still
/// converges to round-off in as many residuals as a Newton one would take
/// Jacobians, each far cheaper.
const CHORD_CONTRACTION: f64 = 1e-4;

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
    store: Store<'_, X>,
) -> Result<Solved, StepError>
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
    let Store {
        x,
        r,
        lu,
        memory,
        costs,
    } = store;
    let residual = |x: &OVector<f64, X>, r: &mut OVector<f64, X>| eval::<S, Z, X, COMP>(sys, h, e, z, lo, x, r);
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
    // The predictor's error changes smoothly from one step to the next: it
    // is extrapolated from the last three steps' by the quadratic through
    // them (`3e_k − 3e_{k−1} + e_{k−2}`; linearly from two after a second
    // step, the last one's alone after a first; none on a first step) and
    // added to the guess. A cubic through four takes no fewer iterations
    // and amplifies noise (RATTLE on the double pendulum: up to 6). The
    // entries are finite (memory is kept only from successful steps), so a
    // zero weight is a zero term. Element by element: the guess was stored
    // that way, and a wide load of narrow stores stalls.
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
    let contraction = &mut memory.contraction;
    let (tol2, strict2) = (opt.tolerance * opt.tolerance, STRICT * STRICT);
    // Newton's stall rule: an update that no longer shrinks counts as
    // converged below the round-off floor of badly scaled unknowns.
    let stalled = |dn2: f64, x2: f64| dn2 <= opt.stall_tolerance * opt.stall_tolerance * x2.max(z.norm_squared());
    let mut last = f64::INFINITY;
    let mut factored = false;
    let mut factorizations = 0;
    // The iteration has reached the regime where the next update is at
    // round-off: its Jacobian may be the last one (see below).
    let mut at_roundoff = false;
    // Chord iterations: the factors are an earlier iterate's, kept because
    // the iteration contracts fast enough with them (see below).
    let mut chord = false;
    // A chord iteration's rate, and its prediction of the error left.
    let (mut rate, mut bias) = (f64::NAN, f64::INFINITY);
    for it in 1..=opt.max_iterations {
        // Simplified Newton keeps the first factorization of the step; it is
        // refreshed if the iteration stops contracting fast.
        let refresh = !factored || !(opt.simplified || at_roundoff || chord);
        let chord_step = chord && !refresh;
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
            lu.factor_solve_in_place(r).map_err(|e| match e {
                FactorError::NonFinite => non_finite(),
                FactorError::Singular if !rn2.is_finite() => non_finite(),
                FactorError::Singular => StepError::Singular {
                    step,
                    iterations: it,
                    residual: rn2.sqrt(),
                },
            })?;
            factored = true;
            factorizations += 1;
        } else {
            lu.solve(r);
        }
        *x -= &*r;
        let dn2 = r.norm_squared();
        if !dn2.is_finite() {
            return Err(non_finite());
        }
        if dn2 == 0.0 {
            return Ok(Solved {
                iterations: it,
                factorizations,
            });
        }
        let dn = dn2.sqrt();
        if it == 1 {
            // A first guess good to round-off leaves no contraction to
            // measure (the next update is noise), so the last step's
            // constant judges it: Newton's error after this update is about
            // `C ‖Δx_1‖²`, and at 1 % of the tolerance the solve is done.
            if let Some(c) = *contraction {
                let err = c * dn2;
                if err * err <= strict2 * tol2 * x.norm_squared() {
                    return Ok(Solved {
                        iterations: it,
                        factorizations,
                    });
                }
            }
            // Newton's constant from the last step predicts the contraction
            // of iterations with these factors, `C ‖Δx_1‖`; when it is fast
            // they are kept (chord iterations).
            chord = opt.chord
                && costs.worth_deciding()
                && !opt.simplified
                && contraction
                    .is_some_and(|c| c * dn <= CHORD_CONTRACTION && chord_pays(c, dn, opt.tolerance * x.norm(), costs));
        } else {
            if it == 2 {
                // `‖Δx_2‖ ≈ C ‖Δx_1‖²` whether the second iteration used new
                // factors or the first ones (both updates estimate the error
                // left by the first). Round-off in a small second update can
                // only inflate the estimate, and a solve that then stops at
                // the first iteration would never correct it: it may grow by
                // at most 2× a step.
                let measured = dn / (last * last);
                *contraction = Some(contraction.map_or(measured, |c| measured.min(2.0 * c)));
            }
            let x2 = x.norm_squared().max(f64::MIN_POSITIVE);
            if chord_step {
                // Chord iterations converge linearly, at the rate of the
                // first (taken before round-off can blur it): the error left
                // is `rate` times the true part of the update, itself at
                // most the error predicted before it (the rest of a larger
                // update is round-off). The error is one of sign and
                // direction, not noise, and would add up over a run (as
                // simplified Newton's does): it must fall to `STRICT` times
                // the tolerance.
                if it == 2 {
                    rate = dn / last;
                }
                if dn > last || rate > CHORD_CONTRACTION {
                    // An update that grows is round-off once it is small
                    // (the stall rule; what the chord left is smaller
                    // still); otherwise the iteration is not contracting as
                    // predicted: new factors next.
                    if dn > last && stalled(dn2, x2) {
                        return Ok(Solved {
                            iterations: it,
                            factorizations,
                        });
                    }
                    chord = false;
                } else {
                    bias = rate * dn.min(bias);
                    let margin = 1.0 - rate;
                    if bias * bias <= strict2 * tol2 * x2 * margin * margin {
                        return Ok(Solved {
                            iterations: it,
                            factorizations,
                        });
                    }
                }
                last = dn;
                continue;
            }
            // θ = dn/last; θ/(1−θ)·dn ≤ ε‖x‖ ⇔ dn² ≤ ε‖x‖(last − dn), squared
            // to spare the square root of ‖x‖ and both divisions.
            let gap = last - dn;
            if gap > 0.0 && dn2 * dn2 <= tol2 * x2 * gap * gap {
                return Ok(Solved {
                    iterations: it,
                    factorizations,
                });
            }
            if gap <= 0.0 && stalled(dn2, x2) {
                return Ok(Solved {
                    iterations: it,
                    factorizations,
                });
            }
            if opt.simplified && dn > 0.5 * last {
                factored = false;
            }
            // Quadratic convergence, `dn ≈ C last²`, predicts the next update
            // `C dn²`; taken with the Jacobian at this iterate instead of the
            // next (which differ by `dn`), it errs by `C dn · C dn² = θ⁴ dn`.
            // When that is below `STRICT` times the tolerance, the next iteration
            // reuses the factors: the result is the full Newton one to well
            // below an ulp, and the convergence test still decides the end.
            let theta2 = dn2 / (last * last);
            at_roundoff = theta2 * theta2 * theta2 * theta2 * dn2 <= strict2 * tol2 * x2;
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
    /// what the last solve tells this one
    pub newton: &'s mut NewtonMemory<X>,
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
        let Workspace {
            x, r, lu, dz, costs, ..
        } = work;
        let (mut xl, mut rl, mut dzl) = (x.clone(), r.clone(), dz.clone());
        let mut memory = st.newton.clone();
        let solved = {
            let mut solve = |lu: &mut Lu<X>| {
                let store = Store {
                    x: &mut xl,
                    r: &mut rl,
                    lu,
                    memory: &mut memory,
                    costs: *costs,
                };
                iterate::<S, Z, X, COMP>(sys, h, e, st.z, lo, st.warm, *st.step, opt, store)
            };
            // The factors of 1–3 unknowns (an adjugate) stay in registers
            // too; larger ones live in memory whichever copy holds them, and
            // copying the workspace's (8×8: 660 bytes, a call to memmove)
            // bought nothing.
            if X::try_to_usize().is_some_and(|n| n <= 3) {
                solve(&mut lu.clone())?
            } else {
                solve(lu)?
            }
        };
        update::<S, Z, X, COMP>(sys, h, e, stats, solved, &xl, &mut dzl, &memory, st)?;
        x.copy_from(&xl);
        Ok(())
    } else {
        let Workspace {
            x,
            r,
            lu,
            dz,
            memory,
            costs,
        } = work;
        // The state changes only if the step succeeds.
        memory.copy_from(st.newton);
        let store = Store {
            x,
            r,
            lu,
            memory,
            costs: *costs,
        };
        let solved = iterate::<S, Z, X, COMP>(sys, h, e, st.z, lo, st.warm, *st.step, opt, store)?;
        update::<S, Z, X, COMP>(sys, h, e, stats, solved, x, dz, memory, st)
    }
}

/// The end of [`advance`]: increment from the solution `x` (and the solve's
/// `memory`), checks, update.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn update<S, Z, X, const COMP: bool>(
    sys: &S,
    h: f64,
    e: &[f64],
    stats: &mut NewtonStats,
    solved: Solved,
    x: &OVector<f64, X>,
    dz: &mut OVector<f64, Z>,
    memory: &NewtonMemory<X>,
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
            iterations: solved.iterations,
            residual: f64::NAN,
        });
    }
    stats.record(solved);
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
    st.newton.copy_from(memory);
    *st.step += 1;
    Ok(())
}
