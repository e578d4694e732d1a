//! Native kernels called by address, and the fixed-size drivers that step
//! them: how a system whose sizes are known only at run time (a model file
//! compiled by the JIT) steps a small model nearly as fast as derived code.
//!
//! A run-time-sized step pays for its sizes everywhere: heap vectors,
//! loops of unknown length, an LU that cannot keep a 3×3 matrix in
//! registers, argument lists assembled per call. For the sizes of small
//! models a stepper instead drives the system's native functions with the
//! very Newton code derived integrators use, monomorphized for those sizes
//! (a fixed-size driver); the arithmetic is the same, so are the results to the
//! bit.
//!
//! Each kernel call is an opaque call on the Newton iteration's critical
//! path, so the drivers call the JIT's direct entries: the unknowns in
//! registers rather than stored and reloaded, no table of argument pointers
//! assembled per call (see [`passed`]).

use std::any::Any;
use std::mem::MaybeUninit;
use std::sync::Arc;

use hamel_kernel::{Arg, InvariantKind};
use nalgebra::{Const, SMatrix, SVector};

use crate::error::StepError;
use crate::kernels::{Kernels, NameList};
use crate::memory::NewtonMemory;
use crate::newton::{self, NewtonOptions, NewtonStats, StepParts, Workspace, IN_REGISTERS};

/// A hot kernel's direct entry, its type erased: called as
/// `fn(table, scratch, out_0[, out_1], h, v_1, …, v_nx)` (see [`passed`]),
/// one output pointer per output array of the kernel.
pub type DirectFn = unsafe extern "C" fn();

/// How a hot kernel's direct entry receives one argument array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// through pointer `k` of the table `[p, e, z]`, its first parameter
    Table(usize),
    /// by value, from value parameter `k` on: `h` is value 0, the unknowns
    /// (`x`, or `w` the previous solution) values 1 to `nx`
    Values(usize),
}

/// How a direct entry receives the array `arg` (`None`: hot kernels read no
/// such array). The unknowns go by value: they are the Newton iteration's
/// critical path, which a store and reload through memory at every call
/// would lengthen; the rest are read through the table.
pub fn passed(arg: Arg) -> Option<Pass> {
    match arg {
        Arg::P => Some(Pass::Table(0)),
        Arg::E => Some(Pass::Table(1)),
        Arg::Z => Some(Pass::Table(2)),
        Arg::H => Some(Pass::Values(0)),
        Arg::X | Arg::W => Some(Pass::Values(1)),
        _ => None,
    }
}

/// Most unknowns a direct entry takes by value: those of the largest
/// fixed-size driver.
pub const MAX_DIRECT_UNKNOWNS: usize = 8;

/// `f64`, once per token: a parameter list as long as a list of indices.
macro_rules! f64_for {
    ($i:tt) => {
        f64
    };
}

/// `call_one::<NX>` and `call_two::<NX>`: a direct entry called with
/// one or two output arrays and the `NX` unknowns by value, for the sizes
/// listed (each its own function type).
macro_rules! direct_calls {
    ($($n:literal: [$($i:tt)*])*) => {
        /// Calls the direct entry `f` of a kernel with one output array.
        ///
        /// # Safety
        /// `f` must be a direct entry of a kernel with one output array,
        /// reading `NX` unknowns; the table's arrays, `scratch` and `out`
        /// must be valid as [`NativeStep::new`] requires.
        #[inline(always)]
        unsafe fn call_one<const NX: usize>(
            f: DirectFn,
            table: *const *const f64,
            scratch: *mut f64,
            out: *mut f64,
            h: f64,
            x: &SVector<f64, NX>,
        ) {
            match NX {
                $($n => {
                    type F = unsafe extern "C" fn(*const *const f64, *mut f64, *mut f64, f64 $(, f64_for!($i))*);
                    // SAFETY: the caller's contract: `f` has this type.
                    unsafe {
                        let f = std::mem::transmute::<DirectFn, F>(f);
                        f(table, scratch, out, h $(, x[$i])*)
                    }
                })*
                _ => unreachable!("no direct entries of {NX} unknowns"),
            }
        }

        /// Calls the direct entry `f` of a kernel with two output arrays.
        ///
        /// # Safety
        /// As [`call_one`], for a kernel with two output arrays.
        #[inline(always)]
        unsafe fn call_two<const NX: usize>(
            f: DirectFn,
            table: *const *const f64,
            scratch: *mut f64,
            (out, second): (*mut f64, *mut f64),
            h: f64,
            x: &SVector<f64, NX>,
        ) {
            match NX {
                $($n => {
                    type F = unsafe extern "C" fn(*const *const f64, *mut f64, *mut f64, *mut f64, f64 $(, f64_for!($i))*);
                    // SAFETY: the caller's contract: `f` has this type.
                    unsafe {
                        let f = std::mem::transmute::<DirectFn, F>(f);
                        f(table, scratch, out, second, h $(, x[$i])*)
                    }
                })*
                _ => unreachable!("no direct entries of {NX} unknowns"),
            }
        }
    };
}

