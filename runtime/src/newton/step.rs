//! One step: the solve on a workspace allocated once per stepper, the
//! increment, the (compensated) update of the state.

use nalgebra::allocator::Allocator;
use nalgebra::{DefaultAllocator, Dim, OVector, U1};

use super::chord::IterationCosts;
use super::iterate::{iterate, Store};
use super::linear_prediction::Groups;
use super::options::{NewtonOptions, NewtonStats, Solved};
use crate::error::StepError;
use crate::kernels::{Alloc, Kernels};
use crate::lu::Lu;
use crate::memory::NewtonMemory;
use crate::native::{self, FixedDriver, Outcome, Parts};

/// Up to this many unknowns a step's Newton memory is a fresh copy, which
/// lives in registers, and what of it is never read is never written; above
/// it, the small paths (the fixed-size driver's, the derived step's copies)
/// work on a memory kept across steps, since a copy there writes the whole
/// memory each step (2 KB with the wide systems' inner products). With
/// copies at every size the double pendulum's Cartesian RATTLE step through
/// the JIT took 290 ns against 247–260, and without any the sphere's 79–84
/// against 74–77 (`hamel simulate`, side by side).
pub(crate) const IN_REGISTERS: usize = 3;

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
    /// relative costs of a chord and of a Newton iteration (see
    /// [`super::chord::chord_pays`])
    costs: IterationCosts,
    /// the driver of fixed sizes that steps a run-time-sized system's
    /// native kernels (see [`Workspace::fix_sizes`])
    fixed: Option<Box<dyn FixedDriver>>,
    /// the unknowns whose errors the predictor fits apart (see
    /// [`Groups`]): from the Jacobian's pattern
    groups: Groups,
    /// where the last failed solve's last update was largest (set by
    /// the solve where it fails, and by the step where its update fails)
    failed_at: Option<usize>,
    /// what [`Workspace::failed_unknown`] says of the last failed step
    reported: Option<usize>,
}

impl<Z: Dim, X: Dim> Workspace<Z, X>
where
    DefaultAllocator: Alloc<Z, X>,
{
    /// Workspace for a state of size `z` and `x` unknowns.
    #[cfg(test)]
    pub fn new(z: Z, x: X) -> Self {
        Self::with_band(z, x, None)
    }

    /// Workspace for a step whose Jacobian has the band `(kl, ku)` (see
    /// [`Kernels::jacobian_band`]).
    #[cfg(test)]
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
            fixed: None,
            groups: Groups::default(),
            failed_at: None,
            reported: None,
        }
    }

    /// Steps of `sys` through a driver of fixed sizes where `sys` has
    /// native kernels ([`Kernels::native`]), a dense Jacobian, and sizes
    /// that have such a driver (see [`crate::native`]).
    pub fn fix_sizes<S: Kernels<Z, X> + ?Sized>(&mut self, sys: &S) {
        let (z, x) = sys.dims();
        let dense = sys.jacobian_band().is_none_or(|(kl, ku)| kl + ku + 1 >= x.value());
        if sys.native().is_some() && dense && Z::try_to_usize().is_none() {
            self.fixed = native::driver(z.value(), x.value(), sys.kernel_ops());
        }
    }

    /// Declares the pattern of the Jacobian's entries that can be non-zero
    /// (see [`Kernels::jacobian_pattern`]).
    pub fn set_pattern(&mut self, pattern: &[(u32, u32)]) {
        self.lu.set_pattern(pattern);
        self.groups = Groups::of_pattern(self.x.len(), pattern);
    }

    /// Lends the LU a compiler for its factorization's steps, or takes it
    /// back (see [`Lu::set_compiler`]).
    pub fn set_lu_compiler(&mut self, compiler: Option<&'static dyn crate::lu_code::LuCompiler>) {
        self.lu.set_compiler(compiler);
    }

    /// Factorizations whose first steps ran as compiled code.
    pub fn compiled_factorizations(&self) -> u64 {
        self.lu.compiled_factorizations().0
    }

    /// Steps through the run-time-sized driver only, whatever the sizes.
    pub fn unfix_sizes(&mut self) {
        self.fixed = None;
    }

    /// Whether steps of a system with native kernels go through a driver
    /// of fixed sizes (see [`Workspace::fix_sizes`]).
    pub fn has_fixed_sizes(&self) -> bool {
        self.fixed.is_some()
    }

    /// Right after a step that failed with [`StepError::NotConverged`] or
    /// [`StepError::NonFinite`]: the unknown (its index in the scheme's
    /// list) in which Newton's last update was largest, or first
    /// non-finite — where the step's equations resisted; `None` where the
    /// solve failed before an update. After other steps it means nothing
    /// (it is not reset on success: that would cost a store every step).
    pub fn failed_unknown(&self) -> Option<usize> {
        self.reported
    }

    /// Where the last solve failed, by the driver that took it.
    pub(crate) fn last_failure(&self) -> Option<usize> {
        match &self.fixed {
            Some(f) => f.last_failure().or(self.failed_at),
            None => self.failed_at,
        }
    }

    /// The solution of the last successful solve.
    #[cfg(test)]
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
            fixed: self.fixed.as_ref().map(|f| f.boxed()),
            groups: self.groups.clone(),
            failed_at: self.failed_at,
            reported: self.reported,
        }
    }
}

