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

use std::any::Any;
use std::sync::Arc;

use hamel_kernel::{Arg, InvariantKind};
use nalgebra::{Const, SMatrix, SVector};

use crate::error::StepError;
use crate::kernels::{Kernels, NameList};
use crate::memory::NewtonMemory;
use crate::newton::{self, NewtonOptions, NewtonStats, StepParts, Workspace};

/// The signature of a native kernel: a pointer to its argument arrays'
/// pointers, scratch space, a pointer to its output arrays' pointers.
pub type NativeFn = unsafe extern "C" fn(*const *const f64, *mut f64, *const *mut f64);

/// Most argument arrays a hot kernel reads: `p`, `h`, `e`, `z`, `x` (or `w`).
const MAX_ARGS: usize = 5;

/// One native kernel and the argument arrays it reads, in order.
#[derive(Clone, Copy, Debug)]
pub struct NativeCall {
    f: NativeFn,
    args: [Arg; MAX_ARGS],
    n_args: usize,
}

impl NativeCall {
    /// The kernel `f`, reading the arrays `args` in order (each of `p`, `h`,
    /// `e`, `z`, and `x` or `w`, at most once); `None` for other arrays.
    pub fn new(f: NativeFn, args: &[Arg]) -> Option<Self> {
        if args.len() > MAX_ARGS
            || args
                .iter()
                .any(|a| !matches!(a, Arg::P | Arg::H | Arg::E | Arg::Z | Arg::X | Arg::W))
        {
            return None;
        }
        let mut a = [Arg::P; MAX_ARGS];
        a[..args.len()].copy_from_slice(args);
        Some(Self {
            f,
            args: a,
            n_args: args.len(),
        })
    }

    /// Calls the kernel on `p`, `h`, `e`, `z` and `x` (the unknowns, or the
    /// previous solution), writing its output arrays at `outs`.
    ///
    /// # Safety
    /// The [`NativeStep`] holding this call must be alive, and its sizes
    /// those of the arrays given; `scratch` must be valid for reading and
    /// writing its scratch length; `outs` must hold one pointer per output
    /// array of the kernel, each valid for writing that array's length.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn call(
        &self,
        p: &[f64],
        h: &f64,
        e: &[f64],
        z: *const f64,
        x: *const f64,
        scratch: *mut f64,
        outs: &[*mut f64],
    ) {
        let mut ptrs = [std::ptr::null::<f64>(); MAX_ARGS];
        for (ptr, arg) in ptrs.iter_mut().zip(&self.args[..self.n_args]) {
            *ptr = match arg {
                Arg::P => p.as_ptr(),
                Arg::H => h,
                Arg::E => e.as_ptr(),
                Arg::Z => z,
                _ => x,
            };
        }
        // SAFETY: the caller's contract, and that of `NativeStep::new`.
        unsafe { (self.f)(ptrs.as_ptr(), scratch, outs.as_ptr()) }
    }
}