direct_calls!(
    1: [0]
    2: [0 1]
    3: [0 1 2]
    4: [0 1 2 3]
    5: [0 1 2 3 4]
    6: [0 1 2 3 4 5]
    7: [0 1 2 3 4 5 6]
    8: [0 1 2 3 4 5 6 7]
);

/// The hot kernels of a system's step as native functions, with what keeps
/// them alive: what [`Kernels::native`] hands to the fixed-size drivers.
#[derive(Clone)]
pub struct NativeStep {
    residual: DirectFn,
    residual_jacobian: DirectFn,
    increment: DirectFn,
    predict: DirectFn,
    /// numbers of parameters, exogenous values, state components, unknowns
    sizes: [usize; 4],
    /// scratch values the functions use (long ones are compiled in parts,
    /// which pass values through it)
    scratch: usize,
    _code: Arc<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for NativeStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeStep")
            .field("sizes", &self.sizes)
            .finish_non_exhaustive()
    }
}

impl NativeStep {
    /// The native step of a system of `nz` state components and `nx`
    /// unknowns (at most [`MAX_DIRECT_UNKNOWNS`]), `np` parameters and `ne`
    /// exogenous values, whose functions live as long as `code`.
    ///
    /// # Safety
    /// As long as `code` lives, each function must be a direct entry: called
    /// as `fn(table, scratch, out_0[, out_1], h, v_1, …, v_nx)`, with a
    /// table of pointers to `p` (`np` values), `e` (`ne`) and `z` (`nz`),
    /// a pointer to `scratch` values of scratch space, one pointer per
    /// output array, `h` and the `nx` unknowns (`x`, or `w`) by value (see
    /// [`passed`]), it must read only those and write only its outputs:
    /// `residual` the residual (`nx` values, one output array),
    /// `residual_jacobian` the residual and the `nx × nx` Jacobian
    /// column-major (every entry; two output arrays), `increment` the
    /// increment (`nz`), `predict` the guess (`nx`).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn new(
        residual: DirectFn,
        residual_jacobian: DirectFn,
        increment: DirectFn,
        predict: DirectFn,
        (np, ne, nz, nx): (usize, usize, usize, usize),
        scratch: usize,
        code: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        Self {
            residual,
            residual_jacobian,
            increment,
            predict,
            sizes: [np, ne, nz, nx],
            scratch,
            _code: code,
        }
    }
}

/// A system's hot kernels at fixed sizes: the native functions of a
/// [`NativeStep`] and its parameter values, seen as derived kernels, so that
/// the derived code's Newton driver steps them.
struct Fixed<'a, const NZ: usize, const NX: usize> {
    step: &'a NativeStep,
    params: &'a [f64],
    /// the step's scratch space, of its scratch length; used by one call
    /// at a time
    scratch: *mut f64,
}

