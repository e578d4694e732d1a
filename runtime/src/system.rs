//! The stepper that drives any [`Kernels`] with Newton's method, and the
//! fixed-size name under which derived integrators are known.

use nalgebra::{Const, DefaultAllocator, Dim, Dyn, OMatrix};

use crate::error::StepError;
use crate::kernels::{Alloc, Kernels};
use crate::lu::Lu;
use crate::newton::{self, NewtonOptions, NewtonStats, Workspace};
use crate::state::StateOf;

/// A derived integrator with `NZ` state components and `NX` unknowns: any
/// [`Kernels`] of fixed sizes. Every `#[derive(Integrator)]` struct is one.
pub trait StepSystem<const NZ: usize, const NX: usize>: Kernels<Const<NZ>, Const<NX>> {}

impl<T: Kernels<Const<NZ>, Const<NX>> + ?Sized, const NZ: usize, const NX: usize> StepSystem<NZ, NX> for T {}

/// Drives a [`Kernels`] with a fixed step size. Use [`Stepper`] for derived
/// integrators and [`DynStepper`] for models loaded at run time.
pub struct StepperOf<'a, S: ?Sized, Z: Dim, X: Dim>
where
    DefaultAllocator: Alloc<Z, X>,
{
    system: &'a S,
    h: f64,
    /// Newton settings
    pub options: NewtonOptions,
    /// accumulated Newton statistics
    pub stats: NewtonStats,
    /// add increments to the state with compensated (TwoSum) summation
    pub compensated: bool,
    work: Workspace<Z, X>,
}

/// The stepper of a derived integrator.
pub type Stepper<'a, S, const NZ: usize, const NX: usize> = StepperOf<'a, S, Const<NZ>, Const<NX>>;

/// The stepper of an integrator whose sizes are known at run time.
pub type DynStepper<'a, S> = StepperOf<'a, S, Dyn, Dyn>;

impl<S: ?Sized, Z: Dim, X: Dim> std::fmt::Debug for StepperOf<'_, S, Z, X>
where
    DefaultAllocator: Alloc<Z, X>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stepper")
            .field("h", &self.h)
            .field("options", &self.options)
            .field("stats", &self.stats)
            .field("compensated", &self.compensated)
            .finish_non_exhaustive()
    }
}

impl<'a, S: Kernels<Z, X> + ?Sized, Z: Dim, X: Dim> StepperOf<'a, S, Z, X>
where
    DefaultAllocator: Alloc<Z, X>,
{
    /// A stepper with step size `h` (finite, non-zero; negative runs backwards).
    pub fn new(system: &'a S, h: f64) -> Result<Self, StepError> {
        if !h.is_finite() || h == 0.0 {
            return Err(StepError::BadStepSize(h));
        }
        let (z, x) = system.dims();
        Ok(Self {
            system,
            h,
            options: NewtonOptions::default(),
            stats: NewtonStats::default(),
            compensated: false,
            work: Workspace::new(z, x),
        })
    }

    /// The same stepper with compensated summation of the increments switched on or off.
    pub fn with_compensation(mut self, on: bool) -> Self {
        self.compensated = on;
        self
    }

    /// The system being stepped.
    pub fn system(&self) -> &'a S {
        self.system
    }

    /// The step size.
    pub fn h(&self) -> f64 {
        self.h
    }

    /// Advances `state` by one step and returns the step-map sensitivity
    /// `∂z_{k+1}/∂z_k` (implicit function theorem on the solved residual).
    pub fn step_with_sensitivity(&mut self, state: &mut StateOf<Z, X>) -> Result<OMatrix<f64, Z, Z>, StepError> {
        let before = state.clone();
        self.step(state)?;
        let x = &state.warm;
        let Some((rz, uz, ux)) = self.system.sensitivity_parts(self.h, &before.z, x) else {
            let scheme = self.system.scheme().to_string();
            *state = before;
            return Err(StepError::InvalidInput(format!(
                "{scheme} provides no step-map sensitivities"
            )));
        };
        let (zd, xd) = self.system.dims();
        let mut j = OMatrix::<f64, X, X>::zeros_generic(xd, xd);
        self.system.jacobian(self.h, &before.z, x, &mut j);
        let lu = Lu::factor(&j).map_err(|_| {
            let mut r = nalgebra::OVector::<f64, X>::zeros_generic(xd, nalgebra::U1);
            self.system.residual(self.h, &before.z, x, &mut r);
            StepError::Singular {
                step: state.step - 1,
                iterations: 0,
                residual: r.norm(),
            }
        })?;
        // dx/dz = −J⁻¹ ∂R/∂z, column by column.
        let mut dxdz = OMatrix::<f64, X, Z>::zeros_generic(xd, zd);
        for c in 0..zd.value() {
            let mut col = -rz.column(c);
            lu.solve(&mut col);
            dxdz.set_column(c, &col);
        }
        Ok(OMatrix::<f64, Z, Z>::identity_generic(zd, zd) + uz + ux * dxdz)
    }

    /// Advances `state` by one step. On error `state` is unchanged.
    pub fn step(&mut self, state: &mut StateOf<Z, X>) -> Result<(), StepError> {
        newton::advance(
            self.system,
            self.h,
            &self.options,
            self.compensated,
            &mut self.stats,
            &mut self.work,
            newton::StepParts {
                z: &mut state.z,
                lo: &mut state.lo,
                warm: &mut state.warm,
                step: &mut state.step,
            },
        )
    }
}
