//! The state a step advances, at any storage size.

use nalgebra::allocator::Allocator;
use nalgebra::{Const, DefaultAllocator, Dim, Dyn, OVector, U1};

use crate::memory::NewtonMemory;

/// A state of an integrator: the scheme's state `z`, its compensation term,
/// the last solution (warm start of the next Newton solve), the step count,
/// and what the last Newton solve tells the next.
/// Use [`State`] for derived integrators and [`DynState`] for models loaded at
/// run time.
#[derive(Debug, PartialEq)]
pub struct StateOf<Z: Dim, X: Dim>
where
    DefaultAllocator: Allocator<Z> + Allocator<X>,
{
    /// the scheme's state (its meaning depends on the scheme: see the model's docs)
    pub z: OVector<f64, Z>,
    /// compensation term of `z` under compensated summation (`z + lo` is the
    /// state to about twice working precision); zero otherwise
    pub lo: OVector<f64, Z>,
    /// the previous step's unknowns, used by the predictor
    pub warm: OVector<f64, X>,
    /// number of steps taken
    pub step: u64,
    /// the predictor's recent errors and Newton's contraction, which sharpen
    /// the next solve's first guess and choice of factorizations (a fresh
    /// state, `Default::default()` at fixed sizes, knows nothing yet); they
    /// change a step's result only within round-off
    pub newton: NewtonMemory<X>,
}

/// The state of a derived integrator, with `NZ` state components and `NX` unknowns.
pub type State<const NZ: usize, const NX: usize> = StateOf<Const<NZ>, Const<NX>>;

/// The state of an integrator whose sizes are known at run time.
pub type DynState = StateOf<Dyn, Dyn>;

impl<Z: Dim, X: Dim> StateOf<Z, X>
where
    DefaultAllocator: Allocator<Z> + Allocator<X>,
{
    /// The zero state of the given sizes at step 0.
    pub fn zeros(z: Z, x: X) -> Self {
        Self {
            z: OVector::zeros_generic(z, U1),
            lo: OVector::zeros_generic(z, U1),
            warm: OVector::zeros_generic(x, U1),
            step: 0,
            newton: NewtonMemory::new(x),
        }
    }
}

impl<Z: Dim, X: Dim> Clone for StateOf<Z, X>
where
    DefaultAllocator: Allocator<Z> + Allocator<X>,
{
    fn clone(&self) -> Self {
        Self {
            z: self.z.clone(),
            lo: self.lo.clone(),
            warm: self.warm.clone(),
            step: self.step,
            newton: self.newton.clone(),
        }
    }
}

impl<const NZ: usize, const NX: usize> Copy for State<NZ, NX> {}