impl<const NZ: usize, const NX: usize> Fixed<'_, NZ, NX> {
    /// Calls `f` on `(h, e, z, x)`: its first output array (`N` values)
    /// into `out` through [`settle`], a second one, if it has one, in place
    /// at `second`.
    #[inline(always)]
    fn run<const N: usize>(
        &self,
        f: DirectFn,
        h: f64,
        e: &[f64],
        (z, x): (&SVector<f64, NZ>, &SVector<f64, NX>),
        out: &mut [f64],
        second: Option<*mut f64>,
    ) {
        // Not zeroed: the kernel writes every value, and zeros stored first
        // would be stores the call waits behind for nothing.
        let mut fresh = MaybeUninit::<[f64; N]>::uninit();
        let fresh = fresh.as_mut_ptr().cast::<f64>();
        let table = [self.params.as_ptr(), e.as_ptr(), z.as_ptr()];
        // SAFETY: `driver` made this only for a step of these sizes, whose
        // functions are direct entries (`NativeStep::new`); `advance`
        // checked the parameters' and exogenous values' counts and gave it
        // the step's scratch space; the kernels called with `second` are
        // those with two output arrays.
        unsafe {
            match second {
                None => call_one::<NX>(f, table.as_ptr(), self.scratch, fresh, h, x),
                Some(j) => call_two::<NX>(f, table.as_ptr(), self.scratch, (fresh, j), h, x),
            }
            // `out` has `N` values, which the kernel has written.
            settle_from(fresh, out);
        }
    }
}

impl<const NZ: usize, const NX: usize> Kernels<Const<NZ>, Const<NX>> for Fixed<'_, NZ, NX> {
    // Only the hot kernels are called: what a stepper needs besides them it
    // asks of the system itself.
    fn model(&self) -> &str {
        ""
    }
    fn scheme(&self) -> &str {
        ""
    }
    fn dims(&self) -> (Const<NZ>, Const<NX>) {
        (Const, Const)
    }
    fn names(&self, _: NameList) -> Vec<&str> {
        Vec::new()
    }
    fn invariant_info(&self) -> Vec<(&str, InvariantKind)> {
        Vec::new()
    }
    fn parameters(&self) -> Vec<f64> {
        self.params.to_vec()
    }
    #[inline(always)]
    fn residual(&self, h: f64, e: &[f64], z: &SVector<f64, NZ>, x: &SVector<f64, NX>, out: &mut SVector<f64, NX>) {
        self.run::<NX>(self.step.residual, h, e, (z, x), out.as_mut_slice(), None);
    }
    #[inline(always)]
    fn jacobian(&self, h: f64, e: &[f64], z: &SVector<f64, NZ>, x: &SVector<f64, NX>, out: &mut SMatrix<f64, NX, NX>) {
        let mut r = SVector::<f64, NX>::zeros();
        self.residual_jacobian(h, e, z, x, &mut r, out);
    }
    #[inline(always)]
    fn residual_jacobian(
        &self,
        h: f64,
        e: &[f64],
        z: &SVector<f64, NZ>,
        x: &SVector<f64, NX>,
        r: &mut SVector<f64, NX>,
        j: &mut SMatrix<f64, NX, NX>,
    ) {
        // The adjugate of up to 3 unknowns reads the Jacobian into registers
        // right away, and pairs of its entries at once: through a fresh
        // array, read one entry at a time, those loads wait for no stores
        // (the sphere: about 7 ns a step). The LU of more unknowns works on
        // the matrix in memory; there the extra copy cost more than it saved
        // (the double pendulum's 8 unknowns: about 10 %).
        if NX > 3 {
            let j = j.as_mut_ptr();
            self.run::<NX>(self.step.residual_jacobian, h, e, (z, x), r.as_mut_slice(), Some(j));
            return;
        }
        let mut fresh = MaybeUninit::<SMatrix<f64, NX, NX>>::uninit();
        // Column-major, as `j`: an `SMatrix` is its `[[f64; NX]; NX]`.
        let fresh = fresh.as_mut_ptr().cast::<f64>();
        self.run::<NX>(self.step.residual_jacobian, h, e, (z, x), r.as_mut_slice(), Some(fresh));
        // SAFETY: the kernel has written every entry of the Jacobian.
        unsafe { settle_from(fresh, j.as_mut_slice()) };
    }
    #[inline(always)]
    fn increment(&self, h: f64, e: &[f64], z: &SVector<f64, NZ>, x: &SVector<f64, NX>, out: &mut SVector<f64, NZ>) {
        self.run::<NZ>(self.step.increment, h, e, (z, x), out.as_mut_slice(), None);
    }
    #[inline(always)]
    fn predict(&self, h: f64, e: &[f64], z: &SVector<f64, NZ>, w: &SVector<f64, NX>, out: &mut SVector<f64, NX>) {
        self.run::<NX>(self.step.predict, h, e, (z, w), out.as_mut_slice(), None);
    }
    fn observe_size(&self) -> usize {
        0
    }
    fn state_of(&self, _: &[f64], _: &[f64], _: &mut [f64], _: &mut [f64]) {}
    fn observe(&self, _: &[f64], _: &mut [f64]) -> bool {
        false
    }
    fn physical_of(&self, _: &[f64], _: &[f64], _: &mut [f64], _: &mut [f64]) {}
    fn invariants_of(&self, _: f64, _: &[f64], _: &[f64], _: &mut [f64]) {}
    fn initial_data(&self, _: &str, _: &mut [f64], _: &mut [f64]) -> bool {
        false
    }
}