/// The hot kernels of a system's step as native functions, with what keeps
/// them alive: what [`Kernels::native`] hands to the fixed-size drivers.
#[derive(Clone)]
pub struct NativeStep {
    residual: NativeCall,
    residual_jacobian: NativeCall,
    increment: NativeCall,
    predict: NativeCall,
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
    /// unknowns, `np` parameters and `ne` exogenous values, whose functions
    /// live as long as `code`.
    ///
    /// # Safety
    /// As long as `code` lives, each function, called with one pointer per
    /// argument array it is declared to read (`p`: `np` values, `h`: 1, `e`:
    /// `ne`, `z`: `nz`, `x` and `w`: `nx`) and a pointer to `scratch`
    /// values of scratch space, must
    /// read only those arrays and write only its outputs, through one
    /// pointer per output array: `residual` the residual (`nx` values),
    /// `residual_jacobian` the residual and then the `nx × nx` Jacobian
    /// column-major (every entry), `increment` the increment (`nz`),
    /// `predict` the guess (`nx`).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn new(
        residual: NativeCall,
        residual_jacobian: NativeCall,
        increment: NativeCall,
        predict: NativeCall,
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
        f: &NativeCall,
        h: f64,
        e: &[f64],
        (z, x): (*const f64, *const f64),
        out: &mut [f64],
        second: Option<*mut f64>,
    ) {
        let mut fresh = [0.0; N];
        let outs = [fresh.as_mut_ptr(), second.unwrap_or(std::ptr::null_mut())];
        // SAFETY: `driver` made this only for a step of these sizes;
        // `advance` checked the parameters' and exogenous values' counts and
        // gave it the step's scratch space; `outs` holds one pointer per
        // output array of `f` (the null one is never read by a kernel with
        // one output array).
        unsafe {
            f.call(
                self.params,
                &h,
                e,
                z,
                x,
                self.scratch,
                &outs[..1 + usize::from(second.is_some())],
            )
        }
        settle(&fresh, out);
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
        self.run::<NX>(
            &self.step.residual,
            h,
            e,
            (z.as_ptr(), x.as_ptr()),
            out.as_mut_slice(),
            None,
        );
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
            self.run::<NX>(
                &self.step.residual_jacobian,
                h,
                e,
                (z.as_ptr(), x.as_ptr()),
                r.as_mut_slice(),
                Some(j),
            );
            return;
        }
        let mut fresh = SMatrix::<f64, NX, NX>::zeros();
        self.run::<NX>(
            &self.step.residual_jacobian,
            h,
            e,
            (z.as_ptr(), x.as_ptr()),
            r.as_mut_slice(),
            Some(fresh.as_mut_ptr()),
        );
        for (o, f) in j.iter_mut().zip(fresh.iter()) {
            // SAFETY: a plain read of an initialized `f64`.
            *o = unsafe { std::ptr::read_volatile(f) };
        }
    }
    #[inline(always)]
    fn increment(&self, h: f64, e: &[f64], z: &SVector<f64, NZ>, x: &SVector<f64, NX>, out: &mut SVector<f64, NZ>) {
        self.run::<NZ>(
            &self.step.increment,
            h,
            e,
            (z.as_ptr(), x.as_ptr()),
            out.as_mut_slice(),
            None,
        );
    }
    #[inline(always)]
    fn predict(&self, h: f64, e: &[f64], z: &SVector<f64, NZ>, w: &SVector<f64, NX>, out: &mut SVector<f64, NX>) {
        self.run::<NX>(
            &self.step.predict,
            h,
            e,
            (z.as_ptr(), w.as_ptr()),
            out.as_mut_slice(),
            None,
        );
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
    for (o, f) in out.iter_mut().zip(fresh) {
        // SAFETY: a plain read of an initialized `f64`.
        *o = unsafe { std::ptr::read_volatile(f) };
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
}

/// The driver of `NZ` state components and `NX` unknowns.
struct Driver<const NZ: usize, const NX: usize> {
    work: Workspace<Const<NZ>, Const<NX>>,
    scratch: Vec<f64>,
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
        let mut newton = NewtonMemory {
            guess: singly(guess),
            error: singly(error),
            error2: singly(error2),
            known: *parts.known,
            contraction: *parts.contraction,
        };
        if self.scratch.len() < step.scratch {
            self.scratch.resize(step.scratch, 0.0);
        }
        let sys = Fixed::<NZ, NX> {
            step,
            params,
            scratch: self.scratch.as_mut_ptr(),
        };
        let done = newton::advance(
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
                newton: &mut newton,
            },
        );
        if let Err(e) = done {
            return Outcome::Failed(Box::new(e));
        }
        settle(&newton.guess.into(), guess);
        settle(&newton.error.into(), error);
        settle(&newton.error2.into(), error2);
        *parts.known = newton.known;
        *parts.contraction = newton.contraction;
        Outcome::Stepped
    }

    fn boxed(&self) -> Box<dyn FixedDriver> {
        Box::new(Driver::<NZ, NX> {
            work: self.work.clone(),
            scratch: Vec::new(),
        })
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
