//! The stepper of derived integrators sized at run time, compiled once.
//!
//! A generic stepper (`StepperOf<S, …>`) is compiled again in every crate
//! that steps an `S`: its Newton iteration, banded LU, composition and
//! linearization were 11.6 of the 20 s rustc spent on a crate deriving the
//! 256-link director chain, whatever the chain's length (the derived
//! kernels themselves took 8.5 s). [`SharedStepper`] steps a system through
//! `dyn Kernels<Dyn, Dyn>`, and its methods are not generic: they are
//! compiled here, in this crate, once for every derived integrator sized at
//! run time. A kernel call through the vtable costs nanoseconds against
//! the microseconds a step of such a system takes.

use std::ops::{Deref, DerefMut};

use nalgebra::{DMatrix, Dyn};

use crate::{DynState, DynStepper, Kernels, Linearization, StepError};

/// A [`DynStepper`] over `dyn Kernels<Dyn, Dyn>`, whose methods are
/// compiled in `hamel-runtime` (see the module): the stepper of every
/// derived integrator whose sizes are known at run time only. It reads as
/// the [`DynStepper`] it holds (`options`, `stats`, `h()`, …).
pub struct SharedStepper<'a>(DynStepper<'a, dyn Kernels<Dyn, Dyn> + 'a>);

impl<'a> SharedStepper<'a> {
    /// A stepper of `system` with step size `h` (finite, non-zero; negative
    /// runs backwards), as [`DynStepper::new`].
    pub fn new(system: &'a dyn Kernels<Dyn, Dyn>, h: f64) -> Result<Self, StepError> {
        DynStepper::new(system, h).map(Self)
    }

    /// Advances `state` by one step. On error `state` is unchanged.
    pub fn step(&mut self, state: &mut DynState) -> Result<(), StepError> {
        self.0.step(state)
    }

    /// Sets the inputs and advances `state` by one step.
    pub fn step_with_inputs(&mut self, state: &mut DynState, u: &[f64]) -> Result<(), StepError> {
        self.0.step_with_inputs(state, u)
    }

    /// Advances `state` by one step and returns the step-map sensitivity
    /// `∂z_{k+1}/∂z_k`.
    pub fn step_with_sensitivity(&mut self, state: &mut DynState) -> Result<DMatrix<f64>, StepError> {
        self.0.step_with_sensitivity(state)
    }

    /// Advances `state` by one step and returns the step map's linearization
    /// `(A, B)` (see [`DynStepper::step_linearized`]).
    pub fn step_linearized(
        &mut self,
        state: &mut DynState,
        with_inputs: bool,
    ) -> Result<Linearization<Dyn>, StepError> {
        self.0.step_linearized(state, with_inputs)
    }

    /// Sets the control inputs the next steps use.
    pub fn set_inputs(&mut self, u: &[f64]) -> Result<(), StepError> {
        self.0.set_inputs(u)
    }

    /// With or without compensated (TwoSum) summation of the increments.
    pub fn with_compensation(self, on: bool) -> Self {
        Self(self.0.with_compensation(on))
    }

    /// With or without the compiled sparse LU (see [`DynStepper::with_compiled_lu`]).
    pub fn with_compiled_lu(self, on: bool) -> Self {
        Self(self.0.with_compiled_lu(on))
    }

    /// With or without fixed-size drivers (see [`DynStepper::with_fixed_sizes`]).
    pub fn with_fixed_sizes(self, on: bool) -> Self {
        Self(self.0.with_fixed_sizes(on))
    }

    /// The generic stepper it holds.
    pub fn into_inner(self) -> DynStepper<'a, dyn Kernels<Dyn, Dyn> + 'a> {
        self.0
    }
}

impl<'a> Deref for SharedStepper<'a> {
    type Target = DynStepper<'a, dyn Kernels<Dyn, Dyn> + 'a>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for SharedStepper<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl std::fmt::Debug for SharedStepper<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