/// `out` from the values a native kernel has just written to `fresh`, read
/// one by one: the kernel stores them one by one, and a wider load that
/// straddles two such stores waits for both to drain, where a load of one
/// takes its value from the store at once (the sphere's step through the
/// JIT: about 155 → 140 ns).
#[inline(always)]
fn settle<const N: usize>(fresh: &[f64; N], out: &mut [f64]) {
    let out = &mut out[..N];
    // SAFETY: `fresh` holds the `N` values read.
    unsafe { settle_from(fresh.as_ptr(), out) }
}

/// [`settle`] from the first `out.len()` values at `fresh`.
///
/// # Safety
/// `fresh` must be valid for reading `out.len()` initialized values.
#[inline(always)]
unsafe fn settle_from(fresh: *const f64, out: &mut [f64]) {
    for (i, o) in out.iter_mut().enumerate() {
        // SAFETY: the caller's contract.
        *o = unsafe { std::ptr::read_volatile(fresh.add(i)) };
    }
}

/// `a` read one value at a time, as [`settle`] reads: the last step wrote
/// it so.
#[inline(always)]
fn singly<const N: usize>(a: &[f64; N]) -> SVector<f64, N> {
    let mut out = SVector::<f64, N>::zeros();
    settle(a, out.as_mut_slice());
    out
}

/// `a` as a vector of fixed size, in place.
#[inline(always)]
fn vector<const N: usize>(a: &mut [f64; N]) -> &mut SVector<f64, N> {
    // SAFETY: `SVector<f64, N>` is a `#[repr(C)]` `Matrix` whose one field
    // of non-zero size is an `ArrayStorage`, `#[repr(transparent)]` over
    // `[[f64; N]; 1]`: the layout and alignment of `[f64; N]`, every bit
    // pattern valid for both.
    unsafe { &mut *(a as *mut [f64; N]).cast::<SVector<f64, N>>() }
}

/// The parts of a run-time-sized state a step changes, as slices.
pub(crate) struct Parts<'s> {
    pub(crate) z: &'s mut [f64],
    pub(crate) warm: &'s mut [f64],
    pub(crate) step: &'s mut u64,
    pub(crate) guess: &'s mut [f64],
    pub(crate) error: &'s mut [f64],
    pub(crate) error2: &'s mut [f64],
    pub(crate) known: &'s mut u8,
    pub(crate) contraction: &'s mut Option<f64>,
}

/// What a [`FixedDriver`] did with a step. One word, returned in a
/// register: a `Result<(), StepError>` is returned through memory, written
/// in pieces that the caller's wider loads then wait for (the sphere's
/// step through the JIT: about 6 ns of its 125).
pub(crate) enum Outcome {
    /// the step was taken
    Stepped,
    /// the step failed; the state is unchanged
    Failed(Box<StepError>),
    /// not the driver's sizes: nothing was done
    Declined,
}

