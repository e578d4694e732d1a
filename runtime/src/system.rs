//! The trait generated steps implement, the state they advance, and the
//! stepper that drives them with Newton's method.

use nalgebra::{SMatrix, SVector};

use crate::error::StepError;
use crate::lu::Lu;
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

/// One implicit step `R(x; z) = 0`, `z' = z + U(x; z)`, as generated from a model.
/// `NZ` is the size of the state, `NX` the number of unknowns.
pub trait StepSystem<const NZ: usize, const NX: usize> {
    /// Scheme label, e.g. `hamel(averaged)`.
    const SCHEME: &'static str;
    /// `R(x; z)`.
    fn residual(&self, h: f64, z: &SVector<f64, NZ>, x: &SVector<f64, NX>) -> SVector<f64, NX>;
    /// `∂R/∂x`, analytic.
    fn jacobian(&self, h: f64, z: &SVector<f64, NZ>, x: &SVector<f64, NX>) -> SMatrix<f64, NX, NX>;
    /// The increment `z' − z = U(x; z)` once `R(x; z) = 0`.
    fn increment(&self, h: f64, z: &SVector<f64, NZ>, x: &SVector<f64, NX>) -> SVector<f64, NZ>;
    /// `(∂R/∂z, ∂U/∂z, ∂U/∂x)` at `(z, x)`, for [`Stepper::step_with_sensitivity`];
    /// `None` where the system does not provide them (generated systems always do).
    #[allow(clippy::type_complexity)]
    fn sensitivity_parts(
        &self,
        _h: f64,
        _z: &SVector<f64, NZ>,
        _x: &SVector<f64, NX>,
    ) -> Option<(SMatrix<f64, NX, NZ>, SMatrix<f64, NZ, NZ>, SMatrix<f64, NZ, NX>)> {
        None
    }
    /// The residual at the state `z + lo` evaluated in double-double arithmetic,
    /// for compensated runs; `None` where not generated (bodies too large).
    fn residual_compensated(
        &self,
        _h: f64,
        _z: &SVector<f64, NZ>,
        _lo: &SVector<f64, NZ>,
        _x: &SVector<f64, NX>,
    ) -> Option<SVector<f64, NX>> {
        None
    }
    /// The increment at the state `z + lo` in double-double arithmetic (see
    /// [`StepSystem::residual_compensated`]).
    fn increment_compensated(
        &self,
        _h: f64,
        _z: &SVector<f64, NZ>,
        _lo: &SVector<f64, NZ>,
        _x: &SVector<f64, NX>,
    ) -> Option<SVector<f64, NZ>> {
        None
    }
    /// Starting guess from the state and the previous step's solution.
    fn predict(&self, h: f64, z: &SVector<f64, NZ>, previous: &SVector<f64, NX>) -> SVector<f64, NX>;
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
    /// compensation term of `z` under compensated summation (`z + lo` is the
    /// state to about twice working precision); zero otherwise
    pub lo: SVector<f64, NZ>,
    /// the previous step's unknowns, used by the predictor
    pub warm: SVector<f64, NX>,
    /// number of steps taken
    pub step: u64,
}

/// Drives a [`StepSystem`] with a fixed step size.
pub struct Stepper<'a, S, const NZ: usize, const NX: usize> {
    system: &'a S,
    h: f64,
    /// Newton settings
    pub options: NewtonOptions,
    /// accumulated Newton statistics
    pub stats: NewtonStats,
    /// add increments to the state with compensated (TwoSum) summation
    pub compensated: bool,
}

impl<S, const NZ: usize, const NX: usize> std::fmt::Debug for Stepper<'_, S, NZ, NX> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stepper")
            .field("h", &self.h)
            .field("options", &self.options)
            .field("stats", &self.stats)
            .field("compensated", &self.compensated)
            .finish_non_exhaustive()
    }
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
            compensated: false,
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
    pub fn step_with_sensitivity(&mut self, state: &mut State<NZ, NX>) -> Result<SMatrix<f64, NZ, NZ>, StepError> {
        let before = *state;
        self.step(state)?;
        let x = state.warm;
        let Some((rz, uz, ux)) = self.system.sensitivity_parts(self.h, &before.z, &x) else {
            *state = before;
            return Err(StepError::InvalidInput(format!(
                "{} provides no step-map sensitivities",
                S::SCHEME
            )));
        };
        let before = before.z;
        let j = self.system.jacobian(self.h, &before, &x);
        let lu = Lu::factor(&j).map_err(|_| StepError::Singular {
            step: state.step - 1,
            iterations: 0,
            residual: self.system.residual(self.h, &before, &x).norm(),
        })?;
        // dx/dz = −J⁻¹ ∂R/∂z, column by column.
        let mut dxdz = SMatrix::<f64, NX, NZ>::zeros();
        for c in 0..NZ {
            let mut col: SVector<f64, NX> = -rz.column(c);
            lu.solve(&mut col);
            dxdz.set_column(c, &col);
        }
        Ok(SMatrix::<f64, NZ, NZ>::identity() + uz + ux * dxdz)
    }

    /// Advances `state` by one step. On error `state` is unchanged.
    pub fn step(&mut self, state: &mut State<NZ, NX>) -> Result<(), StepError> {
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
