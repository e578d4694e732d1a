//! Compiled sparse factorizations: what a host with a code generator (the
//! JIT) lends the LU of a stepper, so that a factorization whose pivots
//! have settled runs as straight-line code instead of a replay.
//!
//! The runtime hands the steps its replay takes ([`LuPlan`]) to a
//! [`LuCompiler`] once the same steps have served long enough to pay for
//! compiling them, and uses the [`CompiledLu`] while the pivots stay: the
//! compiled code checks each pivot as the replay does and stops before the
//! first one that would move, where the replay takes over. Its results are
//! the replay's to the bit.

use std::fmt::Debug;
use std::sync::Arc;

pub use hamel_kernel::{LuPlan, LuStep};

/// Compiles factorization plans.
pub trait LuCompiler: Send + Sync + Debug {
    /// Native code for `plan`, or `None` (the replay goes on).
    fn compile(&self, plan: &LuPlan) -> Option<Arc<dyn CompiledLu>>;
}

/// A compiled [`LuPlan`]. Its functions may be entered at any step, the
/// steps before having been the plan's (or, for a solve, another code's
/// or the replay's with the same factors).
pub trait CompiledLu: Send + Sync + Debug {
    /// Takes the plan's steps `from .. limit` on the packed band `ab` as far
    /// as their pivot checks allow (`tiny`, `keep`: see
    /// [`hamel_kernel::lu_plan`]): returns the step it stopped before. Each
    /// step taken applies its part of the forward substitution to `v`, where
    /// given, as well (as [`CompiledLu::forward`] would after it), steps it
    /// hands to a reference included: where the steps before `from` were
    /// applied to `v`, it is then the forward substitution through the
    /// step returned.
    fn factor(&self, ab: &mut [f64], v: Option<&mut [f64]>, from: usize, limit: usize, tiny: f64, keep: f64) -> usize;
    /// The forward substitution of `v` through the plan's steps `from ..
    /// upto`, with the factors they left in `ab`; `false` if nothing was
    /// done.
    fn forward(&self, ab: &[f64], v: &mut [f64], from: usize, upto: usize) -> bool;
    /// The backward substitution of rows `upto − 1` down to `from`; `false`
    /// if nothing was done.
    fn backward(&self, ab: &[f64], v: &mut [f64], from: usize, upto: usize) -> bool;
}