/// A Newton driver monomorphized for one pair of sizes, stepping a
/// [`NativeStep`] of those sizes.
pub(crate) trait FixedDriver: Send + Sync {
    /// One step (not compensated) of `step` with parameters `params`;
    /// [`Outcome::Declined`] (nothing done) where the sizes are not the
    /// driver's.
    #[allow(clippy::too_many_arguments)]
    fn advance(
        &mut self,
        step: &NativeStep,
        params: &[f64],
        h: f64,
        e: &[f64],
        opt: &NewtonOptions,
        stats: &mut NewtonStats,
        parts: Parts<'_>,
    ) -> Outcome;

    /// A copy, with its own workspace.
    fn boxed(&self) -> Box<dyn FixedDriver>;

    /// Where its last solve failed (see [`Workspace::failed_unknown`]).
    fn last_failure(&self) -> Option<usize>;
}

/// The driver of `NZ` state components and `NX` unknowns.
struct Driver<const NZ: usize, const NX: usize> {
    work: Workspace<Const<NZ>, Const<NX>>,
    scratch: Vec<f64>,
    /// the Newton memory a step of more than `newton::IN_REGISTERS`
    /// unknowns works on: the few values a driver's sizes read are copied
    /// in and out each step; the rest (the errors, inner products and fits
    /// of wide systems, more unknowns than a driver has) stays as it was
    /// made, never read
    newton: NewtonMemory<Const<NX>>,
}

impl<const NZ: usize, const NX: usize> FixedDriver for Driver<NZ, NX> {
    #[inline(never)]
    fn advance(
        &mut self,
        step: &NativeStep,
        params: &[f64],
        h: f64,
        e: &[f64],
        opt: &NewtonOptions,
        stats: &mut NewtonStats,
        parts: Parts<'_>,
    ) -> Outcome {
        // One comparison each: an array of the sizes built here and compared
        // whole is stored in words and loaded in wider pieces, which wait
        // for the stores (about 10 ns a step).
        let [np, ne, nz, nx] = step.sizes;
        if np != params.len() || ne != e.len() || nz != NZ || nx != NX {
            return Outcome::Declined;
        }
        // The state and its warm start are stepped in place (no copies in
        // and out: about 6 ns a step on the sphere); the Newton memory is
        // copied, in and out one value at a time (see `settle`): a
        // `memcpy` of run-time length stores in pieces that the next
        // step's loads straddle, and each such load waits for the stores
        // to drain.
        let (Ok(z), Ok(warm), Ok(guess), Ok(error), Ok(error2)) = (
            <&mut [f64; NZ]>::try_from(parts.z),
            <&mut [f64; NX]>::try_from(parts.warm),
            <&mut [f64; NX]>::try_from(parts.guess),
            <&mut [f64; NX]>::try_from(parts.error),
            <&mut [f64; NX]>::try_from(parts.error2),
        ) else {
            return Outcome::Declined;
        };
        let mut lo = SVector::<f64, NZ>::zeros();
        // See `newton::IN_REGISTERS`.
        let mut local;
        let memory = if NX <= IN_REGISTERS {
            local = NewtonMemory {
                guess: singly(guess),
                error: singly(error),
                error2: singly(error2),
                // Read only from `CUBIC_MIN` unknowns, more than a driver has.
                older: [SVector::zeros(); crate::memory::OLDER],
                head: 0,
                gram: [[[0.0; crate::memory::KEPT]; crate::memory::KEPT]; crate::memory::GROUPS],
                fit: [None; crate::memory::GROUPS],
                fit_age: [0; crate::memory::GROUPS],
                known: *parts.known,
                contraction: *parts.contraction,
                // Dense: systems whose LU keeps pivots have no native step.
                pivots: SVector::<u16, NX>::repeat(crate::memory::NO_PIVOT),
            };
            &mut local
        } else {
            let memory = &mut self.newton;
            memory.guess = singly(guess);
            memory.error = singly(error);
            memory.error2 = singly(error2);
            memory.known = *parts.known;
            memory.contraction = *parts.contraction;
            memory.pivots = SVector::<u16, NX>::repeat(crate::memory::NO_PIVOT);
            memory
        };
        if self.scratch.len() < step.scratch {
            self.scratch.resize(step.scratch, 0.0);
        }
        let sys = Fixed::<NZ, NX> {
            step,
            params,
            scratch: self.scratch.as_mut_ptr(),
        };
        let done = newton::advance_once(
            &sys,
            h,
            e,
            opt,
            false,
            stats,
            &mut self.work,
            // The state's own values, where they have the layout of the
            // driver's vectors: a step that fails changes none of them.
            StepParts {
                z: vector(z),
                lo: &mut lo,
                warm: vector(warm),
                step: parts.step,
                newton: &mut *memory,
            },
        );
        if let Err(e) = done {
            return Outcome::Failed(Box::new(e));
        }
        settle(&memory.guess.into(), guess);
        settle(&memory.error.into(), error);
        settle(&memory.error2.into(), error2);
        *parts.known = memory.known;
        *parts.contraction = memory.contraction;
        Outcome::Stepped
    }

