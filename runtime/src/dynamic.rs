//! Steps whose sizes are known only at run time (the tape back-end that tools
//! use to run model files without compiling Rust). Same Newton driver, LU and
//! update as [`Stepper`](crate::Stepper): only the vector storage differs.

use nalgebra::{DVector, Dyn};

use crate::error::StepError;
use crate::newton::{self, NewtonOptions, NewtonStats, StepEquations};
use crate::system::InvariantKind;

/// A step system with run-time sizes.
pub trait DynStepSystem: StepEquations<Dyn, Dyn> {
    /// Scheme label, e.g. `hamel(averaged)`.
    fn scheme(&self) -> &str;
    /// Size of the state `z`.
    fn state_len(&self) -> usize;
    /// Number of unknowns `x`.
    fn unknowns_len(&self) -> usize;
    /// Names and kinds of the monitored quantities.
    fn invariant_info(&self) -> Vec<(String, InvariantKind)>;
    /// Evaluates the monitored quantities on the physical state of `z` into `out`.
    fn invariants_into(&self, z: &DVector<f64>, out: &mut [f64]) -> Result<(), String>;
}

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

/// Drives a [`DynStepSystem`] with a fixed step size.
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

impl<'a, S: DynStepSystem + ?Sized> DynStepper<'a, S> {
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