/// Solves `R(x; z) = 0` from the predictor into `work` (see
/// [`Workspace::solution`]); returns the iteration count. With `lo`, the state
/// is `z + lo` (compensated summation).
#[allow(clippy::too_many_arguments)]
#[cfg(test)]
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
        groups,
        failed_at,
        ..
    } = work;
    // A solve on its own: nothing carries over from an earlier one.
    memory.forget();
    let old = memory.clone();
    let store = Store {
        x,
        r,
        lu,
        memory,
        old: &old,
        costs: *costs,
        groups,
        failed_at,
    };
    match lo {
        Some(_) => iterate::<S, Z, X, true>(sys, h, e, z, lo, previous, step, opt, store),
        None => iterate::<S, Z, X, false>(sys, h, e, z, lo, previous, step, opt, store),
    }
    .map(|s| s.iterations)
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

impl<Z: Dim, X: Dim> StepParts<'_, Z, X>
where
    DefaultAllocator: Allocator<Z> + Allocator<X>,
{
    /// The same parts, borrowed for a shorter while (a step tried twice).
    #[inline(always)]
    fn reborrow(&mut self) -> StepParts<'_, Z, X> {
        StepParts {
            z: &mut *self.z,
            lo: &mut *self.lo,
            warm: &mut *self.warm,
            step: &mut *self.step,
            newton: &mut *self.newton,
        }
    }
}

/// One step: Newton solve, increment, (compensated) update. On error nothing
/// is changed. A solve that fails from what the state remembers is tried
/// once more from the scheme's own predictor (see [`restart`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn advance<S, Z, X>(
    sys: &S,
    h: f64,
    e: &[f64],
    opt: &NewtonOptions,
    compensated: bool,
    stats: &mut NewtonStats,
    work: &mut Workspace<Z, X>,
    mut st: StepParts<'_, Z, X>,
) -> Result<(), StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    match advance_once(sys, h, e, opt, compensated, stats, work, st.reborrow()) {
        Ok(()) => Ok(()),
        Err(failed) => {
            let first = work.last_failure();
            let once = restart(stats, st, failed, |stats, parts| {
                advance_once(sys, h, e, opt, compensated, stats, work, parts)
            });
            if once.is_err() {
                work.reported = first.or(work.last_failure());
            }
            once
        }
    }
}

