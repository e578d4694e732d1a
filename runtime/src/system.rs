//! The trait generated steps implement, the state they advance, and the
//! stepper that drives them with Newton's method.

use nalgebra::{SMatrix, SVector};

use crate::error::StepError;
use crate::newton::{self, NewtonOptions, NewtonStats};

/// What an invariant measures, and so how its error is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvariantKind {
    /// energy: relative deviation from the initial value
    Energy,
    /// a monitored quantity (momentum, length, ...): deviation from the initial value
    Monitored,
    /// a constraint residual: its absolute value
    Constraint,
}

/// One implicit step `R(x; z) = 0`, `z' = U(x; z)`, as generated from a model.
/// `NZ` is the size of the state, `NX` the number of unknowns.
pub trait StepSystem<const NZ: usize, const NX: usize> {
    /// Scheme label, e.g. `hamel(averaged)`.
    const SCHEME: &'static str;
    /// `R(x; z)`.
    fn residual(&self, h: f64, z: &SVector<f64, NZ>, x: &SVector<f64, NX>) -> SVector<f64, NX>;
    /// `∂R/∂x`, analytic.
    fn jacobian(&self, h: f64, z: &SVector<f64, NZ>, x: &SVector<f64, NX>) -> SMatrix<f64, NX, NX>;
    /// `z' = U(x; z)` once `R(x; z) = 0`.
    fn update(&self, h: f64, z: &SVector<f64, NZ>, x: &SVector<f64, NX>) -> SVector<f64, NZ>;
    /// Starting guess from the state and the previous step's solution.
    fn predict(
        &self,
        h: f64,
        z: &SVector<f64, NZ>,
        previous: &SVector<f64, NX>,
    ) -> SVector<f64, NX>;
    /// Names and kinds of the monitored quantities.
    fn invariant_info(&self) -> &'static [(&'static str, InvariantKind)];
    /// Evaluates the monitored quantities on the physical state of `z` into `out`.
    fn invariants_into(&self, z: &SVector<f64, NZ>, out: &mut [f64]) -> Result<(), String>;
}

/// A state of a generated integrator: the scheme's state `z`, the last
/// solution (warm start of the next Newton solve) and the step count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct State<const NZ: usize, const NX: usize> {
    /// the scheme's state (its meaning depends on the scheme: see the model's docs)
    pub z: SVector<f64, NZ>,
    /// the previous step's unknowns, used by the predictor
    pub warm: SVector<f64, NX>,
    /// number of steps taken
    pub step: u64,
}

/// Drives a [`StepSystem`] with a fixed step size.
#[derive(Debug)]
pub struct Stepper<'a, S, const NZ: usize, const NX: usize> {
    system: &'a S,
    h: f64,
    /// Newton settings
    pub options: NewtonOptions,
    /// accumulated Newton statistics
    pub stats: NewtonStats,
}

impl<'a, S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize> Stepper<'a, S, NZ, NX> {
    /// A stepper with step size `h` (finite, non-zero; negative runs backwards).
    pub fn new(system: &'a S, h: f64) -> Result<Self, StepError> {
        if !h.is_finite() || h == 0.0 {
            return Err(StepError::BadStepSize(h));
        }
        Ok(Self {
            system,
            h,
            options: NewtonOptions::default(),
            stats: NewtonStats::default(),
        })
    }

    /// The step size.
    pub fn h(&self) -> f64 {
        self.h
    }

    /// Advances `state` by one step. On error `state` is unchanged.
    pub fn step(&mut self, state: &mut State<NZ, NX>) -> Result<(), StepError> {
        let (x, iters) = newton::solve(
            self.system,
            self.h,
            &state.z,
            &state.warm,
            state.step,
            &self.options,
        )?;
        let z = self.system.update(self.h, &state.z, &x);
        if z.iter().any(|v| !v.is_finite()) {
            return Err(StepError::NonFinite {
                step: state.step,
                iterations: iters,
                residual: f64::NAN,
            });
        }
        self.stats.record(iters);
        state.z = z;
        state.warm = x;
        state.step += 1;
        Ok(())
    }
}
