//! Steps whose sizes are known only at run time (the tape back-end that tools
//! use to run model files without compiling Rust). Same Newton driver, LU and
//! update as [`Stepper`](crate::Stepper): only the vector storage differs.

use nalgebra::{DVector, Dyn};

use crate::error::StepError;
use crate::newton::{self, NewtonOptions, NewtonStats, StepEquations};

/// A state of a run-time-sized integrator (see [`State`](crate::State)).
#[derive(Clone, Debug, PartialEq)]
pub struct DynState {
    /// the scheme's state
    pub z: DVector<f64>,
    /// compensation term of `z` (zero unless compensated)
    pub lo: DVector<f64>,
    /// the previous step's unknowns
    pub warm: DVector<f64>,
    /// number of steps taken
    pub step: u64,
}

/// Drives step equations of run-time sizes with a fixed step size.
pub struct DynStepper<'a, S: ?Sized> {
    system: &'a S,
    h: f64,
    /// Newton settings
    pub options: NewtonOptions,
    /// accumulated Newton statistics
    pub stats: NewtonStats,
    /// add increments with compensated (TwoSum) summation
    pub compensated: bool,
}

impl<'a, S: StepEquations<Dyn, Dyn> + ?Sized> DynStepper<'a, S> {
    /// A stepper with step size `h` (finite, non-zero).
    pub fn new(system: &'a S, h: f64) -> Result<Self, StepError> {
        if !h.is_finite() || h == 0.0 {
            return Err(StepError::BadStepSize(h));
        }
        Ok(Self {
            system,
            h,
            options: NewtonOptions::default(),
            stats: NewtonStats::default(),
            compensated: false,
        })
    }

    /// The same stepper with compensated summation switched on or off.
    pub fn with_compensation(mut self, on: bool) -> Self {
        self.compensated = on;
        self
    }

    /// The step size.
    pub fn h(&self) -> f64 {
        self.h
    }

    /// Advances `state` by one step. On error `state` is unchanged.
    pub fn step(&mut self, state: &mut DynState) -> Result<(), StepError> {
        newton::advance(
            self.system,
            self.h,
            &self.options,
            self.compensated,
            &mut self.stats,
            newton::StepState {
                z: &mut state.z,
                lo: &mut state.lo,
                warm: &mut state.warm,
                step: &mut state.step,
            },
        )
    }
}