/// A step whose solve failed from what the state remembers (the
/// extrapolated predictor's error, Newton's contraction, kept pivots) is
/// taken once more from the scheme's own predictor with nothing
/// remembered, as a first step is: where the motion turns fast for the
/// step size, an extrapolation from the last steps can throw Newton off a
/// solution that the plain predictor reaches (the 32-link director chain,
/// averaged, h = 0.01 from `tilted`: step 803 failed, and with this the run
/// lasts to step 1279). Steps that succeed the first time are untouched, to
/// the bit. A solution found so must lie about as far from the predictor as
/// the last steps' did ([`RESTART_REACH`]).
/// Where the memory was blank already the second solve would repeat the
/// first; where it fails too, the first failure is reported and the state
/// is as it was.
#[cold]
#[inline(never)]
fn restart<Z, X>(
    stats: &mut NewtonStats,
    mut st: StepParts<'_, Z, X>,
    failed: StepError,
    mut once: impl FnMut(&mut NewtonStats, StepParts<'_, Z, X>) -> Result<(), StepError>,
) -> Result<(), StepError>
where
    Z: Dim,
    X: Dim,
    DefaultAllocator: Allocator<Z> + Allocator<X>,
{
    if st.newton.is_blank() {
        return Err(failed);
    }
    // What a rejected restart must give back, bit for bit.
    let remembered = st.newton.clone();
    let before = (st.z.clone(), st.lo.clone(), st.warm.clone(), *st.step, *stats);
    st.newton.forget();
    let solved = once(stats, st.reborrow());
    let StepParts {
        z,
        lo,
        warm,
        step,
        newton,
    } = st;
    // Where the last steps' solutions lay from the plain predictor (their
    // errors), this one must lie about as far: a root much farther off is
    // another branch of the step's equations, not the motion's continuation
    // (the double pendulum at h = 0.16, midpoint: restarts whose solutions
    // lay 0.9–1.2 times the last error away carried the run on with its
    // energy as before; one at 6.8 times threw it to 42 times its energy).
    let near = || {
        let last = remembered.error.norm().max(remembered.error2.norm());
        (&*warm - &newton.guess).norm() <= RESTART_REACH * last
    };
    if solved.is_ok() && near() {
        stats.restarts += 1;
        return Ok(());
    }
    let (z0, lo0, warm0, step0, stats0) = before;
    *stats = stats0;
    z.copy_from(&z0);
    lo.copy_from(&lo0);
    warm.copy_from(&warm0);
    *step = step0;
    *newton = remembered;
    Err(failed)
}

/// How much farther from the plain predictor than the last steps'
/// solutions a restarted step's solution may lie (see [`restart`]). The
/// restarts of the 32-link averaged director chain at h = 0.01 lay 0.5–1.9
/// times as far, the double pendulum's at h = 0.16 0.9–1.2; a root on
/// another branch 6.8 times. Those of the 64-link energy–momentum chain
/// (median 1.0, but its first 2.3) and of the spherical pendulum in angles
/// near its pole at h = 1 (which they carried through to a warned run) are
/// refused: a wider bound would rescue more runs, on weaker evidence.
const RESTART_REACH: f64 = 2.0;

/// [`advance`] without its restart: one solve from what the state
/// remembers. The fixed-size drivers call it, so that a restart is tried
/// once, by the outer step.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn advance_once<S, Z, X>(
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
    // Only run-time sizes have a fixed-size driver: for derived code (sizes
    // known at compile time) the branch folds away and `advance` stays as
    // small as it was (the sphere's step: 84 ns with it in, 67 without).
    let fixed = match &mut work.fixed {
        Some(f) if Z::try_to_usize().is_none() && !compensated => Some(f),
        _ => None,
    };
    if let (Some(fixed), Some((native, params))) = (fixed, sys.native()) {
        let parts = Parts {
            z: st.z.as_mut_slice(),
            warm: st.warm.as_mut_slice(),
            step: &mut *st.step,
            guess: st.newton.guess.as_mut_slice(),
            error: st.newton.error.as_mut_slice(),
            error2: st.newton.error2.as_mut_slice(),
            known: &mut st.newton.known,
            contraction: &mut st.newton.contraction,
        };
        match fixed.advance(native, params, h, e, opt, stats, parts) {
            Outcome::Stepped => return Ok(()),
            Outcome::Failed(e) => return Err(*e),
            Outcome::Declined => {}
        }
    }
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
            x,
            r,
            lu,
            dz,
            memory,
            costs,
            groups,
            failed_at,
            ..
        } = work;
        let (mut xl, mut rl, mut dzl) = (x.clone(), r.clone(), dz.clone());
        // Above `IN_REGISTERS` unknowns the solve writes its memory into the
        // workspace's, not into a copy of the state's: a copy writes the
        // whole memory each step (with the wide systems' inner products,
        // 2 KB, where the fields a small step reads are a few words; of
        // those the solve reads only the pivots before writing them).
        let mut local;
        let memory = if X::try_to_usize().is_some_and(|n| n <= IN_REGISTERS) {
            local = st.newton.clone();
            &mut local
        } else {
            memory.pivots.copy_from(&st.newton.pivots);
            memory
        };
        let solved = {
            // `pivots`: whether the LU may keep pivots (see below); not a
            // fresh one's.
            let mut solve = |lu: &mut Lu<X>, pivots: bool| {
                if pivots {
                    lu.load_pivots(memory.pivots.as_slice());
                }
                let store = Store {
                    x: &mut xl,
                    r: &mut rl,
                    lu: &mut *lu,
                    memory: &mut *memory,
                    old: &*st.newton,
                    costs: *costs,
                    groups,
                    failed_at: &mut *failed_at,
                };
                let solved = iterate::<S, Z, X, COMP>(sys, h, e, st.z, lo, st.warm, *st.step, opt, store)?;
                if pivots {
                    lu.store_pivots(memory.pivots.as_mut_slice());
                }
                Ok(solved)
            };
            // The factors of 1–3 unknowns (an adjugate) stay in registers
            // too; larger ones live in memory whichever copy holds them, and
            // copying the workspace's (8×8: 660 bytes, a call to memmove)
            // bought nothing. Fresh storage, not a clone of the workspace's:
            // every solve factors before it solves, so the old factors are
            // never read, and a clone copies the banded LU's schedule too
            // (its vectors, a call to clone them and one to drop them: the
            // sphere's derived step took 110–115 ns that way, 83–84 ns this
            // way, side by side in the speed example). Not dropped: at fixed
            // sizes it owns no heap memory (its vectors are empty), and the
            // drop is a call that is not inlined (about 2 % of the sphere's
            // JIT step).
            if let Some(n) = X::try_to_usize().filter(|&n| n <= 3) {
                solve(&mut std::mem::ManuallyDrop::new(Lu::new(X::from_usize(n))), false)?
            } else {
                solve(lu, true)?
            }
        };
        update::<S, Z, X, COMP>(sys, h, e, stats, solved, &xl, &mut dzl, memory, st)
            .inspect_err(|_| *failed_at = None)?;
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
            groups,
            failed_at,
            ..
        } = work;
        // The state changes only if the step succeeds: the solve reads its
        // memory and writes apart, into `memory` (copying the state's in,
        // seven vectors, took 2 % of the 16-link director chain's step).
        // A sparse LU keeps the state's pivots, not its own last ones: a
        // step stays a function of the state, whichever stepper takes it.
        lu.load_pivots(st.newton.pivots.as_slice());
        let store = Store {
            x,
            r,
            lu,
            memory,
            old: &*st.newton,
            costs: *costs,
            groups,
            failed_at,
        };
        let solved = iterate::<S, Z, X, COMP>(sys, h, e, st.z, lo, st.warm, *st.step, opt, store)?;
        lu.store_pivots(memory.pivots.as_mut_slice());
        update::<S, Z, X, COMP>(sys, h, e, stats, solved, x, dz, memory, st).inspect_err(|_| *failed_at = None)
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
    memory: &mut NewtonMemory<X>,
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
    // An explicit step (no unknowns) wrote nothing.
    if !x.is_empty() {
        st.newton.commit(memory);
    }
    *st.step += 1;
    Ok(())
}
