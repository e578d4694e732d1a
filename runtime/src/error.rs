//! Errors of a step or of an observation.

/// Why a step (or the evaluation of a state) failed. The state passed to the
/// step is left untouched, so the caller may retry with a smaller step size.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StepError {
    /// Newton hit its iteration bound.
    #[error("step {step}: Newton did not converge in {iterations} iterations (residual norm {residual:.3e})")]
    NotConverged {
        /// index of the failed step (0 = first)
        step: u64,
        /// iterations done
        iterations: usize,
        /// ‖R(x)‖ at the last iterate
        residual: f64,
    },
    /// The Newton matrix is singular to working precision.
    #[error("step {step}: singular Newton matrix at iteration {iterations} (residual norm {residual:.3e}): the step equations have no regular solution near this iterate; if the step size is large for the motion, reduce it; otherwise the state is near a singularity of the model's coordinates (`hamel check` tests the initial states)")]
    Singular {
        /// index of the failed step
        step: u64,
        /// iteration at which the matrix was singular
        iterations: usize,
        /// ‖R(x)‖ there
        residual: f64,
    },
    /// A residual, Jacobian or update produced NaN or infinity.
    #[error("step {step}: non-finite value at iteration {iterations} (residual norm {residual:.3e})")]
    NonFinite {
        /// index of the failed step
        step: u64,
        /// iteration at which it happened
        iterations: usize,
        /// ‖R(x)‖ there (may itself be non-finite)
        residual: f64,
    },
    /// The step size is zero, negative zero, NaN or infinite.
    #[error("invalid step size h = {0}: it must be finite and non-zero")]
    BadStepSize(f64),
    /// Input that cannot be run (unknown initial state, non-finite data, ...).
    #[error("{0}")]
    InvalidInput(String),
    /// The physical state could not be recovered from the scheme's state
    /// (singular mass matrix, non-finite values).
    #[error("cannot evaluate the physical state at step {step}: {reason}")]
    Observation {
        /// step index of the state
        step: u64,
        /// what went wrong
        reason: String,
    },
}