    fn boxed(&self) -> Box<dyn FixedDriver> {
        Box::new(Driver::<NZ, NX> {
            work: self.work.clone(),
            scratch: Vec::new(),
            newton: NewtonMemory::new(Const),
        })
    }

    fn last_failure(&self) -> Option<usize> {
        self.work.last_failure()
    }
}

/// `Some($f::<NZ, NX>)` for the sizes listed, `None` for others.
macro_rules! sizes {
    ($nz:expr, $nx:expr, $f:ident; $(($z:literal: $($x:literal)*))*) => {
        match ($nz, $nx) {
            $($(($z, $x) => Some($f::<$z, $x> as fn(Option<(usize, usize)>) -> Box<dyn FixedDriver>),)*)*
            _ => None,
        }
    };
}

/// A fixed-size driver, its Newton costs those of `ops` (see
/// [`Kernels::kernel_ops`]): it weighs chord iterations as the
/// run-time-sized driver does, so that both take the same iterations.
fn new<const NZ: usize, const NX: usize>(ops: Option<(usize, usize)>) -> Box<dyn FixedDriver> {
    Box::new(Driver::<NZ, NX> {
        work: Workspace::with_costs(Const, Const, None, ops),
        scratch: Vec::new(),
        newton: NewtonMemory::new(Const),
    })
}

/// The fixed-size driver of a step of `nz` state components and `nx`
/// unknowns with a dense Jacobian, whose kernels cost `ops` (see
/// [`Kernels::kernel_ops`]); `None` for sizes without one.
///
/// The sizes are those of small models (a pendulum in any coordinates, a
/// double pendulum in any form, a cart, a sleigh), where the
/// run-time-sized driver costs more than the kernels; each pair is one more
/// copy of the Newton driver in the binary.
pub(crate) fn driver(nz: usize, nx: usize, ops: Option<(usize, usize)>) -> Option<Box<dyn FixedDriver>> {
    sizes!(nz, nx, new;
        (2: 1 2)
        (3: 1 2 3)
        (4: 1 2 3 4)
        (5: 1 2 3 4 5)
        (6: 1 2 3 4 5 6)
        (8: 2 3 4 5 6 8)
        (10: 2 4 5 6 8)
        (12: 2 3 4 6 8)
    )
    .map(|f| f(ops))
}

#[cfg(test)]
mod tests {
    use super::driver;

    /// Drivers exist for the sizes listed and for no others: each pair is
    /// one more copy of the Newton driver in the binary.
    #[test]
    fn drivers_exist_for_the_listed_sizes_only() {
        for (nz, nx) in [(2, 1), (5, 3), (6, 6), (10, 6), (12, 8)] {
            assert!(driver(nz, nx, None).is_some(), "({nz}, {nx})");
        }
        for (nz, nx) in [(1, 1), (2, 3), (7, 3), (8, 7), (12, 9), (13, 2), (20, 12)] {
            assert!(driver(nz, nx, None).is_none(), "({nz}, {nx})");
        }
    }
}
